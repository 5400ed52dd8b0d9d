"""The Action's log while it grades: one collapsible group per grader, the commands it
runs with their timings, and a line now and then while a long command runs.

Only what the task says is written here (grader names, the task's commands): the task is
read at the base, never from the pull request. What the commands print is the
submission's; it stays in the report, out of the log. All the same, every line goes
through :class:`~repogym_action.commands.Commands`, which makes it inert (issue 19): a
custom grader's name or a command's text is no command either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from repogym.models import CommandResult, GradeComponent, format_score
from repogym.sandbox.process import leave_stop_signals_to_the_main_thread

# How often a running command is said to be still running.
PROGRESS_EVERY = 60.0


class Log(Protocol):
    """What of :class:`~repogym_action.commands.Commands` the progress writes with."""

    def line(self, text: str) -> None: ...
    def open_group(self, title: str) -> bool: ...
    def close_group(self) -> None: ...


class LogProgress:
    """A :class:`repogym.progress.Progress` writing to the Actions log through ``log``."""

    def __init__(
        self,
        log: Log,
        *,
        every: float = PROGRESS_EVERY,
        workspace: Path | None = None,
    ) -> None:
        self._log = log
        self._every = every
        self._workspace = workspace
        self._lock = threading.Lock()
        self._ticker: _Ticker | None = None
        self._in_group = False

    def grader_started(self, name: str) -> None:
        with self._lock:
            self._in_group = self._log.open_group(f"repogym: {name}")

    def grader_finished(self, component: GradeComponent, seconds: float) -> None:
        verdict = "passed" if component.passed else "not passed"
        self._say(
            f"{component.name}: {verdict}, score {format_score(component.score)} "
            f"({component.role.value}) in {seconds:.1f} s"
        )
        self._end_group()

    def command_started(self, command: str, cwd: Path) -> None:
        self._say(f"$ {command}")
        self._stop_ticker()
        self._ticker = _Ticker(self._say, command, self._every)

    def command_finished(self, result: CommandResult) -> None:
        self._stop_ticker()
        self._say(f"  {result.describe()}")

    def close(self) -> None:
        """Stop the ticker; end a grader's group the grade left open (an interrupt), so
        that what follows is not folded into it."""
        self._stop_ticker()
        self._end_group()

    def _end_group(self) -> None:
        with self._lock:
            if self._in_group:
                self._log.close_group()
                self._in_group = False

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def _say(self, line: str) -> None:
        with self._lock:  # the ticker's thread writes too
            self._log.line(line)


class _Ticker:
    """Says every ``every`` seconds that ``command`` still runs, until stopped."""

    def __init__(self, say: Callable[[str], None], command: str, every: float) -> None:
        self._say = say
        self._command = command
        self._every = every
        self._stopped = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="repogym-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        leave_stop_signals_to_the_main_thread()
        while not self._stopped.wait(self._every):
            seconds = time.monotonic() - self._start
            self._say(f"  still running after {seconds:.0f} s: {self._command}")

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
