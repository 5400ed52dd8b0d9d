"""One command of RepoEnv's agent, ``exec``'d in its episode's container (issue 23).

Its output is read up to the cap. Its exit code is the engine's: asked once the output
ends, and when the command closed its output and goes on, waited for on the engine's
``exec_die`` event until the timeout, never made up. At its timeout its process group is
killed from another ``exec``; when that kill cannot run (no pid left for it under
``limits.pids``) or does not end the command, the container itself is killed through the
engine and the episode is lost (:class:`EpisodeLost`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import EpisodeLost
from repogym.models import CommandResult
from repogym.run.container.command import NAME, UID
from repogym.run.container.engine import SHELL, close_attach, docker_module, engine_errors, said
from repogym.sandbox.output import POLL_SLICE, keep_tail
from repogym.sandbox.process import leave_stop_signals_to_the_main_thread

# The first line of a command's stdout is its shell's pid (its process group's, the exec
# being a session of its own), which the timeout kills; the rest is the command's.
_WRAP = 'echo "$$" && exec /bin/sh -c "$1"'
_KILL_GRACE = 5.0  # seconds a killed command's exec may take to end


@dataclass(slots=True)
class Exec:
    """One command ``exec``'d in the episode's container."""

    api: Any
    container: str
    output_cap: int
    pid: bytearray = field(default_factory=bytearray)  # the first line of the stdout
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    cut: list[int] = field(default_factory=lambda: [0, 0])

    def go(self, command: str, cwd: Path, timeout: float, env: dict[str, str]) -> CommandResult:
        """Run ``command``; :class:`EpisodeLost` when the container cannot run it or
        its processes could not be killed at its timeout."""
        since = int(time.time()) - 1  # the exec_die event is waited for from here
        try:
            ident = self.api.exec_create(
                self.container,
                [*SHELL, _WRAP, NAME, command],
                user=f"{UID}:{UID}",
                workdir=str(cwd),
                environment=env,
            )["Id"]
            stream = self.api.exec_start(ident, socket=True)
        except engine_errors() as error:
            raise EpisodeLost(f"the command could not start in it ({said(error)})") from None
        start = time.monotonic()
        deadline = start + timeout
        reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        reader.start()
        try:
            code = self._exit_code(ident, since, deadline) if _joined(reader, deadline) else None
            if code is None:
                self._kill(ident, since, reader)
        finally:
            close_attach(stream)
        return CommandResult(
            command=command,
            exit_code=code,
            timed_out=code is None,
            duration=time.monotonic() - start,
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=self.stderr.decode("utf-8", "replace"),
            stdout_cut=self.cut[0],
            stderr_cut=self.cut[1],
        )

    def _exit_code(self, ident: str, since: int, deadline: float) -> int | None:
        """The exec's exit code once its output ended; when it closed its output and goes
        on, waited for on its exit event until ``deadline``; None if it runs past it."""
        code = self._exited(ident)
        if code is None and self._died(ident, since, deadline):
            code = self._exited(ident)
        return code

    def _exited(self, ident: str) -> int | None:
        """The exit code the engine recorded for the exec; None while it runs."""
        try:
            found = self.api.exec_inspect(ident)
        except engine_errors() as error:  # the container, and its execs, are gone
            raise EpisodeLost(f"its command's end cannot be had ({said(error)})") from None
        code = found.get("ExitCode")
        return None if found.get("Running") or code is None else int(code)

    def _died(self, ident: str, since: int, deadline: float) -> bool:
        """Wait for the engine's ``exec_die`` event of the exec until ``deadline``
        (monotonic); whether it came."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            events = self.api.events(
                since=since,
                until=int(time.time() + left) + 1,
                filters={"type": "container", "container": self.container, "event": "exec_die"},
                decode=True,
            )
            with contextlib.closing(events):
                for event in events:
                    if (event.get("Actor") or {}).get("Attributes", {}).get("execID") == ident:
                        return True
        except engine_errors() as error:
            raise EpisodeLost(f"its command's end cannot be had ({said(error)})") from None
        return False

    def _kill(self, ident: str, since: int, reader: threading.Thread) -> None:
        """Kill the command's process group, from another exec of the same user; when
        that cannot be done (no pid left to run the kill), kill the container."""
        pid = self.pid.decode(errors="replace").strip()
        if pid.isdigit():
            with contextlib.suppress(*engine_errors()):
                killer = self.api.exec_create(
                    self.container,
                    [*SHELL, f"kill -9 -{pid} || kill -9 {pid}"],
                    user=f"{UID}:{UID}",
                )["Id"]
                self.api.exec_start(killer)
        grace = time.monotonic() + _KILL_GRACE
        if self._exited(ident) is not None or self._died(ident, since, grace):
            reader.join(_KILL_GRACE)
            return
        with contextlib.suppress(*engine_errors()):
            self.api.kill(self.container)
        raise EpisodeLost(
            "a command ran past its timeout and its processes could not be killed from "
            "inside (no process could be started to kill them, say at environment.limits."
            "pids), so the container was killed"
        )

    def _read(self, stream: Any) -> None:
        leave_stop_signals_to_the_main_thread()
        frames = docker_module().utils.socket.frames_iter(stream, tty=False)
        with contextlib.suppress(Exception):
            for kind, data in frames:
                if kind == 2:
                    self.cut[1] += keep_tail(self.stderr, data, self.output_cap)
                    continue
                if not self.pid.endswith(b"\n"):  # still the wrapper's first line
                    head, newline, data = data.partition(b"\n")
                    self.pid += head + newline
                self.cut[0] += keep_tail(self.stdout, data, self.output_cap)


def _joined(reader: threading.Thread, deadline: float) -> bool:
    """Wait for the output's end until ``deadline`` in slices (a cancel's signal is
    handled at once); whether it ended."""
    while reader.is_alive():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        reader.join(min(POLL_SLICE, left))
    return True
