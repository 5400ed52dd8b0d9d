"""Running commands the submission controls: ``setup``, the tests, the benchmark.

One place, so that every untrusted command gets the same treatment:

- it runs through ``/bin/sh -c`` in a given tree, in a new session (its own process group);
- the environment is an allowlist: nothing of the grader's own leaks in (tokens above all)
  unless the task passes it through by name;
- on timeout the whole process group is killed, and afterwards, timeout or not, every
  process it started is killed too, daemons that left the group included: the grader makes
  itself a child subreaper (Linux), so orphans are re-parented to it and can be found;
- stdout and stderr are captured up to a cap each, keeping the tail, and say how much was cut;
- exit code, timeout and duration (monotonic clock) are recorded.

``Runner.user`` is the seam for running as another user later: everything that starts a
process goes through :meth:`Runner._spawn`.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

# Variables a build or test tool commonly needs and that carry no secret.
SAFE_VARIABLES = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
)
DEFAULT_OUTPUT_CAP = 1 << 20  # bytes kept of each of stdout and stderr
MAX_TIMEOUT = 7 * 86400.0  # seconds: longer ones are a mistake (and overflow the clocks)
_PR_SET_CHILD_SUBREAPER = 36


def check_timeout(timeout: float, what: str = "timeout") -> None:
    """A ValueError unless ``timeout`` is a finite number of seconds in (0, MAX_TIMEOUT]."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise ValueError(
            f"{what} {timeout!r} must be a positive number of seconds, at most {MAX_TIMEOUT:g}"
        )


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Runner:
    """Runs untrusted shell commands; see the module docstring."""

    pass_env: Sequence[str] = ()  # names of the grader's variables the task lets through
    set_env: Mapping[str, str] = field(default_factory=dict)  # fixed values from the task
    output_cap: int = DEFAULT_OUTPUT_CAP
    user: str | None = None  # reserved: running as another user (not yet supported)

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a command gets, built from ``base`` (default: ``os.environ``)."""
        source = os.environ if base is None else base
        env = {k: source[k] for k in (*SAFE_VARIABLES, *self.pass_env) if k in source}
        env.update(self.set_env)
        env.setdefault("PATH", os.defpath)
        return env

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` in ``cwd``; ``env`` adds variables on top of the allowlist.

        ``timeout`` is in seconds: finite, positive and at most ``MAX_TIMEOUT``.
        """
        check_timeout(timeout)
        # A marker every process the command starts inherits, to find it again later.
        marker = f"{os.getpid()}-{next(_runs)}"
        with tempfile.TemporaryDirectory(prefix="repogym-pycache-") as pycache:
            # Bytecode goes to a fresh place each run: a same-size edit within the same
            # second must not run a stale .pyc, and the tree gets no __pycache__ of ours.
            defaults = {"PYTHONPYCACHEPREFIX": pycache}
            full_env = {**defaults, **self.environment(), **(env or {}), _MARKER: marker}
            return self._run(command, cwd, timeout, full_env, marker)

    def _run(
        self, command: str, cwd: Path, timeout: float, full_env: dict[str, str], marker: str
    ) -> CommandResult:
        _become_subreaper()
        start = time.monotonic()
        process: subprocess.Popen[bytes] | None = None
        timed_out = False
        # Everything from the spawn on is inside the try: a signal (raised as an exception
        # by the CLI) may arrive at any line, and the command must not outlive it. Spawned
        # but not yet returned, it is still our child, which _kill_leftovers kills.
        try:
            process = self._spawn(command, cwd, full_env)
            _tracked.add(process.pid)
            stdout, stderr = (
                _Tail(process.stdout, self.output_cap),
                _Tail(process.stderr, self.output_cap),
            )
            timed_out = not _wait_exit(process, timeout)
        finally:
            duration = time.monotonic() - start
            if process is not None:
                _kill_group(process.pid)
                process.wait()  # at once if it exited; else it was just killed
                _tracked.discard(process.pid)
            _kill_leftovers(marker)
        stdout.join()
        stderr.join()
        return CommandResult(
            command=command,
            exit_code=None if timed_out else process.returncode,
            timed_out=timed_out,
            duration=duration,
            stdout=stdout.text(),
            stderr=stderr.text(),
            stdout_cut=stdout.cut,
            stderr_cut=stderr.cut,
        )

    def _spawn(self, command: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        if self.user is not None:
            raise NotImplementedError("running as another user is not supported yet")
        return subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )


def _wait_exit(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for ``process`` to exit, at most ``timeout`` seconds; whether it did.

    ``Popen.wait(timeout=...)`` polls with sleeps of up to 50 ms, which would round every
    wall time the perf grader takes up to a 50 ms step; a pidfd wakes us on the exit itself.
    """
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: fall back to polling
        try:
            process.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    if not ready:
        return False
    process.wait()
    return True


class _Tail:
    """Reads a pipe to the end in a thread, keeping only the last ``cap`` bytes."""

    def __init__(self, pipe: IO[bytes] | None, cap: int) -> None:
        self._pipe = pipe
        self._cap = cap
        self._buffer = bytearray()
        self.cut = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        if self._pipe is None:
            return
        with self._pipe:
            while chunk := os.read(self._pipe.fileno(), 65536):
                self._buffer += chunk
                excess = len(self._buffer) - self._cap
                if excess > 0:
                    del self._buffer[:excess]
                    self.cut += excess

    def join(self) -> None:
        self._thread.join()

    def text(self) -> str:
        return self._buffer.decode("utf-8", errors="replace")


_subreaper_done = False


def _become_subreaper() -> None:
    """Make orphans of our commands re-parent to this process instead of init (Linux)."""
    global _subreaper_done
    if _subreaper_done:
        return
    _subreaper_done = True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: process-group killing still applies
        pass


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _processes() -> list[tuple[int, int]]:
    """(pid, parent pid) of every process we can see."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may contain spaces.
        fields = stat[stat.rindex(")") + 2 :].split()
        found.append((int(entry.name), int(fields[1])))
    return found


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _kill_leftovers(marker: str) -> None:
    """Kill every process a command left behind: those that still carry its marker, and
    orphans re-parented to us (a daemon may have cleared its environment).

    Every child of ours that is not a command still running counts as left behind, so
    a process that grades must not run other children of its own meanwhile.
    """
    if not Path("/proc").is_dir():
        return
    me = os.getpid()
    tag = f"{_MARKER}={marker}".encode()
    for _ in range(50):  # daemons may fork while we kill; go round until none is left
        victims = [
            pid
            for pid, parent in _processes()
            if pid != me and pid not in _tracked and (parent == me or _carries(pid, tag))
        ]
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in victims:
            # Not our child: init or its own parent reaps it.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


_MARKER = "REPOGYM_RUN"
_runs = itertools.count(1)
_tracked: set[int] = set()
