"""One command in a fresh container of the environment's image (issue 20); the runner that
gives it its trees is :class:`repogym.run.container.runner.ContainerRunner`.

The container is created with the command's trees mounted, attached (stdin, stdout,
stderr), started, waited on and, once what the grader reads is copied out, removed: see
:mod:`repogym.run.container.runner` for its confinement and why its duration is the engine's.

**A runner's first command** (:class:`Early`) does not wait for the keeper that holds the
runner's volumes to start: a container's start is most of what a command costs here
(``bench/environment.py``), and the two start side by side. Its container first unpacks
the command's new tree from its stdin with the image's tar, reads on to the end of its
stdin, which the grader closes only once the keeper holds the volumes (a tmpfs volume no
container mounts loses its files), writes one byte (``GO``) on its stdout and only then
runs the command. The byte is the first of the stdout (nothing of the command's runs
before it), it is taken off the output, and the time it arrives ends what is not the
command's own time. Without that byte (no tar in the image, the keeper failed) the
command never ran: the runner copies the tree in as it does for any other and runs it
again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.models import CommandResult
from repogym.run.container.archive import copy_out, tar
from repogym.run.container.engine import (
    SHELL,
    close_attach,
    confined,
    docker_module,
    duration,
    labels,
    raw_socket,
    wait_exit,
)
from repogym.sandbox.cgroup import over_memory
from repogym.sandbox.output import keep_tail
from repogym.sandbox.process import leave_stop_signals_to_the_main_thread
from repogym.task._environment import Limits

UID = 10001  # the user every command runs as in a container (no name in the image needed)
NAME = "repogym"
REPORT_ENTRIES = 10_000  # entries copied back of a tree other than the work tree
GRACE = 120.0  # seconds past a command's timeout after which its container is anyone's to remove
GO = b"\x1e"  # the first byte of an early command's stdout: what follows is the command's
# $1: the tree to unpack (or ""), $2: the command. tar's messages are not the command's:
# when it fails, no GO, and the runner copies the tree in another way.
# The stdin is read to its end after tar (which stops at the archive's end).
EARLY = (
    'if [ -n "$1" ]; then (umask 0 && exec tar -xf - -C "$1") 2>/dev/null || exit 125; fi; '
    'while read -r _; do :; done; printf "\\036" && exec /bin/sh -c "$2"'
)


@dataclass(slots=True)
class Setting:
    """What every command of a runner shares."""

    api: Any
    image: str
    limits: Limits
    cpuset: str
    networked: bool  # whether this command gets the network
    output_cap: int


@dataclass(slots=True)
class Early:
    """A runner's first command while its keeper starts (see the module docstring):
    ``tree`` is the new tree it unpacks from its stdin (None: none to copy), ``held``
    waits for the keeper and says whether it holds the volumes."""

    tree: Path | None
    held: Callable[[], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Exit:
    """How a command's container ended, as the engine tells it."""

    state: dict[str, Any]  # the container's State
    timed_out: bool  # it was killed at the timeout
    started: float  # when it was started (monotonic)


