"""Writing a file whole or not at all, never through a link planted in the graded tree:
the report and the summary a user names (:mod:`repogym.report.outputs`), the Action's
files, the values a machine's grading processes share.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import TextIO

from repogym.tree.links import LinkInTree, inside, link_on_the_way, open_directory

__all__ = ["PendingWrite", "tree_problem", "write_atomic"]


def write_atomic(path: Path, text: str | bytes, *, tree: Path | None = None) -> None:
    """Write ``text`` so that ``path`` is either the old file or the whole new one
    (see :class:`PendingWrite` for symlinks, FIFOs, devices, modes, encoding and ``tree``)."""
    pending = PendingWrite(path, text, tree=tree)
    try:
        pending.commit()
    finally:
        pending.discard()


class PendingWrite:
    """New contents for ``path``, written out in full before anything at ``path`` changes.

    A regular file, or a path that does not exist yet, is replaced atomically: the text
    goes to a temporary file beside it, flushed to disk, which :meth:`commit` renames over
    it, so the path holds either the old file or the whole new one. Missing parent
    directories are created. A symlink is followed: its target is replaced, the link
    stays. A path that exists and is not a regular file (a FIFO, a device such as
    ``/dev/null``) is written to directly by :meth:`commit`, never replaced; so is this
    process's own stdout or stderr (``/dev/stdout``), through its stream, so that what is
    printed and what is written stay in order.

    ``tree`` is the graded work tree, whose symlinks the submission
    controls: a path that a symlink in it would redirect, or that is in it and not a
    regular file, raises :class:`~repogym.tree.links.LinkInTree`; in it, the directories are
    opened one by one without following a symlink, and the temporary file is created and
    renamed through them, so that a link planted later is not followed either.

    A new file gets mode ``0o666`` less the umask, as ``open()`` gives it; a replaced
    file keeps its mode, and its owner and group where we may set them.

    Bytes are written as they are. A text is encoded as UTF-8, and what UTF-8 cannot
    encode (the lone surrogates that stand for undecodable bytes in file names) as
    backslash escapes: ``\\udcff``, which inside a JSON string is JSON's own escape for
    that character.

    Raises:
        OSError: the path is a directory, or the temporary file cannot be written.
    """

    def __init__(self, path: Path, text: str | bytes, *, tree: Path | None = None) -> None:
        self.path = path
        self._data = text if isinstance(text, bytes) else text.encode("utf-8", "backslashreplace")
        self._stream = _own_stream(path)
        self._dir: int | None = None  # the directory to rename in; None: write directly
        self._name = ""  # the file's name in it
        self._temp: str | None = None
        if self._stream is not None:
            return
        tree = None if tree is None else Path(os.path.realpath(tree))
        problem = None if tree is None else tree_problem(str(path), tree)
        if problem is not None:
            raise LinkInTree(problem)
        try:
            existing: os.stat_result | None = path.stat()
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            return
        target = Path(os.path.realpath(path))
        if existing is not None and not os.path.samestat(existing, target.stat()):
            return  # a link only the kernel can follow, such as /proc/self/fd/1
        self._dir = _open_parent(target, tree)
        self._name = target.name
        try:
            self._temp = _write_beside(self._dir, target.name, self._data, existing)
        except BaseException:
            self.discard()
            raise

    @property
    def replaces(self) -> bool:
        """Whether :meth:`commit` renames a file into place (else it writes directly)."""
        return self._dir is not None

    def commit(self) -> None:
        """Put the new contents in place; call it once."""
        if self._stream is not None:
            self._stream.flush()
            self._stream.buffer.write(self._data)
            self._stream.buffer.flush()
        elif self._dir is None:
            with self.path.open("wb") as handle:
                handle.write(self._data)
        elif self._temp is not None:
            # Renames the entry itself: a symlink put there meanwhile is replaced, not followed.
            os.replace(self._temp, self._name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
            self._temp = None

    def discard(self) -> None:
        """Remove the temporary file unless :meth:`commit` used it; safe to call again."""
        if self._dir is None:
            return
        if self._temp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temp, dir_fd=self._dir)
            self._temp = None
        os.close(self._dir)
        self._dir = None


def _own_stream(path: Path) -> TextIO | None:
    """``sys.stdout`` or ``sys.stderr`` if ``path`` is the very file it writes to."""
    try:
        status = path.stat()
    except OSError:
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            if os.path.samestat(status, os.fstat(stream.fileno())):
                return stream
        except (OSError, ValueError, AttributeError):  # no file behind it (pytest's capture)
            continue
    return None


def _open_parent(target: Path, tree: Path | None) -> int:
    """A descriptor of the directory ``target`` (a real path) goes in, created where
    missing; in ``tree``, opened without following a symlink."""
    if tree is not None and inside(target.parent, tree):
        return open_directory(tree, target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    return os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)


def _write_beside(directory: int, name: str, data: bytes, existing: os.stat_result | None) -> str:
    """A new file in ``directory`` next to ``name``, holding ``data`` on disk, with the
    mode (and owner) ``name`` is to have; its name."""
    # mkstemp would give 0o600; 0o666 lets the umask decide, as for any new file.
    fd, temp = _create_beside(directory, name, 0o600 if existing is not None else 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if existing is not None:
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(handle.fileno(), existing.st_uid, existing.st_gid)
                os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(temp, dir_fd=directory)
        raise
    return temp


def _create_beside(directory: int, name: str, mode: int) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for _ in range(100):
        # A name as long as the longest allowed still leaves room for the suffix.
        temp = f".{name[:200]}.{secrets.token_hex(4)}"
        try:
            return os.open(temp, flags, mode, dir_fd=directory), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def tree_problem(text: str, tree: Path) -> str | None:
    """Why the output path ``text`` must not be written, given the graded work tree
    ``tree`` whose symlinks the submission controls; None if it may be."""
    tree = Path(os.path.realpath(tree))
    found = link_on_the_way(text, tree)
    fix = "write the report outside the tree or remove the link"
    if found is not None and found.last:
        return f"is a symlink in the graded tree (-> {found.target}); {fix}"
    if found is not None:
        return f"goes through {found.link}, a symlink in the graded tree (-> {found.target}); {fix}"
    real = Path(os.path.realpath(text))
    try:
        mode = real.lstat().st_mode
    except OSError:
        return None
    if inside(real, tree) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is not a regular file, in the graded tree; write the report outside the tree"
    return None
