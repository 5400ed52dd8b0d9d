"""Who a command runs as, and what it finds and leaves behind (issue 9).

When repogym runs as root (the Action's container, CI), each run of a command gets an
unprivileged uid of its own, a *slot*:

- **The ids.** Slot ``n`` (0 ≤ n < ``SLOTS`` = 64) is uid = gid = ``UID_BASE`` + n, where
  ``UID_BASE`` is 59800, or the uid of a user named ``repogym`` when the system has one.
  No passwd entry is needed (``USER`` and ``LOGNAME`` say ``repogym``); an id that names
  another user or group is skipped, so the clean-up never touches a real account. The
  command has no supplementary groups.
- **One run per slot.** The clean-up kills every process of the uid, so two runs (threads
  of one grader, or several graders on one machine, as RL rollouts do) must never share
  one: a run holds an ``flock`` on ``slot-<uid>.lock`` in ``/run/repogym`` (or
  ``$TMPDIR/repogym-slots`` without ``/run``), a directory that must be root's with mode
  0700, and is refused otherwise. With all slots taken, a run waits for one.
- **A fresh start.** A throwaway ``HOME``, ``TMPDIR`` and bytecode cache, the slot's,
  mode 0700, removed afterwards; limits on processes (``RLIMIT_NPROC``, which counts the
  threads of the uid: a fork bomb stops there) and open files; ``no_new_privs``, so a
  set-uid program cannot take the command to another uid.
- **Nothing left.** Before and after the run, every process of the uid is killed
  (:func:`repogym.sandbox.reaper.kill_uid`) and its files at the top of the world-writable
  directories (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``/run/lock``) and its System V IPC
  objects are removed (:mod:`repogym.sandbox.leftovers`), so nothing it started or planted
  reaches the next run.

When repogym is not root, commands run as its own user (with a throwaway ``HOME`` and
``TMPDIR`` still), and one line on stderr says so, once per process.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import grp
import os
import pwd
import resource
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import SandboxError
from repogym.sandbox import landlock as _landlock
from repogym.sandbox import leftovers as _leftovers
from repogym.sandbox import reaper as _reaper
from repogym.sandbox import scratch as _scratch
from repogym.sandbox import seal as _seal

NAME = "repogym"
UID_BASE = 59800
SLOTS = 64
# Threads of the uid, all processes of a run together: jest runs a worker per core, of
# about 11 threads each (node's own and libuv's), pytest-xdist a process per core.
NPROC = max(1024, 32 * (os.cpu_count() or 1))
NOFILE = 4096
SWITCH = "REPOGYM_SANDBOX"  # "off": no sandbox user even as root (docs/security.md)
NOT_ROOT_NOTICE = (
    "repogym: not running as root, so the submission's commands run as this user: they can"
    " read this user's files and processes and write its files; run as root (e.g. in a"
    " container) for the full protections, see docs/security.md"
)
_PR_SET_NO_NEW_PRIVS = 38
_noticed = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One run's place: who the command runs as, and the variables that say where."""

    uid: int | None  # None: the grader's own user
    gid: int | None
    env: dict[str, str] = field(default_factory=dict)  # over the grader's, before the allowlist

    def popen_options(
        self,
        *,
        sealed: bool = False,
        enter: Callable[[], None] | None = None,
        confine: int | None = None,
    ) -> dict[str, Any]:
        """What ``subprocess.Popen`` needs to start the command as this session's user;
        ``sealed``: the program started is the seal (repogym.sandbox.seal), which runs as
        root and drops to the uid itself; ``enter``: what the child runs before exec (it
        joins the command's cgroup); ``confine``: a Landlock ruleset the child restricts
        itself to (repogym.sandbox.landlock)."""
        if self.uid is None:
            return {}

        def prepare() -> None:
            _limit()
            _leftovers.own_session_keyring()
            if enter is not None:
                enter()
            if confine is not None:
                _landlock.restrict(confine)  # after _limit's no_new_privs

        # preexec_fn runs in the child after _posixsubprocess has set the uid and gid,
        # so the limits it sets are the sandbox's own, and lowered hard limits stay (the
        # seal's setpriv keeps them when it drops to the uid).
        _libc()  # loaded here: a dlopen between fork and exec may deadlock
        if sealed:
            return {"preexec_fn": prepare}
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "preexec_fn": prepare}

    def kill(self) -> None:
        """Kill every process of this session's uid (nothing when it has none)."""
        if self.uid is not None and self.gid is not None:
            _reaper.kill_uid(self.uid, self.gid)


