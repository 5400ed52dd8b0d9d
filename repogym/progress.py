"""What a grade is doing while it runs: graders starting and ending, commands running.

A grade can take many minutes, and whoever runs it (the GitHub Action's log, a notebook)
wants to see which grader is at work and which command it waits for. :func:`grade`
takes a ``progress`` object and makes it current for the grade; the composite grader and
the runner tell the current one what happens. Nothing is told when none is current.

The commands named here are the task's (read at the base, never the submission's); what
they print is not passed on: it is the submission's, and it stays in the report.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from repogym.models import CommandResult, GradeComponent


class Progress(Protocol):
    """Told of a grade's steps, in order, from the thread that grades."""

    def grader_started(self, name: str) -> None: ...

    def grader_finished(self, component: GradeComponent, seconds: float) -> None: ...

    def command_started(self, command: str, cwd: Path) -> None: ...

    def command_finished(self, result: CommandResult) -> None: ...


_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "repogym_progress", default=None
)


@contextlib.contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Make ``progress`` the one told while the block runs (None: nobody)."""
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Progress | None:
    """The progress object told of the grade running now, if any."""
    return _current.get()
