"""The task's ``limits`` on the host: a cgroup of its own for each command (issue 43).

A command run on the host as a sandbox uid is put, before it starts, into a cgroup made
for it below the grader's own: ``memory`` (no swap on top where the kernel accounts it),
``pids`` and ``cpu`` from the task's ``limits``, as Docker applies them to an
environment's container. When the kernel's OOM killer stops the command for going over
``limits.memory``, the run says so in its stderr, as a container's does. The cgroup is
removed when the command's processes are gone.

Both layouts are handled: cgroup v2 (one hierarchy; its controllers must be enabled for
the grader's cgroup's children) and v1 (a hierarchy per controller, as on this project's
CI machines). Where the grader cannot make cgroups (not root, ``/sys/fs/cgroup``
read-only, as in the Action's own container), :func:`unavailable` says why and commands
run without these limits (docs/security.md).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import secrets
import select
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from repogym.sandbox.reaper import alive

ROOT = Path("/sys/fs/cgroup")
PERIOD = 100_000  # µs of the CPU quota's period, Docker's
_names = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Caps:
    """What one command may use: the task's ``limits`` (repogym.task), as numbers."""

    memory: int  # bytes
    pids: int
    cpus: float


_lock = threading.Lock()


def over_memory(limit: int) -> str:
    """What a command's output ends with when the kernel killed it for going over its
    memory limit of ``limit`` bytes, on the host and in a container alike."""
    return (
        "repogym: killed: the command went over its memory limit "
        f"({limit >> 20} MiB, limits.memory)"
    )