@dataclass(slots=True)
class Command:
    setting: Setting
    command: str
    cwd: Path
    timeout: float
    env: dict[str, str]
    mounts: list[Any]
    early: Early | None = None
    went: float | None = None  # when an early command's GO arrived (monotonic)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    cut: list[int] = field(default_factory=lambda: [0, 0])

    def go(self, collect: list[Path]) -> CommandResult | None:
        """Run it; None when an early command never reached the command."""
        ident = self._create()
        start = time.monotonic()
        try:
            exited = self._attend(ident, collect)
        finally:
            elapsed = time.monotonic() - start
            with contextlib.suppress(Exception):
                self.setting.api.remove_container(ident, force=True)
        return None if exited is None else self._result(exited, elapsed)

    def _create(self) -> str:
        """The command's container, created; its id."""
        api = self.setting.api
        host = api.create_host_config(
            mounts=self.mounts,
            cpuset_cpus=self.setting.cpuset,
            **confined(self.setting.limits, "bridge" if self.setting.networked else "none"),
            # The command is process 1 (no init that the engine's default may add), in a
            # cgroup namespace of its own: the perf grader's measurer is process 1 and
            # reads its own cgroup as its container's (issue 24).
            init=False,
            cgroupns="private",
        )
        argv = [self.command]
        if self.early is not None:
            argv = [EARLY, NAME, str(self.early.tree or ""), self.command]
        created = api.create_container(
            self.setting.image,
            entrypoint=SHELL,
            command=argv,
            user=f"{UID}:{UID}",
            working_dir=str(self.cwd),
            environment=self.env,
            stdin_open=True,  # with detach=False (the default), stdin is closed once detached
            labels=labels(self.timeout + GRACE),
            host_config=host,
        )
        ident: str = created["Id"]
        return ident

    def _attend(self, ident: str, collect: list[Path]) -> _Exit | None:
        """Start the container and read its output, hand an early command its tree, wait
        for the exit (a kill at the timeout) and copy ``collect`` out; None when an early
        command never reached the command."""
        api = self.setting.api
        attach = api.attach_socket(
            ident, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        reader = threading.Thread(target=self._read, args=(attach,), daemon=True)
        api.start(ident)
        started = time.monotonic()
        reader.start()
        if self.early is not None and not self._hand_over(attach, self.early):
            return None
        with contextlib.suppress(OSError, AttributeError):  # (closed by the reader)
            raw_socket(attach).shutdown(socket.SHUT_WR)  # stdin at its end, as /dev/null
        timed_out = self._wait(ident, reader)
        reader.join(5)
        if self.early is not None and self.went is None:
            return None
        state = api.inspect_container(ident)["State"]
        for tree in collect:
            # A tree beside the work tree is a report's directory: a few files.
            entries = None if tree == self.cwd else REPORT_ENTRIES
            self.stderr += copy_out(api, ident, tree, self.setting.limits.disk, entries).encode()
        return _Exit(state=state, timed_out=timed_out, started=started)

    def _wait(self, ident: str, reader: threading.Thread) -> bool:
        """Wait for the container's exit until the timeout, then kill it; whether it was
        killed."""
        api = self.setting.api
        deadline = time.monotonic() + self.timeout
        if wait_exit(api, ident, reader, deadline):
            return False
        with contextlib.suppress(Exception):
            api.kill(ident)
        api.wait(ident, timeout=60)
        return True

    def _result(self, exited: _Exit, elapsed: float) -> CommandResult:
        """What the command did; ``elapsed``: from the container's creation to its removal,
        its duration when the engine recorded none."""
        state = exited.state
        own = duration(state)
        if own is not None and self.went is not None:
            # The unpack and the wait were not its.
            own = max(0.0, own - (self.went - exited.started))
        if state.get("OOMKilled"):
            self.stderr += f"\n{over_memory(self.setting.limits.memory)}\n".encode()
        return CommandResult(
            command=self.command,
            exit_code=None if exited.timed_out else int(state.get("ExitCode", -1)),
            timed_out=exited.timed_out,
            duration=own if own is not None else elapsed,
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=self.stderr.decode("utf-8", "replace"),
            stdout_cut=self.cut[0],
            stderr_cut=self.cut[1],
        )

    def _hand_over(self, attach: Any, early: Early) -> bool:
        """Send the new tree on the container's stdin, wait for the keeper; whether the
        command may go on (the caller then closes the stdin)."""
        sent = True
        if early.tree is not None:
            try:
                tar(early.tree, UID, into=raw_socket(attach))
            except (OSError, AttributeError):  # tar failed, or the container's end closed
                sent = False
        return early.held() and sent

    def _read(self, attach: Any) -> None:
        leave_stop_signals_to_the_main_thread()
        frames = docker_module().utils.socket.frames_iter(attach, tty=False)
        cap = self.setting.output_cap
        waiting = self.early is not None  # for GO, the first byte of the stdout
        with contextlib.suppress(Exception):
            for stream, data in frames:
                if stream == 2:
                    self.cut[1] += keep_tail(self.stderr, data, cap)
                    continue
                if waiting and data:
                    waiting = False
                    if data[:1] == GO:
                        self.went = time.monotonic()
                        data = data[1:]
                self.cut[0] += keep_tail(self.stdout, data, cap)
        close_attach(attach)
