"""What a sandbox uid leaves behind outside its trees, removed after its command.

- **Files** at the top of the world-writable directories (``/tmp``, ``/var/tmp``,
  ``/dev/shm``, ``/run/lock``) that the uid owns (issue 9).
- **System V IPC** objects it owns or made: shared memory segments, semaphore sets and
  message queues (issue 43), as ``ipcrm`` would, read from ``/proc/sysvipc``. A sealed
  command's end with its IPC namespace; where the seal cannot be had (Landlock only, or
  nothing) they would outlive the command and be there for the next one: a test that
  passes its first run and fails its second, a benchmark that remembers its answer. A
  segment still attached goes once its last process, killed by then, lets go of it.
- **Kernel keys** (issue 43, found by the red team): the uid's user keyring, its user
  session keyring and its persistent keyring live as long as the kernel, in no namespace
  and under no path, so a key added by one command was there for the next, sealed or
  not. Each command starts in a session keyring of its own (:func:`own_session_keyring`,
  which ends with it), and the clean-up clears the uid's three keyrings, as the uid.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["WORLD_WRITABLE", "ipc_owned_by", "own_session_keyring", "sweep"]

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

_IPC_RMID = 0
# /proc/sysvipc file, the column of its id, the call that removes one.
_KINDS = (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid"))


# keyctl(2)'s number where the machine is one repogym knows (none other has keyrings here).
_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
_JOIN_SESSION_KEYRING, _CLEAR, _GET_PERSISTENT = 1, 7, 22
_USER_KEYRING, _USER_SESSION_KEYRING = -4, -5


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def own_session_keyring() -> None:
    """In the child before exec: a new, empty session keyring that only the command's
    processes hold and that ends with them, instead of the grader's (which every command
    would share: the Action's container runs all its processes in one)."""
    if _KEYCTL is not None:
        _libc().syscall(_KEYCTL, _JOIN_SESSION_KEYRING, None)


def _clear_own_keyrings() -> None:
    """In a child running as the uid: empty its user, user session and persistent
    keyrings (a kernel without keys or persistent keyrings says no: fine)."""
    assert _KEYCTL is not None
    libc = _libc()
    for keyring in (_USER_KEYRING, _USER_SESSION_KEYRING):
        libc.syscall(_KEYCTL, _CLEAR, keyring)
    persistent = libc.syscall(_KEYCTL, _GET_PERSISTENT, -1, _USER_SESSION_KEYRING)
    if persistent > 0:
        libc.syscall(_KEYCTL, _CLEAR, persistent)


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
    _clear_keys(uid)


def _clear_keys(uid: int) -> None:
    if _KEYCTL is None or os.geteuid() != 0:
        return
    _libc()  # loaded before the fork
    subprocess.run(
        ["/bin/true"],
        user=uid,
        group=uid,
        extra_groups=[],
        preexec_fn=_clear_own_keyrings,
        env={},
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


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