@dataclass(slots=True)
class Group:
    """One command's cgroup: a directory per hierarchy it was made in."""

    limits: Caps
    directories: list[Path] = field(default_factory=list)
    _procs: list[int] = field(default_factory=list)  # fds of cgroup.procs, for the child

    def join(self) -> Callable[[], None]:
        """What the child runs before exec to move itself in (``0``: the writer)."""
        fds = tuple(self._procs)

        def enter() -> None:
            for fd in fds:
                os.write(fd, b"0")

        return enter

    def went_over_memory(self) -> bool:
        """Whether the kernel's OOM killer killed a process of the command for its limit."""
        for directory in self.directories:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError, ValueError):
                    for line in (directory / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
        return False

    def remove(self) -> None:
        """Remove the cgroup (its processes are gone by now: the runner killed them)."""
        for fd in self._procs:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._procs.clear()
        for directory in self.directories:
            with contextlib.suppress(OSError):
                _kill_all(directory)
            for _ in range(100):  # a process just killed may take a moment to leave
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _wait_empty(directory)
        self.directories.clear()


@contextlib.contextmanager
def group(limits: Caps) -> Iterator[Group | None]:
    """A cgroup with ``limits`` for one command, or None where none can be made."""
    if unavailable() is not None:
        yield None
        return
    made = Group(limits)
    try:
        layout = _layout(limits)
        with _lock:
            name = f"repogym-{os.getpid()}-{next(_names)}-{secrets.token_hex(4)}"
            _sweep_once(tuple(layout))
        for hierarchy, settings in layout.items():
            directory = hierarchy / name
            directory.mkdir(mode=0o755)
            made.directories.append(directory)
            for key, value in settings.items():
                with contextlib.suppress(FileNotFoundError):  # no swap accounting
                    (directory / key).write_text(value)
            made._procs.append(os.open(directory / "cgroup.procs", os.O_WRONLY))
        yield made
    finally:
        made.remove()


@functools.cache
def _sweep_once(hierarchies: tuple[Path, ...]) -> None:
    """Remove the cgroups that graders gone from this machine left (a grader killed
    while its command ran cannot remove its own): once a process, before its first.
    A cgroup with a process in it is not removed (the kernel refuses)."""
    for hierarchy in hierarchies:
        for directory in hierarchy.glob("repogym-*-*"):
            owner = directory.name.split("-")[1]
            if owner.isdigit() and not alive(int(owner)):
                with contextlib.suppress(OSError):
                    directory.rmdir()


def _layout(limits: Caps) -> dict[Path, dict[str, str]]:
    """Each hierarchy to make the cgroup in, with what to write there."""
    quota = str(max(1000, int(limits.cpus * PERIOD)))
    memory, pids = str(limits.memory), str(limits.pids)
    v2 = _v2()
    if v2 is not None:
        return {
            v2: {
                "memory.max": memory,
                "memory.swap.max": "0",
                "pids.max": pids,
                "cpu.max": f"{quota} {PERIOD}",
            }
        }
    found = _v1()
    layout: dict[Path, dict[str, str]] = {
        found["memory"]: {
            "memory.limit_in_bytes": memory,
            "memory.memsw.limit_in_bytes": memory,
        },
        found["pids"]: {"pids.max": pids},
    }
    if "cpu" in found:
        layout[found["cpu"]] = {"cpu.cfs_period_us": str(PERIOD), "cpu.cfs_quota_us": quota}
    return layout


@functools.cache
def unavailable() -> str | None:
    """Why commands cannot be given a cgroup here, or None when they can."""
    if os.geteuid() != 0:
        return "not root"
    try:
        hierarchies = [_v2()] if _v2() is not None else list(_v1().values())
    except LookupError as missing:
        return str(missing)
    for hierarchy in hierarchies:
        assert hierarchy is not None
        if not os.access(hierarchy, os.W_OK):
            return f"{hierarchy} is read-only"
    return None


@functools.cache
def _own() -> dict[str, str]:
    """This process's cgroup per controller (``""``: the v2 hierarchy)."""
    found = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


@functools.cache
def _v2() -> Path | None:
    """Our cgroup in a v2 hierarchy whose children get memory, pids and cpu; None
    when the machine keeps those controllers in v1 hierarchies."""
    own = _own()
    if set(own) != {""}:
        return None  # a hybrid or v1 machine: the controllers are in v1 hierarchies
    here = ROOT / own[""].lstrip("/")
    try:
        enabled = (here / "cgroup.subtree_control").read_text().split()
        offered = (here / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    wanted = ("memory", "pids", "cpu")
    if not set(wanted) <= set(enabled):
        # Controllers go to children only from a cgroup with no process of its own (the
        # "no internal processes" rule); a grader in the root cgroup may enable them.
        with contextlib.suppress(OSError):
            for controller in wanted:
                if controller in offered:
                    (here / "cgroup.subtree_control").write_text(f"+{controller}")
            enabled = (here / "cgroup.subtree_control").read_text().split()
    return here if {"memory", "pids"} <= set(enabled) else None


@functools.cache
def _v1() -> dict[str, Path]:
    """Our cgroup in each v1 hierarchy of memory, pids and cpu (cpu may be missing)."""
    own, found = _own(), dict[str, Path]()
    for controller in ("memory", "pids", "cpu"):
        if controller not in own:
            continue
        for mounted in (controller, "cpu,cpuacct" if controller == "cpu" else controller):
            here = ROOT / mounted / own[controller].lstrip("/")
            if here.is_dir():
                found[controller] = here
                break
    for needed in ("memory", "pids"):
        if needed not in found:
            raise LookupError(f"no {needed} controller in {ROOT}")
    return found


def _kill_all(directory: Path) -> None:
    kill = directory / "cgroup.kill"
    if kill.exists():
        kill.write_text("1")
        return
    for pid in (directory / "cgroup.procs").read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), 9)


def _wait_empty(directory: Path) -> None:
    """Wait a little for the cgroup to empty (its processes' exits are racing us)."""
    events = directory / "cgroup.events"
    try:
        if events.exists():
            fd = os.open(events, os.O_RDONLY)
            try:
                poller = select.poll()
                poller.register(fd, select.POLLPRI)
                poller.poll(50)
            finally:
                os.close(fd)
        else:
            os.sched_yield()
    except OSError:
        pass
