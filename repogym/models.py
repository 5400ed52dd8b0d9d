"""Values every grader and report shares: roles, components and the final result."""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

__all__ = [
    "ALL_PASSED",
    "BUILTINS",
    "CONSTRAINTS",
    "EXIT_WARNING",
    "MAX_FINDINGS",
    "MAX_NAMED",
    "OUTPUT_NOT_SHOWN",
    "PERF",
    "QUALITY",
    "SOME_FAILED",
    "TESTS",
    "TEST_WHAT",
    "Builtin",
    "CommandResult",
    "Finding",
    "GradeComponent",
    "GradeResult",
    "Level",
    "Role",
    "capped_findings",
    "format_score",
]

Level = Literal["failure", "warning", "notice"]

# Findings a built-in grader puts on one component: two requests of GitHub's 50
# annotations, enough to act on without turning a flood (a pattern matched on every line)
# into a report of thousands of entries. What is past the cap is counted, not dropped.
MAX_FINDINGS = 100


def format_score(score: float, places: int = 2) -> str:
    """``score`` with ``places`` decimals, cut rather than rounded: 0.9988 is ``0.99``,
    since ``1.00`` beside a failing component would read as full marks. Only 1 is 1.00."""
    # The shortest decimal that is the float (`repr`), so that 0.29 stays 0.29.
    exact = decimal.Decimal(repr(float(score)))
    cut = exact.quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_DOWN)
    return f"{cut:.{places}f}"


class Role(str, Enum):
    """How a component counts (spec: "Objectives and gates")."""

    OBJECTIVE = "objective"  # contributes its weighted score
    GATE = "gate"  # contributes nothing, but a failing gate zeroes the score

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing a grader found that a reviewer can act on, at a place when it has one.

    ``path`` is a POSIX path relative to the work tree and ``line`` a 1-based line in it;
    either may be None (a finding about the whole change, or a test whose report names no
    file). ``title`` is a short label (``fail_to_pass``, ``max_function_length``),
    ``message`` the one-line explanation, ``level`` how a check-run annotation shows it.
    Hidden tests never become findings that name them.
    """

    message: str
    title: str = ""
    path: str | None = None
    line: int | None = None
    level: Level = "failure"

    def __post_init__(self) -> None:
        if self.level not in ("failure", "warning", "notice"):
            raise ValueError(f"finding level {self.level!r}: use failure, warning or notice")
        if self.line is not None and (isinstance(self.line, bool) or self.line < 1):
            raise ValueError(f"finding line {self.line!r} must be a line number from 1")
        if self.line is not None and self.path is None:
            raise ValueError("a finding with a line needs a path")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the finding (docs/report.md)."""
        return {
            "path": self.path,
            "line": self.line,
            "title": self.title,
            "message": self.message,
            "level": self.level,
        }


