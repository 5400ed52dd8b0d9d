"""The steps an agent takes in a :class:`repogym.env.episode.RepoEnv`, and what it sees after each.

Each action is a frozen dataclass that checks its own fields when made (a wrong type is a
TypeError naming the action and the field), so the environment only ever dispatches on a
valid one. Apart from :mod:`repogym.env.episode` because they are the episode's vocabulary, what
an agent harness imports, while the environment is how they are carried out. The whole
contract is in docs/env.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from repogym.run.protocol import check_timeout

__all__ = [
    "ACTIONS",
    "DEFAULT_TIMEOUT",
    "Action",
    "ApplyPatch",
    "Observation",
    "ReadFile",
    "RunCommand",
    "Step",
    "Submit",
    "WriteFile",
]

DEFAULT_TIMEOUT = 300.0  # seconds a RunCommand may take unless it says otherwise


@dataclass(frozen=True, slots=True)
class RunCommand:
    """Run a shell command in the workspace through the task's :class:`Runner`."""

    command: str
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        _require(self, "command", str)
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"RunCommand timeout must be a number, not {type(timeout).__name__}")
        check_timeout(timeout, "RunCommand timeout")


@dataclass(frozen=True, slots=True)
class ReadFile:
    """Read a file of the workspace (UTF-8, undecodable bytes replaced)."""

    path: str

    def __post_init__(self) -> None:
        _require(self, "path", str)


@dataclass(frozen=True, slots=True)
class WriteFile:
    """Create or overwrite a file of the workspace, creating its directories."""

    path: str
    content: str | bytes

    def __post_init__(self) -> None:
        _require(self, "path", str)
        _require(self, "content", (str, bytes))


@dataclass(frozen=True, slots=True)
class ApplyPatch:
    """Apply a unified diff (``a/`` and ``b/`` prefixes) with ``git apply``."""

    patch: str

    def __post_init__(self) -> None:
        _require(self, "patch", str)


def _require(action: object, field: str, kinds: type | tuple[type, ...]) -> None:
    """A TypeError naming the action, the field and what it takes, when it is not that."""
    value = getattr(action, field)
    if not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        raise TypeError(
            f"{type(action).__name__} {field} must be {names}, not {type(value).__name__}"
        )


@dataclass(frozen=True, slots=True)
class Submit:
    """Grade the workspace and end the episode."""


Action = RunCommand | ReadFile | WriteFile | ApplyPatch | Submit
ACTIONS = (RunCommand, ReadFile, WriteFile, ApplyPatch, Submit)


class Observation(TypedDict):
    """What the agent sees after each step (docs/env.md, "Observations")."""

    output: str
    exit_code: int | None
    error: str | None


Step = tuple[Observation, float, bool, bool, dict[str, Any]]
