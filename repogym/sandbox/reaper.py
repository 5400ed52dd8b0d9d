"""Starting, finding and killing the processes of untrusted commands (Linux ``/proc``).

The runner (:mod:`repogym.run.host`) starts every command through :func:`start` and, when a
command ends, calls :func:`kill_uid` (when the command ran as a sandbox uid of its own)
and :func:`kill_leftovers`. Both go round until nothing is left, because what they
kill may be forking meanwhile (a fork bomb races the killer).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "REPOGYM_RUN"  # a variable every process of a command inherits, naming its run
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 1000  # of kill(-1) per clean-up: each one kills all there is, so 2 are usual

# Starting a command and sweeping our children for leftovers exclude each other: a sweep
# in one thread must not take another thread's command, started but not yet tracked,
# for a leftover.
_lock = threading.Lock()
_tracked: set[int] = set()  # pids of commands still running, which no sweep may kill
_started: dict[int, int] = {}  # a tracked command's pid -> its start time (clock ticks)
# The grader's own children (a pool's workers, a training loop's helpers), found as a
# command starts: pid -> start time, so a reused pid is no longer spared.
_spared: dict[int, int] = {}
# What a sweep took for a leftover (pid -> start time): never spared later, should it
# have outlived the sweep.
_condemned: dict[int, int] = {}
_hardened = False


def harden_grader() -> None:
    """Once per process, before the first command: make this process a child subreaper
    (orphans of our commands re-parent to us, where :func:`kill_leftovers` finds them)
    and not dumpable, which makes ``/proc/<our pid>/environ`` (the grader's secrets)
    and ``/proc/<our pid>/mem`` root's, so a command of the same uid cannot read them.

    The cost: no core dumps of the grader, and a debugger must run as root to attach.
    """
    global _hardened
    if _hardened:
        return
    _hardened = True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: process-group killing still applies
        pass
    not_dumpable()


def not_dumpable() -> None:
    """Make ``/proc/<our pid>/environ`` and ``mem`` root's (Linux): a process of the same
    uid (a command run as the grader's own user) cannot read our secrets there. Kept by
    the processes we fork."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def start(args: Sequence[str], *, spare: bool = False, **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(args, **options)``, tracked until :func:`forget`. With
    ``spare`` (a command whose leftovers :func:`kill_leftovers` will sweep), the children
    this process already has are first taken for its own, which no sweep kills
    (:func:`_spare`)."""
    with _lock:
        if spare:
            _spare()
        process = subprocess.Popen(args, **options)
        _tracked.add(process.pid)
        _started[process.pid] = _start_time(process.pid) or 0
    return process


def forget(process: subprocess.Popen[bytes]) -> None:
    """``process`` has exited and was reaped: sweeps no longer need to spare its pid."""
    _tracked.discard(process.pid)
    _started.pop(process.pid, None)


def _spare() -> None:
    """Remember this process's own children: those that started before every command
    still running (a child that started after one may be its orphan, re-parented to us).
    A process that grades in-process (``grade()`` from a training loop, a batch's one
    worker) keeps the children it started before, its pool's workers and the resource
    tracker of ``multiprocessing`` among them; one it starts while a command runs is
    taken for a leftover."""
    me = os.getpid()
    oldest = min(_started.values(), default=None)
    for pid, condemned_at in list(_condemned.items()):
        if _start_time(pid) != condemned_at:
            del _condemned[pid]  # gone: its pid may be anyone's now
    for process in _processes():
        if process.parent != me or process.pid in _tracked or process.pid in _spared:
            continue
        began = _start_time(process.pid)
        if began is None or (oldest is not None and began >= oldest):
            continue
        if _condemned.get(process.pid) == began:
            continue
        if not _carries(process.pid, f"{MARKER}=".encode(), prefix=True):
            _spared[process.pid] = began


def _is_spared(pid: int) -> bool:
    began = _spared.get(pid)
    if began is not None and began == _start_time(pid):
        return True
    _spared.pop(pid, None)  # gone, or its pid taken by another process
    return False


def _start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat``'s 22nd field,
    counted after the command name, which may hold spaces and parentheses)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether a process ``pid`` is on the machine (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class _Process:
    pid: int
    parent: int
    state: bytes  # b"Z" for a zombie: dead, waiting for its parent to reap it
    uids: tuple[int, ...]  # real, effective, saved, filesystem


def _processes() -> list[_Process]:
    """Every process we can see, from ``/proc/<pid>/status``: one read each, and readable
    by all, even for a process that made itself not dumpable to hide."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (process := _status(int(entry.name))):
            found.append(process)
    return found


def _status(pid: int) -> _Process | None:
    try:
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY)
    except OSError:
        return None  # gone meanwhile
    try:
        text = os.read(fd, 65536)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return _Process(
            pid=pid,
            parent=int(_field(text, b"\nPPid:")),
            state=_field(text, b"\nState:").split()[0],
            uids=tuple(int(uid) for uid in _field(text, b"\nUid:").split()),
        )
    except (IndexError, ValueError):
        return None


def _field(status: bytes, name: bytes) -> bytes:
    start = status.index(name) + len(name)
    return status[start : status.index(b"\n", start)]


def kill_uid(uid: int, gid: int) -> None:
    """Kill every process of ``uid``: ``kill(-1, SIGKILL)`` from a child that runs as
    ``uid`` (it may signal exactly the processes of its uid), until ``/proc`` shows none;
    and reap those that became our children (we are their subreaper).
    """
    # kill(-1) from root kills every process on the machine: the uid is checked here,
    # Popen does not exec if setting it fails, and the killer checks again that it does
    # not own "/" (with a builtin: under RLIMIT_NPROC a fork of the killer may fail).
    if uid <= 0 or uid == os.getuid():
        raise ValueError(f"refusing to kill every process of uid {uid}")
    killer = "[ -O / ] || kill -s KILL -- -1"
    me = os.getpid()
    for _ in range(_KILL_ROUNDS):
        theirs = [p for p in _processes() if uid in p.uids]
        for zombie in theirs:
            if zombie.state == b"Z" and zombie.parent == me:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(zombie.pid, 0)
        if all(p.state in (b"Z", b"X") for p in theirs):
            return
        killing = start(
            ["/bin/sh", "-c", killer],
            user=uid,
            group=gid,
            extra_groups=[],
            env={"PATH": os.defpath},
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        killing.wait()
        forget(killing)
    raise RuntimeError(f"processes of uid {uid} still run after {_KILL_ROUNDS} rounds of kill")


def _carries(pid: int, marker: bytes, *, prefix: bool = False) -> bool:
    """Whether ``pid``'s environment holds ``marker`` (a variable, or with ``prefix`` one
    that starts so: any run's)."""
    try:
        variables = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    if prefix:
        return any(v.startswith(marker) for v in variables)
    return marker in variables


def kill_leftovers(marker: str) -> None:
    """Kill (and reap, when ours) every process a command left behind: those that still
    carry its marker, and orphans re-parented to us (a daemon may have cleared its
    environment).

    Every child of ours that is neither a command still running nor one of our own
    (:func:`_spare`) counts as left behind, so a process that grades as its own user
    must not start other children while a command runs (a run as a uid of its own needs
    :func:`kill_uid` alone).
    """
    if not Path("/proc").is_dir():
        return
    me = os.getpid()
    tag = f"{MARKER}={marker}".encode()
    for _ in range(50):  # daemons may fork while we kill; go round until none is left
        with _lock:
            victims = [
                p.pid
                for p in _processes()
                if p.pid != me
                and p.pid not in _tracked
                and ((p.parent == me and not _is_spared(p.pid)) or _carries(p.pid, tag))
            ]
            for pid in victims:
                _condemned[pid] = _start_time(pid) or 0
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not victims:
            return
        for pid in victims:
            # Not our child: init or its own parent reaps it.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
