"""What every place a command runs answers (issue 46): :class:`CommandRunner` for a
grade's commands, :class:`AgentRunner` for an agent's in RepoEnv. The places are the
host's :class:`repogym.run.host.Runner` (a sandbox user, sealed),
:class:`repogym.run.container.runner.ContainerRunner` (containers of the task's image) and
:class:`repogym.run.container.episode.EpisodeRunner` (one container for an episode). A grade
and a RepoEnv choose one and hand it down; the graders and RepoEnv ask it only what these
protocols name, never which kind it is.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from repogym.models import CommandResult

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "MAX_TIMEOUT",
    "OUTPUT_GRACE",
    "AgentRunner",
    "CommandRunner",
    "check_timeout",
]

DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept of each of stdout and stderr
MAX_TIMEOUT = 7 * 86400.0  # seconds: longer ones are a mistake (and overflow the clocks)
# Seconds the output is still read once the command and all it left are killed: what
# is in the pipes by then is read at once; more can only come from a process that got
# a copy of the pipe out of reach of the killing (not root: sent to another process).
OUTPUT_GRACE = 1.0


def check_timeout(timeout: float, what: str = "timeout") -> None:
    """A ValueError unless ``timeout`` is a finite number of seconds in (0, MAX_TIMEOUT]."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise ValueError(
            f"{what} {timeout!r} must be a positive number of seconds, at most {MAX_TIMEOUT:g}"
        )


class CommandRunner(Protocol):
    """What runs a grade's commands: :class:`Runner` on the host, as a sandbox user, or
    :class:`repogym.run.container.runner.ContainerRunner` in containers of the task's image.
    A grade chooses one (:meth:`repogym.workspace.Workspace.command_runner`) and hands it
    down; a grader asks it only these, never which kind it is (issue 46)."""

    @property
    def pass_env(self) -> Sequence[str]:
        """The grader's variables the task lets through."""
        ...

    @property
    def set_env(self) -> Mapping[str, str]:
        """The variables the task sets."""
        ...

    @property
    def where(self) -> str:
        """Where the commands run, for keys and messages: ``host``, or ``image NAME``."""
        ...

    @property
    def scope(self) -> str:
        """What the trees made with this runner belong to (a container runner's volumes):
        ``""`` where they outlive it."""
        ...

    @property
    def record(self) -> Mapping[str, Any] | None:
        """What the report says of the task's environment where the commands run (its
        image, how it was had): None on the host."""
        ...

    @property
    def writes_in_place(self) -> bool:
        """Whether a command's writes land in the host's tree as it runs (else in a copy
        of it, read back only for the trees given as ``collect``)."""
        ...

    @property
    def links_dependencies(self) -> bool:
        """Whether a run's copy links the work tree's dependency directories
        (``node_modules``, ``.venv``) rather than using what the image has."""
        ...

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]: ...

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        writable: Sequence[Path] = (),
        collect: Sequence[Path] = (),
        network: bool = False,
        shown: str | None = None,
        readable: Sequence[Path] = (),
    ) -> CommandResult: ...

    def switches_user(self) -> bool: ...

    def add(self, tree: Path, paths: Sequence[str]) -> None: ...

    def lock(self, tree: Path) -> None: ...

    def close(self) -> None: ...

    def measured(self, command: str, what: str) -> str:
        """``command`` run by the measurer of ``what`` (``cpu``, ``instructions`` or
        ``peak_memory``) of the place it runs, which prints the figures last."""
        ...

    def found(self, result: CommandResult, key: str) -> CommandResult:
        """``result``, unless its program was not found where it ran: then the
        :class:`~repogym.errors.CommandNotFound` that names it (``key``: the task's key of
        the command), which is the place's error, not a grade (issue 20)."""
        ...


class AgentRunner(Protocol):
    """What runs an agent's commands in RepoEnv: :class:`Runner` on the host, or
    :class:`repogym.run.container.episode.EpisodeRunner` in one container for the episode.
    RepoEnv chooses one and asks it only these (issue 46)."""

    def start(self, tree: Path) -> None:
        """The episode begins in ``tree``."""
        ...

    def stop(self) -> None:
        """The episode ends: nothing of it runs on."""
        ...

    def sync(self) -> str:
        """The host's ``tree`` as the agent's commands left it; what was left out."""
        ...

    def isolated(self) -> contextlib.AbstractContextManager[None]:
        """Nothing of the episode takes a step while the block runs (a grade's tests)."""
        ...

    def add(self, tree: Path, paths: Sequence[str]) -> None: ...

    def close(self) -> None: ...

    def run_agent(
        self, command: str, tree: Path, *, timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """One of the agent's commands in ``tree``, its bytecode kept out of the tree."""
        ...
