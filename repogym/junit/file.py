"""Opening a JUnit report that the submission's commands wrote: never through a symlink,
never a FIFO or a device, never more than the byte cap (see repogym.junit)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from repogym.errors import JUnitError

_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}
# The report is written by the submission's commands, which may put a symlink (to
# /etc/shadow, /proc/self/environ) or a FIFO there instead: O_NOFOLLOW refuses the link,
# O_NONBLOCK keeps a FIFO without a writer from blocking the open, and the fstat that
# follows refuses whatever is not a regular file. O_NOCTTY: a terminal opened here must
# not become the grader's controlling terminal.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def open_report(path: Path, max_bytes: int) -> int:
    """The report opened for reading; refused unread when it is not a regular file, is
    empty or is over ``max_bytes``."""
    # lstat first: a device is refused without being opened, since opening some acts on them.
    _check_file(path, _lstat(path), max_bytes)
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise _unopenable(path, error) from None
    try:
        # Checked again on what was opened: the path may have been swapped since the lstat.
        _check_file(path, os.fstat(descriptor), max_bytes)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _lstat(path: Path) -> os.stat_result:
    try:
        return path.lstat()
    except OSError as error:
        raise _unopenable(path, error) from None


def _unopenable(path: Path, error: OSError) -> JUnitError:
    if isinstance(error, FileNotFoundError):
        return JUnitError(
            f"JUnit report {path} does not exist: did the test command write its report there?"
        )
    if error.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink swapped in after the lstat
        return _not_a_file(path, "a symbolic link")
    return JUnitError(f"JUnit report {path} cannot be read: {error.strerror}")


def _check_file(path: Path, info: os.stat_result, max_bytes: int) -> None:
    kind = stat.S_IFMT(info.st_mode)
    if kind != stat.S_IFREG:
        raise _not_a_file(path, _KINDS.get(kind, "an unknown kind of file"))
    if info.st_size == 0:
        raise JUnitError(
            f"JUnit report {path} is empty: the test command probably stopped before writing it"
        )
    if info.st_size > max_bytes:
        raise JUnitError(too_large(path, info.st_size, max_bytes))


def _not_a_file(path: Path, kind: str) -> JUnitError:
    return JUnitError(
        f"JUnit report {path} is {kind}, not a regular file: "
        "the test command must write its report there as a file"
    )


def read_chunk(path: Path, descriptor: int, size: int) -> bytes:
    try:
        return os.read(descriptor, size)
    except OSError as error:
        raise JUnitError(f"JUnit report {path} cannot be read: {error.strerror}") from None


def too_large(path: Path, size: int, max_bytes: int) -> str:
    return (
        f"JUnit report {path} is {size:,} bytes, over the limit of {max_bytes:,}: "
        "reduce the captured output in the report"
    )