def capped_findings(findings: Sequence[Finding], noun: str = "finding") -> tuple[Finding, ...]:
    """The first :data:`MAX_FINDINGS` of ``findings`` and, when there were more, one more
    finding without a place that counts the rest (``noun``: what they are, singular)."""
    kept = tuple(findings[:MAX_FINDINGS])
    rest = len(findings) - len(kept)
    if rest <= 0:
        return kept
    more = f"{rest} more {noun}{'' if rest == 1 else 's'} not listed"
    return (*kept, Finding(title="not listed", message=more, level="notice"))


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeComponent:
    """What one grader found: a score in [0, 1], whether it passed, and why.

    ``weight`` is the weight the component carried in the total; the composite fills it
    in from ``grading.weights`` (default 1) and sets it to 0 for gates, which carry none.
    """

    name: str
    score: float
    passed: bool
    role: Role = Role.OBJECTIVE
    details: Mapping[str, Any] = field(default_factory=dict)
    messages: Sequence[str] = ()
    findings: Sequence[Finding] = ()
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a GradeComponent needs a name")
        score = float(self.score)
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise ValueError(f"component {self.name!r}: score {self.score!r} is not in [0, 1]")
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "passed", bool(self.passed))
        object.__setattr__(self, "role", Role(self.role))
        object.__setattr__(self, "messages", tuple(str(m) for m in self.messages))
        object.__setattr__(self, "details", dict(self.details))
        object.__setattr__(self, "findings", tuple(self.findings))
        for finding in self.findings:
            if not isinstance(finding, Finding):
                raise TypeError(
                    f"component {self.name!r}: findings must be Finding, "
                    f"not {type(finding).__name__}"
                )
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ValueError(f"component {self.name!r}: weight {self.weight!r} must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the component (docs/report.md)."""
        return {
            "name": self.name,
            "role": self.role.value,
            "score": self.score,
            "passed": self.passed,
            "weight": self.weight,
            "details": dict(self.details),
            "messages": list(self.messages),
            "findings": [f.to_dict() for f in self.findings],
        }

    def mark(self) -> str:
        """``tests=1.00✓``, with ``(gate)`` after gates: one entry of the summary line."""
        text = f"{self.name}={format_score(self.score)}{'✓' if self.passed else '✗'}"
        return text + "(gate)" if self.role is Role.GATE else text


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeResult:
    """The grade of one submission: the total and every component, in grading order."""

    score: float
    passed: bool
    components: tuple[GradeComponent, ...]
    patch: str = ""
    files_changed: tuple[str, ...] = ()

    def component(self, name: str) -> GradeComponent:
        """The component called ``name``; ``KeyError`` naming the ones there are."""
        for component in self.components:
            if component.name == name:
                return component
        names = ", ".join(c.name for c in self.components) or "none"
        raise KeyError(f"no component named {name!r} (components: {names})")

    def summary(self) -> str:
        """``PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓)``."""
        verdict = "PASS" if self.passed else "FAIL"
        marks = ", ".join(c.mark() for c in self.components)
        return f"{verdict} {format_score(self.score, 3)} ({marks})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: score, verdict, summary, components and changed files.

        The report of ``repogym grade --json`` adds the commits, the task and the tool
        (docs/report.md).
        """
        return {
            "score": self.score,
            "passed": self.passed,
            "summary": self.summary(),
            "components": [c.to_dict() for c in self.components],
            "files_changed": list(self.files_changed),
        }


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in grader as the task, the graders and a redacted report know it."""

    name: str  # its component's name, as `grading.weights` and `grading.roles` write it
    key: str  # the section of the task file that configures it
    runs_code: bool  # whether it runs the submission's code (then hidden tests hide its text)


# The built-in graders in the spec's grading order: the one place their names are written.
# Which of them a task runs, and with what role, is the task's rule
# (repogym.task.BUILTIN_GRADERS); their classes are registered in repogym.graders.builtin.
BUILTINS = (
    Builtin("constraints", key="constraints", runs_code=False),
    Builtin("tests", key="tests", runs_code=True),
    Builtin("quality", key="constraints", runs_code=False),
    Builtin("perf", key="perf", runs_code=True),
)
CONSTRAINTS, TESTS, QUALITY, PERF = (builtin.name for builtin in BUILTINS)

# What the tests grader says, as a report redacted for hidden tests keeps it
# (repogym.report.redact, which must not import the graders: the renderer's process
# starts without them).
MAX_NAMED = 20  # failing ids a message names; the rest are counted
OUTPUT_NOT_SHOWN = "output not shown: hidden tests ran"
TEST_WHAT = {  # how a finding says what happened to a test that did not pass
    "failed": "failed",
    "error": "errored",
    "skipped": "was skipped",
    "missing": "is not in the report",
}
EXIT_WARNING = "warning: the test command exited with code {code} although {why}"
ALL_PASSED = "every test in the report passed"
SOME_FAILED = "the report has failures"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """What happened when a command ran."""

    command: str
    exit_code: int | None  # None when it was killed for running over its timeout
    timed_out: bool
    duration: float  # seconds, monotonic clock, from spawn to exit
    stdout: str
    stderr: str
    stdout_cut: int = 0  # bytes dropped from the start of stdout
    stderr_cut: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of stderr and stdout, for messages."""
        text = (self.stdout.rstrip() + "\n" + self.stderr.rstrip()).strip()
        return "\n".join(text.splitlines()[-lines:])

    def describe(self) -> str:
        """``exit code 1 after 2.3 s`` or ``timed out after 900 s``."""
        if self.timed_out:
            return f"timed out after {self.duration:.0f} s"
        return f"exit code {self.exit_code} after {self.duration:.1f} s"
