"""Running commands the submission controls: ``setup``, the tests, the benchmark.

One place, so that every untrusted command gets the same treatment:

- it runs through ``/bin/sh -c`` in a given tree, in a new session (its own process group);
- the environment is an allowlist: nothing of the grader's own leaks in (tokens above all)
  unless the task passes it through by name;
- on timeout the whole process group is killed, and afterwards, timeout or not, every
  process it started is killed too, daemons that left the group included: the grader makes
  itself a child subreaper (Linux), so orphans are re-parented to it and can be found;
- the grader makes itself not dumpable, so its ``/proc/<pid>/environ`` is closed to them;
- stdout and stderr are captured up to a cap each, keeping the tail, and say how much was
  cut; once the command and its leftovers are killed, reading stops after ``OUTPUT_GRACE``
  seconds even if something still holds the pipes open;
- exit code, timeout and duration (monotonic clock) are recorded.

With ``Runner(sandbox=True)`` each run also gets a user of its own when repogym is root,
a throwaway HOME and TMPDIR, limits, and a clean-up of every process and file of that
user (:mod:`repogym.sandbox.users`); the trees a command must write are named by
``run(..., writable=[tree])``, the trees it must only read are made so by
:meth:`Runner.lock`. Where the machine allows, such a run is sealed in namespaces of its
own, seeing only the trees it is given, the system and its toolchain
(:mod:`repogym.sandbox.seal`), and held to the task's limits by a cgroup of its own
(:mod:`repogym.sandbox.cgroup`; issue 43).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repogym import progress
from repogym.models import CommandResult
from repogym.run import notfound as _notfound
from repogym.run.protocol import DEFAULT_OUTPUT_CAP, OUTPUT_GRACE, check_timeout
from repogym.sandbox import cgroup as _cgroup
from repogym.sandbox import measure_tree as _measure_tree
from repogym.sandbox import reaper as _reaper
from repogym.sandbox import scratch as _scratch
from repogym.sandbox import seal as _seal
from repogym.sandbox import users as _sandbox
from repogym.sandbox.output import Tail, wait_exit

__all__ = ["SAFE_VARIABLES", "Runner"]


@functools.cache
def _measurer() -> str:
    """The host's measurer of a benchmark's run, as the text its interpreter runs (-c):
    read once, when a perf grade first needs it."""
    return Path(_measure_tree.__file__).read_text(encoding="utf-8")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Runner:
    """Runs untrusted shell commands; see the module docstring.

    ``sandbox`` (on by default; ``REPOGYM_SANDBOX=off`` turns it off): as root, each
    run is a uid of its own (:mod:`repogym.sandbox.users`), which can write only what it is
    given: ``run(..., writable=[tree])`` hands ``tree`` to that uid for the run (chown,
    before the command starts) and nothing else is chowned, so the trees made by the
    grader stay the grader's and, with :meth:`lock`, read-only to it.
    Not root: the grader's own user, a throwaway HOME and TMPDIR, and a one-line notice.
    """

    pass_env: Sequence[str] = ()  # names of the grader's variables the task lets through
    set_env: Mapping[str, str] = field(default_factory=dict)  # fixed values from the task
    output_cap: int = DEFAULT_OUTPUT_CAP
    sandbox: bool = True
    # The task's `limits` for each command, a cgroup of its own (root only); None: none.
    limits: _cgroup.Caps | None = None

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
        writable: Sequence[Path] = (),
        collect: Sequence[Path] = (),
        network: bool = False,
        shown: str | None = None,
        readable: Sequence[Path] = (),
    ) -> CommandResult:
        """Run ``command`` in ``cwd``; ``env`` adds variables on top of the allowlist.

        ``timeout`` is in seconds: finite, positive and at most ``MAX_TIMEOUT``.
        ``writable``: trees the command must write, handed to its user for the run when
        that is a sandbox user (root, ``sandbox=True``); they stay that user's after it.
        ``readable``: trees besides ``cwd`` it must read (linked dependencies): a sealed
        command (:mod:`repogym.sandbox.seal`) sees nothing else of the host but the system
        and its toolchain. ``network`` (the command is the task's ``setup``): a sealed
        command has the machine's network only then. ``collect`` (the trees the grader
        reads afterwards) matters to a :class:`repogym.run.container.runner.ContainerRunner`
        only: here the trees are the host's. ``shown``: what the log and the result call
        the command, when what runs is more than the task's (the lines that start pytest
        with the base's configuration before it: issue 44).
        """
        check_timeout(timeout)
        _reaper.harden_grader()
        told = progress.current()
        if told is not None:
            told.command_started(shown or command, cwd)
        # A marker every process the command starts inherits, to find it again later.
        marker = f"{os.getpid()}-{next(_runs)}"
        with _sandbox.session(self.sandbox, writable) as session:
            # The session's HOME, TMPDIR... replace the grader's, and the task's replace those.
            allowed = self.environment({**os.environ, **session.env})
            full_env = {**session.env, **allowed, **(env or {}), _reaper.MARKER: marker}
            # The session's HOME and TMPDIR are the command's to write; a HOME the task
            # sets is only a variable (the view shows none of the machine's homes).
            own = [Path(session.env[k]) for k in ("HOME", "TMPDIR") if k in session.env]
            view = _seal.View(
                writable=[*writable, *own],
                readable=readable,
                cwd=Path(cwd),
                network=network,
                named=shown or "",
            )
            result = self._run(command, view, timeout, full_env, marker, session)
        if shown is not None:
            result = replace(result, command=shown)
        if told is not None:
            told.command_finished(result)
        return result

    def switches_user(self) -> bool:
        """Whether the commands run as a sandbox uid (root, sandbox on)."""
        return _sandbox.switches_user(self.sandbox)

    def add(self, tree: Path, paths: Sequence[str]) -> None:
        """The grader wrote ``paths`` into ``tree``: nothing to do, the tree is the host's
        (a container runner copies them into its copy)."""

    def close(self) -> None:
        """Nothing to release (a container runner removes its volumes)."""

    def lock(self, tree: Path) -> None:
        """Make ``tree`` read-only to the commands (a baseline copy they must not change):
        the grader's, group and others without write; not root, no write bit at all."""
        _sandbox.lock(tree)

    @property
    def where(self) -> str:
        return "host"

    @property
    def scope(self) -> str:
        return ""  # a host tree outlives the runner

    @property
    def record(self) -> Mapping[str, Any] | None:
        return None  # no environment of the task's: the report says none

    @property
    def writes_in_place(self) -> bool:
        return True

    @property
    def links_dependencies(self) -> bool:
        return True

    # An agent's episode on the host (RepoEnv): nothing to start, stop or copy back.
    def start(self, tree: Path) -> None:
        """Nothing to start: the agent's commands run in ``tree`` itself."""

    def stop(self) -> None:
        """Nothing runs on: each command's processes are killed as it ends."""

    def sync(self) -> str:
        """The tree is the host's already."""
        return ""

    def isolated(self) -> contextlib.AbstractContextManager[None]:
        """Nothing of the episode runs between its commands."""
        return contextlib.nullcontext()

    def run_agent(
        self, command: str, tree: Path, *, timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """The command as the sandbox user, with ``tree`` its to write for the run and
        read-only to every command after it (the tests a Submit runs cannot plant anything
        there for the next episode: issue 9), its bytecode in a directory of its own (a
        ``.pyc`` in the tree would be part of the submission)."""
        with _scratch.held("repogym-env-pycache-", commands=True) as holder:
            pycache = holder / "pycache"
            pycache.mkdir()
            variables = {"PYTHONPYCACHEPREFIX": str(pycache), **(env or {})}
            try:
                writable = [tree, pycache]
                return self.run(command, tree, timeout=timeout, env=variables, writable=writable)
            finally:
                if self.switches_user():
                    self.lock(tree)

    def found(self, result: CommandResult, key: str) -> CommandResult:
        """A program missing from the PATH the commands get, on this machine."""
        return _notfound.check(result, key, self.environment()["PATH"])

    def measured(self, command: str, what: str) -> str:
        """``command`` run by the measurer of ``what`` (``cpu``, ``instructions`` or
        ``peak_memory``): :mod:`repogym.sandbox.measure_tree`, by this interpreter."""
        python = shlex.quote(sys.executable)
        return f"exec {python} -I -c {shlex.quote(_measurer())} {what} {shlex.quote(command)}"

    def _run(
        self,
        command: str,
        view: _seal.View,
        timeout: float,
        full_env: dict[str, str],
        marker: str,
        session: _sandbox.Session,
    ) -> CommandResult:
        """The command sealed where it can be (a sandbox uid), else confined by Landlock
        where that can be had, in a cgroup of the task's limits where one can be made; see
        :meth:`run`."""
        argv, cwd, sealed, confine = ["/bin/sh", "-c", command], view.cwd, False, None
        if session.uid is not None and session.gid is not None:
            why = _seal.unavailable()
            if why is None:
                argv = _seal.argv(argv, view, uid=session.uid, gid=session.gid, env=full_env)
                cwd, sealed = Path("/"), True
            else:
                confine = _seal.confine(view, full_env, command, why)
        caps = self.limits if session.uid is not None else None
        with contextlib.ExitStack() as stack:
            if confine is not None:
                stack.callback(os.close, confine)
            group = stack.enter_context(_cgroup.group(caps)) if caps is not None else None
            enter = None if group is None else group.join()
            options = session.popen_options(sealed=sealed, enter=enter, confine=confine)
            result = self._spawn(command, argv, cwd, options, timeout, full_env, marker, session)
            if group is not None and group.went_over_memory():
                stderr = (
                    result.stderr.rstrip("\n")
                    + "\n"
                    + _cgroup.over_memory(group.limits.memory)
                    + "\n"
                )
                result = replace(result, stderr=stderr)
        return result

    def _spawn(
        self,
        command: str,
        argv: list[str],
        cwd: Path,
        options: dict[str, Any],  # how to start it as its session's user
        timeout: float,
        full_env: dict[str, str],
        marker: str,
        session: _sandbox.Session,
    ) -> CommandResult:
        start = time.monotonic()
        process: subprocess.Popen[bytes] | None = None
        timed_out = False
        # Everything from the spawn on is inside the try: a signal (raised as an exception
        # by the CLI) may arrive at any line, and the command must not outlive it. Spawned
        # but not yet returned, it is still our child, which kill_leftovers kills.
        try:
            process = _reaper.start(
                argv,
                spare=session.uid is None,  # swept by kill_leftovers below
                cwd=cwd,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                **options,
            )
            stdout, stderr = (
                Tail(process.stdout, self.output_cap),
                Tail(process.stderr, self.output_cap),
            )
            timed_out = not wait_exit(process, timeout)
        finally:
            duration = time.monotonic() - start
            if process is not None:
                _reaper.kill_group(process.pid)
                process.wait()  # at once if it exited; else it was just killed
            if session.uid is None:
                _reaper.kill_leftovers(marker)
            else:
                session.kill()
            if process is not None:
                # Only now: until its leftovers are gone, a command that starts in
                # another thread must not take them for the grader's own children.
                _reaper.forget(process)
        deadline = time.monotonic() + OUTPUT_GRACE
        stdout.join(deadline)
        stderr.join(deadline)
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


_runs = itertools.count(1)
