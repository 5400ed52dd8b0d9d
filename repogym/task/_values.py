"""Checks of single values of a task file, shared by the models of :mod:`repogym.task`.

Each raises ``ValueError`` with a message that says what is allowed; the loader turns it
into one line naming the file, the line, the key and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator

from repogym.tree.globs import compile_globs

TASK_MAX_TIMEOUT = 86_400  # seconds, one day: the longest `timeout` a task may set


def _number(rule: str, ok: Callable[[float], bool]) -> BeforeValidator:
    """A number must be finite and pass ``ok``, or the key "must be {rule}"."""

    def check(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer of more than 308 digits
                number = math.inf
            if not (math.isfinite(number) and ok(number)):
                raise ValueError(f"must be {rule}")
        return value  # anything else is left to the type check

    return BeforeValidator(check)


Seconds = Annotated[
    float,
    _number(
        f"a number of seconds greater than 0 and at most {TASK_MAX_TIMEOUT} (one day)",
        lambda seconds: 0 < seconds <= TASK_MAX_TIMEOUT,
    ),
]
NoiseFloor = Annotated[float, _number("a finite number, at least 1", lambda x: x >= 1)]
Speedup = Annotated[float, _number("a finite number greater than 1, e.g. `2.5`", lambda x: x > 1)]
Weight = Annotated[
    float,
    _number(
        "a finite number greater than 0; remove the grader's section to stop grading it",
        lambda weight: weight > 0,
    ),
]
Fraction = Annotated[float, _number("a number from 0 to 1", lambda x: 0 <= x <= 1)]


def check_relative(value: str, what: str) -> str:
    parts = value.split("/")
    if not value or value.startswith("/") or "\\" in value or {"..", ".", ""} & set(parts):
        raise ValueError(
            f"{what} {value!r} must be a relative POSIX path from the repository root, "
            "without `./`, `..`, `\\`, `//` or a leading `/`"
        )
    return value


def check_globs(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    for glob in values or ():
        # `!` negates and a trailing `/` means "a directory": both gitignore syntax.
        if glob.lstrip("!"):
            check_relative(glob.lstrip("!").removesuffix("/"), "glob")
    compile_globs(values or ())
    return values


def check_regexes(values: tuple[str, ...] | None) -> tuple[str, ...] | None:
    for pattern in values or ():
        try:
            re.compile(pattern, re.MULTILINE)
        except re.error as error:
            raise ValueError(
                f"regex {pattern!r} does not compile: {error}; escape special characters "
                "with a backslash (quote the YAML string with single quotes)"
            ) from None
    return values


def check_grader_reference(grader: str) -> str:
    """A custom grader is ``module:Class``, every part a Python identifier."""
    module, colon, name = grader.partition(":")
    if not colon or not all(part.isidentifier() for part in [*module.split("."), name]):
        raise ValueError(
            "a custom grader is `module:Class`, e.g. `tools.graders:NoTodoGrader`: a dotted "
            "module path, a colon and a class name, each name of letters, digits and `_`, "
            "not starting with a digit"
        )
    return grader
