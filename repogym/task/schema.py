"""The task file's schema, declared once, as frozen pydantic models that forbid unknown
keys (the rules that span its sections are :mod:`repogym.task._checks`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Strict,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from repogym.junit.testids import escape_controls, file_of
from repogym.models import BUILTINS, CONSTRAINTS, PERF, QUALITY, TESTS, Role
from repogym.task._environment import EnvironmentConfig, Limits
from repogym.task._errors import UNION_TAGS
from repogym.task._perf import PerfConfig
from repogym.task._values import (
    Fraction,
    Seconds,
    Weight,
    check_globs,
    check_grader_reference,
    check_regexes,
    check_relative,
)

TASK_FILE = ".repogym.yml"
TaskType = Literal["bugfix", "feature", "perf", "refactor"]
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

    @field_validator("command")
    @classmethod
    def _junit_placeholder(cls, command: str) -> str:
        if "{junit}" not in command:
            raise ValueError(
                "the command must contain {junit} where the runner writes its JUnit XML, "
                "e.g. `pytest --junitxml={junit}`"
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

    def test_files(self) -> tuple[str, ...]:
        """The files the test ids name (see :func:`repogym.junit.testids.file_of`), sorted."""
        return tuple(sorted({p for p in map(file_of, self.listed_ids) if p is not None}))


class ConstraintsConfig(_Section):
    """``constraints:``: rules on the diff (a gate) and the quality limits."""

    protected: StrList = ()
    allowed_files: StrList | None = None
    max_files_changed: int | None = Field(default=None, ge=0)
    max_lines_changed: int | None = Field(default=None, ge=0)
    forbidden_patterns: StrList | None = None
    required_patterns: StrList | None = None
    paths: StrList | None = None
    max_function_length: int | None = Field(default=None, ge=1)
    max_cyclomatic_complexity: int | None = Field(default=None, ge=1)
    # Compiled code cannot be read by the gate nor by a reviewer (issue 9): it fails the
    # gate unless a glob here allows it.
    allow_compiled: StrList = ()

    _globs = field_validator("protected", "allowed_files", "paths", "allow_compiled")(check_globs)
    _regexes = field_validator("forbidden_patterns", "required_patterns")(check_regexes)

    def has_quality_limits(self) -> bool:
        return self.max_function_length is not None or self.max_cyclomatic_complexity is not None


class CustomGrader(_Section):
    """One entry of ``grading.graders``: ``module:Class``, optionally with a role."""

    grader: str
    role: Role = Role.OBJECTIVE
    _line: int = PrivateAttr(default=0)

    @property
    def line(self) -> int:
        """The line of this entry in the task file, for messages; 0 when unknown."""
        return self._line

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"grader": value}
        if not isinstance(value, dict):
            raise ValueError(
                "a custom grader is `module:Class`, or a mapping such as "
                "`{grader: module:Class, role: gate}`"
            )
        return value

    _reference = field_validator("grader")(check_grader_reference)

    @field_validator("role", mode="before")
    @classmethod
    def _role(cls, value: Any) -> Any:
        if value not in ("objective", "gate"):
            raise ValueError("role must be `objective` or `gate`")
        return Role(value)


class GradingConfig(_Section):
    """``grading:``: weights of objectives, the pass threshold, custom graders."""

    weights: dict[str, Weight] = Field(default_factory=dict)
    pass_threshold: Fraction = 0.0
    graders: Annotated[tuple[CustomGrader, ...], Strict(False)] = ()


class Task(_Section):
    """A whole task file. Load one with :func:`load_task` or :func:`parse_task`."""

    version: Literal[1]
    type: TaskType
    setup: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: StrList = ()
    environment: EnvironmentConfig | None = None
    # What each command may use, on the host (a cgroup) as in an environment (issue 43);
    # `environment.limits` is the same, written where it began (issue 20).
    limits: Limits | None = None
    tests: TestsConfig | None = None
    perf: PerfConfig | None = None
    constraints: ConstraintsConfig = ConstraintsConfig()
    grading: GradingConfig = GradingConfig()

    @field_validator("env", "pass_env")
    @classmethod
    def _variable_names(cls, names: Any) -> Any:
        for name in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(
                    f"{name!r} is not an environment variable name: use letters, digits "
                    "and `_`, not starting with a digit"
                )
        return names

    @model_validator(mode="after")
    def _limits_once(self) -> Task:
        environment = self.environment
        if (
            self.limits is not None
            and environment is not None
            and "limits" in environment.model_fields_set
        ):
            raise ValueError(
                "`limits` and `environment.limits` say the same thing: keep `limits` and "
                "remove `environment.limits`"
            )
        return self

    @property
    def command_limits(self) -> Limits:
        """What each of the task's commands may use, wherever it runs (issue 43): its
        ``limits``, else ``environment.limits``, else the defaults."""
        if self.limits is not None:
            return self.limits
        return Limits() if self.environment is None else self.environment.limits

    _source: str = PrivateAttr(default=TASK_FILE)
    _sha256: str = PrivateAttr(default="")
    _raw: bytes = PrivateAttr(default=b"")

    @property
    def source(self) -> str:
        """Where the task was read from, as shown in messages."""
        return self._source

    @property
    def sha256(self) -> str:
        """sha256 of the task file's bytes, recorded in every report."""
        return self._sha256

    @property
    def raw(self) -> bytes:
        """The task file's bytes as they were read (``b""`` for a task built in code):
        what a grade elsewhere reads to have the same task (issue 23)."""
        return self._raw

    @property
    def digest(self) -> str:
        """The task's identity, for what is kept per task: its file's sha256, or for a
        task built in code rather than read from a file, its content's."""
        return self.sha256 or hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    @property
    def tests_role(self) -> Role:
        """Tests earn credit when there are targets; regression-only tests gate (spec)."""
        has_targets = self.tests is not None and bool(self.tests.added or self.tests.target_ids)
        return Role.OBJECTIVE if has_targets else Role.GATE

    @property
    def quality_role(self) -> Role:
        """Quality is the objective of a refactor and a gate on every other type (spec)."""
        return Role.OBJECTIVE if self.type == "refactor" else Role.GATE

    def role_of(self, grader: str) -> Role:
        """The role the built-in grader ``grader`` has in this task (spec), whether the
        task runs it or not."""
        return BUILTIN_GRADERS[grader].role(self)

    def builtin_roles(self) -> dict[str, Role]:
        """The built-in graders this task runs, in grading order, with their roles."""
        return {name: rule.role(self) for name, rule in BUILTIN_GRADERS.items() if rule.runs(self)}

    def protected_files(self) -> dict[str, str]:
        """Files no submission may touch, always on, each with the reason."""
        protected = {TASK_FILE: "the task file"}
        if self.tests is not None:
            for path in self.tests.test_files():
                protected.setdefault(path, "named by a test id")
        return protected


@dataclass(frozen=True, slots=True)
class BuiltinRule:
    """Whether a task runs a built-in grader, and the role its component has (spec)."""

    runs: Callable[[Task], bool]
    role: Callable[[Task], Role]


# The built-in graders (repogym.models.BUILTINS, in the spec's grading order), each with
# the rule of when a task runs it. Their classes are registered by these names in
# repogym.graders.builtin, which the task cannot import (the graders import the task).
BUILTIN_GRADERS: dict[str, BuiltinRule] = {
    CONSTRAINTS: BuiltinRule(runs=lambda task: True, role=lambda task: Role.GATE),
    TESTS: BuiltinRule(runs=lambda task: task.tests is not None, role=lambda task: task.tests_role),
    QUALITY: BuiltinRule(
        runs=lambda task: task.constraints.has_quality_limits(),
        role=lambda task: task.quality_role,
    ),
    PERF: BuiltinRule(runs=lambda task: task.perf is not None, role=lambda task: Role.OBJECTIVE),
}
assert tuple(BUILTIN_GRADERS) == tuple(builtin.name for builtin in BUILTINS)  # one order
