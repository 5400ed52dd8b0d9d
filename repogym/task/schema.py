"""The task file's schema, declared once, as frozen pydantic models that forbid unknown
keys (the rules that span its sections are :mod:`repogym.task._checks`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    field_validator,
    model_validator,
)

from repogym.models import BUILTINS, CONSTRAINTS, PERF, QUALITY, TESTS, Role
from repogym.task._environment import EnvironmentConfig, Limits
from repogym.task._perf import PerfConfig
from repogym.task._tests import TestsConfig
from repogym.task._values import (
    Fraction,
    Weight,
    check_globs,
    check_grader_reference,
    check_regexes,
)

TASK_FILE = ".repogym.yml"
TaskType = Literal["bugfix", "feature", "perf", "refactor"]
# YAML gives lists; the model keeps immutable tuples, and stays strict about the items.
StrList = Annotated[tuple[str, ...], Strict(False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