@contextlib.contextmanager
def session(sandbox: bool, writable: Sequence[Path] = ()) -> Iterator[Session]:
    """A run's :class:`Session`, and its clean-up when the run ends.

    ``sandbox`` off (or ``REPOGYM_SANDBOX=off`` in the grader's environment): the
    grader's user, HOME and TMPDIR. On and root: a slot of its own, to which the ``writable``
    trees are handed (see :func:`give`). On and not root: the grader's user, announced
    once (:data:`NOT_ROOT_NOTICE`), with a throwaway HOME and TMPDIR.
    """
    if not _enabled(sandbox):
        yield Session(uid=None, gid=None)
        return
    with _scratch.held("repogym-run-") as scratch:
        # No bytecode cache of ours: commands run in fresh copies, which hold no stale
        # .pyc, and the standard library's compiled files are read where they are.
        places = {name: Path(scratch, name) for name in ("home", "tmp")}
        for place in places.values():
            place.mkdir(mode=0o700)
        env = {"HOME": str(places["home"]), "TMPDIR": str(places["tmp"])}
        if not _can_switch_user():
            _notice()
            yield Session(uid=None, gid=None, env=env)
            return
        with _slot() as (uid, lock):
            Path(scratch).chmod(_seal.holder_mode())  # the slot may go through, not list
            for place in places.values():
                os.chown(place, uid, uid)
            ours = Session(uid=uid, gid=uid, env=env | {"USER": NAME, "LOGNAME": NAME})
            # The lock file says "1" from here until the clean-up is done: a grader killed
            # midway leaves it so, and the next run of the slot cleans up first.
            if os.pread(lock, 1, 0):
                _clear(ours)
            os.pwrite(lock, b"1", 0)
            for tree in writable:
                give(tree, uid, uid)
            try:
                yield ours
            finally:
                _clear(ours)
                os.ftruncate(lock, 0)


def _clear(session: Session) -> None:
    session.kill()
    assert session.uid is not None
    _leftovers.sweep(session.uid)


def switches_user(sandbox: bool = True) -> bool:
    """Whether a run with ``sandbox`` runs as a sandbox uid (root, not switched off)."""
    return _enabled(sandbox) and _can_switch_user()


def _enabled(sandbox: bool) -> bool:
    return sandbox and os.environ.get(SWITCH, "").lower() not in ("off", "0", "false")


def _can_switch_user() -> bool:
    # Linux: the clean-up finds the uid's processes in /proc. Root in a user namespace
    # that maps no other id (unshare -r) cannot setuid either.
    return (
        sys.platform == "linux"
        and os.geteuid() == 0
        and _mapped(_base(), "uid")
        and _mapped(_base(), "gid")
    )


def _mapped(first: int, kind: str) -> bool:
    try:
        lines = Path(f"/proc/self/{kind}_map").read_text().splitlines()
    except OSError:
        return True  # not Linux, or no user namespaces: every id is there
    last = first + SLOTS - 1
    for line in lines:
        inside, _, count = (int(n) for n in line.split())
        if inside <= first and last < inside + count:
            return True
    return False


def _notice() -> None:
    # Once per process: the flag is the lock itself, never released.
    if _noticed.acquire(blocking=False):
        print(NOT_ROOT_NOTICE, file=sys.stderr, flush=True)


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _limit() -> None:
    """In the child, as the sandbox uid, before exec (keep it to calls that allocate
    nothing shared: this runs between fork and exec)."""
    for which, figure in ((resource.RLIMIT_NPROC, NPROC), (resource.RLIMIT_NOFILE, NOFILE)):
        _, hard = resource.getrlimit(which)
        cap = figure if hard == resource.RLIM_INFINITY else min(figure, hard)
        resource.setrlimit(which, (cap, cap))
    _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


# The slots


@functools.cache
def _base() -> int:
    """The first uid of the slots: the uid of a user named repogym, else ``UID_BASE``."""
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        return UID_BASE
    if entry.pw_uid == 0:
        raise SandboxError(f"repogym: the user {NAME!r} is root; give it an unprivileged uid")
    return entry.pw_uid


@functools.cache
def _ids() -> list[int]:
    """The uids of the slots, those that name another user or group left out."""
    return [_base() + n for n in range(SLOTS) if _free(_base() + n)]


def first_uid() -> int:
    """The uid of the first slot, the one an idle machine gives a run: how messages name
    the sandbox user (repogym.run.preflight)."""
    ids = _ids()
    return ids[0] if ids else _base()


def _free(uid: int) -> bool:
    """Whether ``uid`` (and the gid of that number) names no user or group but ours."""
    names = set()
    with contextlib.suppress(KeyError):
        names.add(pwd.getpwuid(uid).pw_name)
    with contextlib.suppress(KeyError):
        names.add(grp.getgrgid(uid).gr_name)
    return names <= {NAME}


