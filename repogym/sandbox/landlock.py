"""Landlock: what a command may open, where the namespaces of the seal are refused (issue 43).

The Action's own container is the place this is for: Docker's default seccomp profile and
capabilities refuse every namespace (so ``bwrap`` cannot start) and its cgroups are
read-only, but the kernel's Landlock (an unprivileged access control, here ABI 7) works
there. A command confined by it reaches only:

- the system and its toolchain (the same directories the seal shows), its ``cwd`` and
  the trees it reads: read and execute;
- the trees it writes, its own ``HOME`` and ``TMPDIR``: everything;
- the devices of :data:`DEVICES` (``/dev/null``, ``/dev/urandom``, the terminals; their
  own modes still apply), not ``/dev`` as a whole, and ``/dev/shm`` (POSIX semaphores and
  shared memory live there: ``multiprocessing`` needs it; it may not list it, the
  grader's copies are elsewhere, and what the command leaves there is removed after it,
  :func:`repogym.sandbox.leftovers.sweep`);
- ``/proc`` and ``/sys``: read (another process's memory, descriptors and environment stay
  closed: Landlock refuses to trace a process outside the command's domain);

and nothing else: not ``/tmp`` (its ``TMPDIR`` is its own), no source repository, no
other grade's copy, no home. From ABI 6 on it cannot signal a process outside its domain
nor connect to an abstract UNIX socket made outside it. What Landlock does not cover
(the network, System V IPC, the view of other processes) is in docs/security.md; System V
objects the command leaves are removed after it (:mod:`repogym.sandbox.leftovers`).

Written by hand over the three system calls: the Python bindings on the registry are
young, and the split this needs is not theirs to give: the ruleset is built by the
grader before the fork, and the forked child makes one call before exec
(:func:`restrict`), as little as can run between fork and exec.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import struct
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

__all__ = ["abi", "restrict", "ruleset", "unavailable"]

# System call numbers: the same on every architecture (added after the tables merged).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1 = (1 << 13) - 1  # execute .. make_sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
# ABI 6: no signal to, no abstract UNIX socket of, a process outside the domain.
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# Opened, read and written (their modes still apply); nothing made, removed or listed in
# /dev: a right given to /dev would reach /dev/shm beneath it too (rights add up).
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
)
SHARED_MEMORY = ("/dev/shm",)  # anything but listing it
OBSERVED = ("/proc", "/sys")  # read


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def abi() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (or refuses the call)."""
    if sys.platform != "linux":
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def unavailable() -> str | None:
    """Why commands cannot be confined by Landlock here, or None when they can."""
    if abi() > 0:
        return None
    if sys.platform != "linux":
        return "Landlock is Linux's"
    return "the kernel offers no Landlock (not built in, not enabled, or refused by seccomp)"


def _handled(version: int) -> int:
    rights = _ABI1
    for bit, since in ((REFER, 2), (TRUNCATE, 3), (IOCTL_DEV, 5)):
        if version >= since:
            rights |= bit
    return rights


def ruleset(read: Iterable[str], write: Iterable[str], *, opened: Iterable[str] = ()) -> int:
    """A ruleset's descriptor allowing ``read`` (read and execute) and ``write``
    (everything) beneath each path, ``opened`` (read, execute and open for writing what
    is there: a FIFO), the devices and what :data:`OBSERVED` shows; the caller gives it
    to :func:`restrict` in the child, then closes it."""
    version = abi()
    handled = _handled(version)
    if version >= 6:
        attr = struct.pack("QQQ", handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    else:
        attr = struct.pack("Q", handled)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    fd = int(_libc().syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), 0))
    if fd < 0:
        _raise("landlock_create_ruleset")
    try:
        rules = [(p, READ) for p in (*read, *OBSERVED)]
        rules += [(p, READ | WRITE_FILE) for p in opened]
        rules += [(p, READ_FILE | WRITE_FILE | IOCTL_DEV) for p in DEVICES]
        rules += [(p, handled & ~READ_DIR) for p in SHARED_MEMORY]
        rules += [(p, handled) for p in write]
        for path, rights in rules:
            _allow(fd, path, rights & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _allow(fd: int, path: str, rights: int) -> None:
    try:
        beneath = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing there to allow
    try:
        if not Path(f"/proc/self/fd/{beneath}").is_dir():
            rights &= _FILE_ONLY
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, beneath), 12)
        if _libc().syscall(_ADD_RULE, fd, _RULE_PATH_BENEATH, attr, 0) != 0:
            _raise(f"landlock_add_rule {path}")
    finally:
        os.close(beneath)


def restrict(fd: int) -> None:
    """In the child, after ``no_new_privs`` and before exec: confine it to ``fd``'s rules.
    A failure raises, so the command does not start unconfined."""
    if _libc().syscall(_RESTRICT_SELF, fd, 0) != 0:
        _raise("landlock_restrict_self")


def _raise(call: str) -> NoReturn:
    number = ctypes.get_errno()
    raise OSError(number, f"{call}: {os.strerror(number) or errno.errorcode.get(number)}")
