"""What a sandbox uid leaves behind outside its trees, removed after its command.

- **Files** at the top of the world-writable directories (``/tmp``, ``/var/tmp``,
  ``/dev/shm``, ``/run/lock``) that the uid owns (issue 9).
- **System V IPC** objects it owns or made: shared memory segments, semaphore sets and
  message queues (issue 43), as ``ipcrm`` would, read from ``/proc/sysvipc``. A sealed
  command's end with its IPC namespace; where the seal cannot be had (Landlock only, or
  nothing) they would outlive the command and be there for the next one: a test that
  passes its first run and fails its second, a benchmark that remembers its answer. A
  segment still attached goes once its last process, killed by then, lets go of it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
from pathlib import Path

__all__ = ["WORLD_WRITABLE", "ipc_owned_by", "sweep"]

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

_IPC_RMID = 0
# /proc/sysvipc file, the column of its id, the call that removes one.
_KINDS = (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid"))


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def ipc_owned_by(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every System V object ``uid`` owns or created."""
    found = []
    for kind, id_column in _KINDS:
        try:
            header, *rows = Path("/proc/sysvipc", kind).read_text().splitlines()
        except OSError:
            continue  # not Linux, or no System V IPC in this kernel
        names = header.split()
        at = {name: names.index(name) for name in (id_column, "uid", "cuid")}
        for row in rows:
            fields = row.split()
            with contextlib.suppress(IndexError, ValueError):
                if uid in (int(fields[at["uid"]]), int(fields[at["cuid"]])):
                    found.append((kind, int(fields[at[id_column]])))
    return found


def sweep(uid: int) -> None:
    """Remove what ``uid`` owns at the top of the world-writable directories, and its
    System V objects."""
    for top in WORLD_WRITABLE:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in os.scandir(top):
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)  # fd-based: follows no symlink inside
                    else:
                        Path(entry.path).unlink()
    _remove_ipc(uid)


def _remove_ipc(uid: int) -> None:
    """Remove every System V object ``uid`` owns or created (gone already: fine)."""
    libc = _libc()
    for kind, ident in ipc_owned_by(uid):
        if kind == "shm":
            libc.shmctl(ident, _IPC_RMID, None)
        elif kind == "sem":
            libc.semctl(ident, 0, _IPC_RMID)
        else:
            libc.msgctl(ident, _IPC_RMID, None)
