from collections.abc import Callable

from repogym.junit import Case, FirstLine, Outcome

class ParseError(Exception): ...

class Reader:
    def __init__(
        self,
        case_type: type[Case],
        outcomes: tuple[Outcome, Outcome, Outcome, Outcome],
        first_line: type[FirstLine],
        attribute_message: Callable[[str], str | None],
    ) -> None: ...
    def feed(self, chunk: bytes, final: bool, /) -> list[Case]: ...
