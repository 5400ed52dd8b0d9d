"""``tests:`` of a task file: the command that runs the tests, the ids that must pass, and
what a failing test is run again for (issue 47)."""

from __future__ import annotations

import datetime
from fnmatch import fnmatchcase
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from repogym.junit.testids import escape_controls, file_of
from repogym.task._errors import UNION_TAGS
from repogym.task._values import Seconds, check_globs, check_relative

# YAML gives lists; the model keeps immutable tuples, and stays strict about the items.
StrList = Annotated[tuple[str, ...], Strict(False)]
# The keywords that stand for a list of ids (issue 22). A string is the keyword, anything
# else the list: one member is validated, so an error is the list's or the keyword's.


def _ids_or_keyword(value: Any) -> str:
    return UNION_TAGS[1] if isinstance(value, str) else UNION_TAGS[0]


_Picked = Discriminator(_ids_or_keyword)
_KEYWORDS = {"fail_to_pass": "added", "pass_to_pass": "baseline"}
_KEYWORD_MEANINGS = {
    "added": "the tests the pull request adds, which must fail without its change",
    "baseline": "every test that passes at the base must still pass",
}
# Where test files live, when the task does not say (``tests.paths``): the conventions of
# pytest, unittest, Go, jest, mocha and node --test. What the submission changes there is
# the tests, not the code: run in their base version for the regressions, in its own for
# the tests it adds (issue 22).
DEFAULT_TEST_PATHS = (
    "test/",
    "tests/",
    "__tests__/",
    "test_*.py",
    "*_test.py",
    "*_test.go",
    "*.test.*",
    "*.spec.*",
)


def _check_test_id(test_id: str) -> str:
    """An id is a name, checked as a path only where it names a file (issue 8): real
    tests are called `/ matches root` or `C:\\x`."""
    if not test_id.strip():
        raise ValueError("a test id is empty; remove it or write the id")
    path = file_of(test_id)
    if path is not None:
        if escape_controls(path) != path:
            raise ValueError(
                f"the file of test id {test_id!r} holds a control character; "
                "write the file's path as it is in the repository"
            )
        check_relative(path, "the file of test id")
    return test_id