@contextlib.contextmanager
def _slot() -> Iterator[tuple[int, int]]:
    """Hold a slot for the run: its uid, locked against every other run on the machine,
    and the fd of its lock file."""
    ids = _ids()
    if not ids:
        raise SandboxError(
            f"repogym: every uid from {_base()} to {_base() + SLOTS - 1} names a user or group"
            f" other than {NAME!r}; free some, or give the user {NAME!r} a uid before a free range"
        )
    directory = _lock_directory()
    try:
        held = next(filter(None, (_try_lock(directory, uid, fcntl.LOCK_NB) for uid in ids)), None)
        if held is None:  # all taken: wait for one, spread by process
            held = _try_lock(directory, ids[os.getpid() % len(ids)], 0)
    finally:
        os.close(directory)
    assert held is not None
    uid, fd = held
    try:
        yield uid, fd
    finally:
        os.close(fd)  # releases the flock


def _try_lock(directory: int, uid: int, flags: int) -> tuple[int, int] | None:
    fd = os.open(
        f"slot-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=directory
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | flags)
    except BlockingIOError:
        os.close(fd)
        return None
    return uid, fd


def lock_directory_path() -> Path:
    run = Path("/run")
    return run / NAME if run.is_dir() else Path(tempfile.gettempdir(), f"{NAME}-slots")


def _lock_directory() -> int:
    """An fd of the directory of slot locks, made if missing, refused unless root's 0700:
    anyone else who can write there could hold or fake a slot."""
    path = lock_directory_path()
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        raise SandboxError(
            f"repogym: {path} must be a directory owned by root with mode 0700"
            f" ({error.strerror}); remove it and run again"
        ) from None
    info = os.fstat(fd)
    if info.st_uid != 0 or info.st_mode & 0o077:
        os.close(fd)
        raise SandboxError(
            f"repogym: {path} must be a directory owned by root with mode 0700 (it is uid"
            f" {info.st_uid}'s, mode {stat.S_IMODE(info.st_mode):04o}); remove it and run again"
        )
    return fd


def private_directory(name: str) -> Path:
    """A directory ``name`` of root's, mode 0700, in the slot locks' directory (checked
    as it is): where what the grading processes of this machine share lies out of every
    command's reach (repogym.graders.tests.machine_cache)."""
    fd = _lock_directory()
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode=0o700, dir_fd=fd)
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    finally:
        os.close(fd)
    path = lock_directory_path() / name
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        raise SandboxError(
            f"repogym: {path} must be a directory owned by root with mode 0700; remove it "
            "and run again"
        )
    return path


# Files


def give(tree: Path, uid: int, gid: int) -> None:
    """Hand ``tree`` to ``uid`` for a run that must write it: its directories and its
    files, but no symlink and no file with another hard link (one the last slot made
    to a file outside, where ``fs.protected_hardlinks`` is off, must not be given away).
    """
    _walk(tree, lambda path, info: _give(path, info, uid, gid))


def _give(path: str, info: os.stat_result, uid: int, gid: int) -> None:
    if stat.S_ISLNK(info.st_mode) or (not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1):
        return
    if (info.st_uid, info.st_gid) != (uid, gid):
        os.chown(path, uid, gid, follow_symlinks=False)  # clears set-uid and set-gid bits


def lock(tree: Path) -> None:
    """Make ``tree`` read-only to the commands: as root, the grader's, with no write bit
    for group and others (directories a+rx, files a+r); as another user, no write bit at
    all, so that at least an accidental write fails (``tempfile.TemporaryDirectory``
    still removes it: it restores the bits it needs)."""
    root = os.geteuid() == 0
    _walk(tree, lambda path, info: _lock(path, info, root))


def _lock(path: str, info: os.stat_result, root: bool) -> None:
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode)
    if root:
        if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(path, os.geteuid(), os.getegid(), follow_symlinks=False)
            mode &= ~0o6000  # the chown cleared the set-id bits
        readable = 0o555 if stat.S_ISDIR(info.st_mode) else 0o444
        wanted = (mode | readable) & ~0o022
    else:
        wanted = mode & ~0o222
    if wanted != mode:
        Path(path).chmod(wanted, follow_symlinks=False)


def _walk(tree: Path, visit: Callable[[str, os.stat_result], None]) -> None:
    """``visit`` every entry of ``tree`` (itself too), parents before their children,
    following no symlink. (Strings and scandir: a tree may have 100,000 files.)"""
    visit(str(tree), tree.lstat())
    pending = [str(tree)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                visit(entry.path, entry.stat(follow_symlinks=False))
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
