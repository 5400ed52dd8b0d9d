"""JUnit XML: reading a report the submission's commands wrote (:mod:`.parser`, through
:mod:`.file`, which opens it safely) into records (:mod:`.reader`), and naming its cases as
test ids (:mod:`.testids`)."""

from repogym.errors import JUnitError
from repogym.junit.parser import iter_cases
from repogym.junit.records import LIMITS, MAX_MESSAGE, Case, Limits, Outcome

__all__ = ["LIMITS", "MAX_MESSAGE", "Case", "JUnitError", "Limits", "Outcome", "iter_cases"]