# Checked one by one, so that an error names the item's line, not the list's.
TestIds = Annotated[tuple[Annotated[str, AfterValidator(_check_test_id)], ...], Strict(False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class FlakyConfig(_Section):
    """``tests.flaky``: what a test that both passes and fails costs (issue 47). ``before``:
    one flaky at the base too (``ignore``: not a regression); ``made``: one the change made
    flaky (it passes at the base every run)."""

    before: Literal["ignore", "fail"] = "ignore"
    made: Literal["fail", "ignore"] = "fail"


class Quarantined(_Section):
    """One entry of ``tests.quarantine``: tests that run and are reported, never counted,
    until a date, and why."""

    id: str = Field(min_length=1)  # an id, or a glob of ids (`*`, `?`, `[...]`)
    reason: str = Field(min_length=1)
    until: Annotated[datetime.date, Strict(False)]


class TestsConfig(_Section):
    """``tests:``: the command that runs the tests and the ids that must pass."""

    command: str = Field(min_length=1)
    fail_to_pass: Annotated[
        Annotated[TestIds, Tag(UNION_TAGS[0])] | Annotated[Literal["added"], Tag(UNION_TAGS[1])],
        _Picked,
    ] = ()
    pass_to_pass: Annotated[
        Annotated[TestIds, Tag(UNION_TAGS[0])] | Annotated[Literal["baseline"], Tag(UNION_TAGS[1])],
        _Picked,
    ] = ()
    hidden: str | None = None
    restore: StrList = ()
    paths: StrList = DEFAULT_TEST_PATHS
    timeout: Seconds = 900
    partial_credit: bool = True
    require_all_pass_to_pass: bool = False
    # A failing test is run again, alone with the other failing ids, up to this many times
    # at the head, and at the base as many, until its class is decided (issue 47); 0: never.
    reruns: int = Field(default=2, ge=0, le=10)
    # How to run chosen ids where the runner cannot be told by the grader (pytest can):
    # `{ids}` is replaced by the ids, each quoted for the shell.
    rerun_command: str | None = None
    flaky: FlakyConfig = FlakyConfig()
    quarantine: Annotated[tuple[Quarantined, ...], Strict(False)] = ()

    @field_validator("command")
    @classmethod
    def _junit_placeholder(cls, command: str) -> str:
        if "{junit}" not in command:
            raise ValueError(
                "the command must contain {junit} where the runner writes its JUnit XML, "
                "e.g. `pytest --junitxml={junit}`"
            )
        return command

    @field_validator("rerun_command")
    @classmethod
    def _placeholders(cls, command: str | None) -> str | None:
        if command is not None and ("{ids}" not in command or "{junit}" not in command):
            raise ValueError(
                "the rerun command must contain {ids} where the ids to run go and {junit} "
                "where the runner writes its report, e.g. `go test -run {ids} ... > {junit}`"
            )
        return command

    @field_validator("fail_to_pass", "pass_to_pass", mode="before")
    @classmethod
    def _keyword(cls, value: Any, info: ValidationInfo) -> Any:
        """A string is the key's one keyword; anything else, a list of ids."""
        word = _KEYWORDS[info.field_name or ""]
        if isinstance(value, str) and value != word:
            raise ValueError(
                f"should be a list of test ids, e.g. `[a, b]`, or `{word}` "
                f"({_KEYWORD_MEANINGS[word]})"
            )
        return value

    @field_validator("fail_to_pass", "pass_to_pass")
    @classmethod
    def _ids(cls, ids: tuple[str, ...] | str) -> tuple[str, ...] | str:
        if isinstance(ids, str):
            return ids
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"test id {duplicates[0]!r} is listed twice")
        return ids

    _restore_globs = field_validator("restore", "paths")(check_globs)

    @field_validator("hidden")
    @classmethod
    def _hidden(cls, hidden: str | None) -> str | None:
        return None if hidden is None else check_relative(hidden.rstrip("/"), "directory")

    @model_validator(mode="after")
    def _some_ids(self) -> TestsConfig:
        if not self.fail_to_pass and not self.pass_to_pass:
            raise ValueError(
                "declare `fail_to_pass` or `pass_to_pass` test ids (or `fail_to_pass: "
                "added`, `pass_to_pass: baseline`): with neither, the tests can neither "
                "earn credit nor catch a regression"
            )
        both = sorted(set(self.target_ids) & set(self.regression_ids))
        if both:
            raise ValueError(
                f"test id {both[0]!r} is in both fail_to_pass and pass_to_pass; keep one"
            )
        return self

    @property
    def added(self) -> bool:
        """``fail_to_pass: added``: the targets are the tests the submission adds."""
        return self.fail_to_pass == "added"

    @property
    def baseline(self) -> bool:
        """``pass_to_pass: baseline``: every test that passes at the base must still."""
        return self.pass_to_pass == "baseline"

    @property
    def target_ids(self) -> tuple[str, ...]:
        """The ``fail_to_pass`` ids the task lists (none with ``added``)."""
        return () if isinstance(self.fail_to_pass, str) else self.fail_to_pass

    @property
    def regression_ids(self) -> tuple[str, ...]:
        """The ``pass_to_pass`` ids the task lists (none with ``baseline``)."""
        return () if isinstance(self.pass_to_pass, str) else self.pass_to_pass

    @property
    def listed_ids(self) -> tuple[str, ...]:
        """Every id the task lists: the targets, then the regression tests."""
        return self.target_ids + self.regression_ids

    @property
    def runs_the_base(self) -> bool:
        """Whether grading runs the tests at the base too (``added`` or ``baseline``)."""
        return self.added or self.baseline

    def quarantined(self, test_id: str, today: datetime.date) -> Quarantined | None:
        """The quarantine entry in force on ``today`` that names ``test_id`` (the id
        itself, or a glob of ids), if any."""
        return next(
            (
                q
                for q in self.quarantine
                if today <= q.until and (q.id == test_id or fnmatchcase(test_id, q.id))
            ),
            None,
        )

    def expired(self, today: datetime.date | None = None) -> tuple[str, ...]:
        """One line for each quarantine entry past its date on ``today`` (UTC's)."""
        today = today or datetime.datetime.now(datetime.timezone.utc).date()
        return tuple(
            f"tests.quarantine: {q.id!r} was quarantined until {q.until.isoformat()} "
            f"({q.reason}), which is past: its tests count again; fix them and remove the "
            "entry, or set a later date"
            for q in self.quarantine
            if q.until < today
        )

    def test_files(self) -> tuple[str, ...]:
        """The files the test ids name (see :func:`repogym.junit.testids.file_of`), sorted."""
        return tuple(sorted({p for p in map(file_of, self.listed_ids) if p is not None}))
