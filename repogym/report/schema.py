"""The report's schema: the keys of docs/report.md that the templates, the check run and the
outputs read, declared once, as pydantic models with their types and bounds, and exported
as docs/report.schema.json (``python -m repogym.report.schema``; a test keeps the two equal).

A report read back may be forged (one uploaded for ``mode: publish``: README, "Pull requests
from forks"), so it is checked strictly, with no conversion: a score is a finite JSON number
in [0, 1] (not a string, not ``true``, not ``NaN``), ``passed`` is ``true`` or ``false``,
every component and finding has its keys with values of the right kinds, every string is
bounded, and the summary and the error message, which the log and the check run's title
show, are one line. A report that is not an error report has its score, verdict, summary and
components. Keys the schema does not name pass as they are (a report may gain keys within a
version), bounded by the size of the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError, core_schema

from repogym.errors import UsageError
from repogym.models import Level, Role
from repogym.shown import show_undecodable

__all__ = [
    "BUILT",
    "GRADE_KEYS",
    "LINE_BREAKING",
    "MAX_NAME",
    "MAX_PATH",
    "MAX_PROBLEMS",
    "MAX_TEXT",
    "REPORT_VERSION",
    "Base",
    "Commit",
    "Component",
    "Error",
    "ErrorKind",
    "Finding",
    "LineNumber",
    "Name",
    "OneLine",
    "PathText",
    "Report",
    "Score",
    "Task",
    "Text",
    "Tool",
    "Weight",
    "problems",
    "shown",
    "template_view",
]

# Version 2 (issue 8): `base.sha` is the base's own sha, the merge base is `merge_base`
# (version 1 had the merge base in `base.sha`), components carry `findings`, and an
# `error` report stands for a grade that could not finish.
REPORT_VERSION = 2
# Whose error stopped a grade: the user's to fix (usage, task, environment) or ours.
ErrorKind = Literal["usage", "task", "environment", "internal"]

MAX_NAME = 1024  # characters of a name, a ref, a sha, a kind
MAX_PATH = 4096  # characters of a path
MAX_TEXT = 64 * 1024  # characters of a message, a title, the summary
MAX_PROBLEMS = 10  # lines of problems shown; the rest are counted

# What a one-line string may not hold: line breaks and control characters.
LINE_BREAKING = "\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029"
_ONE_LINE = f"^[^{LINE_BREAKING}]*$"


@dataclass(frozen=True, slots=True)
class _Bounded:
    """A string's bounds, checked in Python rather than by pydantic's own constraints,
    which refuse any string that holds a lone surrogate: the undecodable bytes of a file
    name, which the report being built keeps as they are (JSON's ``\\udcff``) so that the
    name reads back as it was; a report read back is refused them, as pydantic would. The
    errors and the JSON schema are those of pydantic's constraints."""

    max_length: int
    one_line: bool = False
    min_length: int = 0

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        json_schema: dict[str, Any] = {"maxLength": self.max_length}
        if self.min_length:
            json_schema["minLength"] = self.min_length
        if self.one_line:
            json_schema["pattern"] = _ONE_LINE
        json_schema["type"] = "string"
        return json_schema

    def check(self, value: str, info: core_schema.ValidationInfo) -> str:
        # A report read back is text from elsewhere: a lone surrogate is no Unicode, and
        # GitHub would refuse it. Only the report being built (BUILT) keeps them.
        if not (info.context or {}).get(BUILT) and _SURROGATE.search(value):
            raise PydanticCustomError(
                "string_unicode",
                "Input should be a valid string, unable to parse raw data as a unicode string",
            )
        if len(value) > self.max_length:
            raise PydanticCustomError(
                "string_too_long",
                "String should have at most {max_length} character{expected_plural}",
                {"max_length": self.max_length, "expected_plural": _plural(self.max_length)},
            )
        if len(value) < self.min_length:
            raise PydanticCustomError(
                "string_too_short",
                "String should have at least {min_length} character{expected_plural}",
                {"min_length": self.min_length, "expected_plural": _plural(self.min_length)},
            )
        if self.one_line and _ONE_LINE_TEXT.fullmatch(value) is None:
            raise PydanticCustomError(
                "string_pattern_mismatch",
                "String should match pattern '{pattern}'",
                {"pattern": _ONE_LINE},
            )
        return value


_SURROGATE = re.compile("[\ud800-\udfff]")
# The validation context of a report being built from a grade (repogym.report.build).
BUILT = "built from a grade"


def _plural(count: int) -> str:
    return "" if count == 1 else "s"


_ONE_LINE_TEXT = re.compile(f"[^{LINE_BREAKING}]*")
Name = Annotated[str, _Bounded(MAX_NAME, one_line=True)]
PathText = Annotated[str, _Bounded(MAX_PATH)]
Text = Annotated[str, _Bounded(MAX_TEXT)]
OneLine = Annotated[str, _Bounded(MAX_TEXT, one_line=True)]
Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
LineNumber = Annotated[int, Field(ge=1)]


class _Model(BaseModel):
    """Keys not declared are kept (a report may gain keys within a version), and a null
    where the schema has a default other than null is that default: a template reads
    ``component.messages`` as a list whether the report wrote ``[]``, ``null`` or nothing."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_the_default(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None
            or key not in fields
            or fields[key].is_required()
            or fields[key].get_default(call_default_factory=True) is None
        }


class Tool(_Model):
    name: Name = "repogym"
    version: Name | None = None


class Commit(_Model):
    sha: Name | None = None


class Base(_Model):
    ref: Name | None = None
    sha: Name | None = None


class Task(_Model):
    source: PathText | None = None
    sha256: Name | None = None
    type: Name | None = None
    hidden_tests: Name | None = None  # "task", "outside" or null
    config: dict[str, Any] | None = None


class Error(_Model):
    kind: ErrorKind
    message: OneLine
    log_tail: Text | None = None  # the log the error quotes: a Dockerfile's build (issue 20)


class Finding(_Model):
    path: PathText | None = None
    line: LineNumber | None = None
    title: Text = ""
    message: Text
    level: Level = "failure"


class Component(_Model):
    name: Annotated[str, _Bounded(MAX_NAME, one_line=True, min_length=1)]
    role: Annotated[Role, Field(strict=False)]  # its value: "objective" or "gate"
    score: Score
    passed: bool
    weight: Weight = 0.0
    details: dict[str, Any] = Field(default_factory=dict)
    messages: list[Text] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)


class Report(_Model):
    version: Literal[REPORT_VERSION] = REPORT_VERSION  # type: ignore[valid-type]
    tool: Tool = Field(default_factory=Tool)
    error: Error | None = None  # only in the report of a grade that could not finish
    score: Score | None = None
    passed: bool | None = None
    summary: OneLine | None = None
    components: list[Component] = Field(default_factory=list)
    files_changed: list[PathText] = Field(default_factory=list)
    base: Base = Field(default_factory=Base)
    merge_base: Commit = Field(default_factory=Commit)
    head: Commit = Field(default_factory=Commit)
    task: Task = Field(default_factory=Task)
    environment: dict[str, Any] | None = None  # the image the commands ran in (issue 20)


# What a report that is not an error report must have.
GRADE_KEYS = ("score", "passed", "summary", "components")


def problems(report: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``report`` by the schema, one line per problem naming the key
    (``components[0].score``), at most :data:`MAX_PROBLEMS` lines and one counting the
    rest; empty when it is a valid report."""
    found: list[str] = []
    try:
        checked = Report.model_validate(report)
    except ValidationError as error:
        found = [_describe(item) for item in error.errors(include_url=False)]
    else:
        if checked.error is None:
            found = [
                f"`{key}` is missing: only an error report (one with `error`) goes without it"
                for key in GRADE_KEYS
                if report.get(key) is None
            ]
    if len(found) > MAX_PROBLEMS:
        rest = len(found) - MAX_PROBLEMS + 1
        found = [*found[: MAX_PROBLEMS - 1], f"and {rest} more problems"]
    return found


def template_view(report: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` as the templates read it: every key of the schema there, its default
    where the report lacks it (a report of a grade that could not finish has no score and
    no components, and may have no commits), the keys it does not declare as they are.

    Raises:
        UsageError: the report does not fit the schema; one line, naming the first key
            that does not (all of them: :func:`problems`).
    """
    try:
        checked = Report.model_validate(_as_json(report))
    except ValidationError as error:
        first = _describe(error.errors(include_url=False)[0])
        raise UsageError(f"report: {first} (docs/report.schema.json)") from None
    return checked.model_dump(mode="json")


def _as_json(value: Any) -> Any:
    """``value`` as its JSON file has it (repogym.report.build.to_json): tuples as lists, what
    JSON has no value for as its ``str()`` (a custom grader's details), and the lone
    surrogates that stand for a file name's undecodable bytes as the text ``\\xff``, as
    the templates' filters show them (a string of the schema is text)."""
    if isinstance(value, str):
        return show_undecodable(value)
    if isinstance(value, Mapping):
        return {show_undecodable(str(key)): _as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _as_json(str(value))


def _describe(item: ErrorDetails) -> str:
    key = _key(item["loc"])
    kind = item["type"]
    value = item.get("input")
    if kind == "missing":
        return f"`{key}` is missing"
    if kind == "string_too_long":
        limit = (item.get("ctx") or {}).get("max_length")
        return f"`{key}` is a string of {len(value)} characters, over the {limit} it may have"
    if kind == "string_pattern_mismatch":
        return f"`{key}` is {shown(value)}: should be one line, without control characters"
    if item["loc"] and item["loc"][-1] == "score" and kind in _NUMBER_ERRORS:
        return f"`{key}` is {shown(value)}: should be a finite number in [0, 1]"
    message = _EXPECTED.get(kind, item["msg"])
    if message.startswith("Input should"):
        message = "should" + message.removeprefix("Input should")
    return f"`{key}` is {shown(value)}: {message}" if key else message


_EXPECTED = {
    "dict_type": "should be an object",
    "model_type": "should be an object",
    "list_type": "should be a list",
    "bool_type": "should be true or false",
    "string_type": "should be a string",
    "int_type": "should be a whole number",
    "float_type": "should be a number",
}
_NUMBER_ERRORS = ("float_type", "finite_number", "greater_than_equal", "less_than_equal")


def _key(loc: tuple[int | str, ...]) -> str:
    """``components[0].findings[2].title`` for ``('components', 0, 'findings', 2, 'title')``;
    a key that is not plain printable text is shown as a Python string."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = part if part.isprintable() and "`" not in part else repr(part)
            text += f".{name}" if text else name
    return text


def shown(value: object) -> str:
    """``value`` in one short line: JSON's names for None and the booleans."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


if __name__ == "__main__":
    print(json.dumps(Report.model_json_schema(), indent=2))
