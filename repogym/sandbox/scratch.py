"""The directories a grader makes for a grade, and what a killed grader left of them.

A grader removes what it makes when the grade ends (or at exit), but one killed by a
signal it cannot catch (SIGKILL, the kernel's OOM killer, a batch worker its pool ended)
cannot: copies of a submission, its snapshot store, a base's tree, tens of MB each, many
in ``/dev/shm``, which is memory. So each is named after the process that made it,
``repogym-tests-p4026531836x1234-k2j4h1``: ``p`` the inode of its pid namespace, ``x`` its
pid. The first directory a process makes in a place removes there the directories of
makers gone from the machine: same pid namespace (a grader in a container sharing the
place has pids of its own), same owner, pid no longer alive.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from repogym.sandbox.reaper import alive
from repogym.sandbox.seal import holder_mode

__all__ = ["TAGGED", "held", "holder", "sweep"]

TAGGED = re.compile(r"^repogym-[a-z-]+-p(\d+)x(\d+)-[^/]+$")
RAM = "/dev/shm"


def _namespace() -> int:
    try:
        return Path("/proc/self/ns/pid").stat().st_ino
    except OSError:
        return 0


def _prefix(prefix: str) -> str:
    return f"{prefix}p{_namespace()}x{os.getpid()}-"


def holder(prefix: str, where: str | None = None, *, commands: bool = False) -> Path:
    """A new private directory ``<prefix>p<ns>x<pid>-<random>`` in ``where`` (default:
    the temporary directory); the caller removes it. ``commands``: a command's tree will
    be inside, so the directory has the mode :func:`repogym.sandbox.seal.holder_mode`
    says (a sandbox uid goes through it only where the commands are not sealed)."""
    sweep(where)
    made = Path(tempfile.mkdtemp(prefix=_prefix(prefix), dir=where))
    if commands:
        made.chmod(holder_mode())
    return made


@contextlib.contextmanager
def held(prefix: str, where: str | None = None, *, commands: bool = False) -> Iterator[Path]:
    """:func:`holder`, removed when the block ends (as ``TemporaryDirectory`` removes
    it: bits a locked tree lacks restored first)."""
    sweep(where)
    with tempfile.TemporaryDirectory(prefix=_prefix(prefix), dir=where) as made:
        if commands:
            Path(made).chmod(holder_mode())
        yield Path(made)


def sweep(where: str | None = None) -> None:
    """Remove, once a process, the directories of makers gone in ``where`` (default:
    the temporary directory) and in ``/dev/shm``."""
    for place in {os.path.realpath(where or tempfile.gettempdir()), RAM}:
        _sweep(place, os.getpid())


def sweep_ended(where: str | None = None) -> None:
    """:func:`sweep` again, now: what makers that ended since left there. A batch's
    workers end without running their exit handlers (multiprocessing's children leave by
    ``os._exit``), so the trees each made for its grades stay until someone sweeps."""
    for place in {os.path.realpath(where or tempfile.gettempdir()), RAM}:
        _sweep.__wrapped__(place, os.getpid())


@functools.cache
def _sweep(place: str, pid: int) -> None:  # the pid: a forked child sweeps again
    namespace, owner = _namespace(), os.geteuid()
    with contextlib.suppress(OSError):
        for entry in os.scandir(place):
            found = TAGGED.match(entry.name)
            if found is None or int(found[1]) != namespace or alive(int(found[2])):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == owner:
                    _remove(entry.path)


def _remove(path: str, top: Path | None = None, tried: set[str] | None = None) -> None:
    """Remove the tree at ``path``. Not root, a locked tree's directories have no write
    (or read) bit: each that fails is opened, inside ``top`` only (never the place the
    tree is in), and tried once more."""
    top = top or Path(path)
    tried = set() if tried is None else tried

    def again(_: Callable[..., Any], failed: str, error: Any) -> None:
        # FileNotFoundError: another process sweeping the same place was first.
        if isinstance(error[1], FileNotFoundError) or failed in tried:
            return
        tried.add(failed)
        with contextlib.suppress(OSError):
            for directory in (Path(failed).parent, Path(failed)):
                inside = directory == top or top in directory.parents
                if inside and directory.is_dir() and not directory.is_symlink():
                    directory.chmod(0o700)
            if Path(failed).is_dir() and not Path(failed).is_symlink():
                _remove(failed, top, tried)
            else:
                Path(failed).unlink()

    shutil.rmtree(path, onerror=again)
