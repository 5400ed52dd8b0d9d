"""Symlinks and the graded tree: where a path really leads, read one component at a time.

The submission controls every symlink in its tree (issue 9). The constraint gate resolves
the links it adds without looking outside the tree (:func:`resolve_in_tree`); the command
line refuses an output path that a link in the tree would redirect (:func:`link_on_the_way`)
and writes into the tree through directories opened with ``O_NOFOLLOW``
(:func:`open_directory`), so that a link planted after that check is not followed either.

A run's copy of the submission is ours, but the links in it are the submission's: what the
grader writes into it (hidden tests, ``.gitattributes`` files, links to dependencies) goes
through directories opened one at a time without following a symlink (:func:`open_way`),
so that a committed ``tests/hidden -> /elsewhere`` cannot send it outside (issue 19).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "MAX_HOPS",
    "LinkInTree",
    "SymlinkLoop",
    "TreeLink",
    "inside",
    "link_on_the_way",
    "open_directory",
    "open_regular",
    "open_way",
    "place",
    "remove_at",
    "resolve",
    "resolve_in_tree",
]

MAX_HOPS = 40  # symlinks followed in one resolution, as Linux allows before ELOOP


class SymlinkLoop(Exception):
    """More than :data:`MAX_HOPS` symlinks in one resolution."""


class LinkInTree(OSError):
    """A write would have gone through a symlink (or into a file that is not a regular
    file) in the graded tree; ``problem`` says which, and how to fix it."""

    def __init__(self, problem: str) -> None:
        super().__init__(errno.ELOOP, problem)
        self.problem = problem


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # missing, or under a file: read as written from here on
        return False


def resolve_in_tree(root: Path, path: str) -> str | None:
    """``path`` (relative to ``root``) with every symlink in it resolved as the kernel
    would, relative to ``root`` ("" for the root itself); None as soon as it leads
    outside ``root``, whose outside is never looked at. Raises :class:`SymlinkLoop`."""

    def target(relative: str) -> str | None:
        candidate = root / relative
        return str(candidate.readlink()) if _is_link(candidate) else None

    return resolve(path, target)


def resolve(path: str, link_target: Callable[[str], str | None]) -> str | None:
    """``path`` with its symlinks resolved one component at a time, ``link_target``
    giving the target of the link at a path relative to the root (None: no link there);
    "" for the root, None when it leads out of the root. Raises :class:`SymlinkLoop`."""
    pending = path.split("/")
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        target = link_target("/".join([*done, part]))
        if target is None:
            done.append(part)
            continue
        hops += 1
        if hops > MAX_HOPS:
            raise SymlinkLoop(path)
        if target.startswith("/"):
            return None
        pending = target.split("/") + pending
    return "/".join(done)


def inside(path: Path, tree: Path) -> bool:
    """Whether the real path ``path`` is ``tree`` (a real path too) or below it."""
    return path == tree or tree in path.parents


@dataclass(frozen=True, slots=True)
class TreeLink:
    """A symlink in the graded tree met on the way to a path: where it is, what it says,
    and whether it is the path's last component (the path itself)."""

    link: Path
    target: str
    last: bool


def link_on_the_way(path: str, tree: Path) -> TreeLink | None:
    """The first symlink lying in ``tree`` that opening ``path`` (relative to the current
    directory) would follow, resolving as the kernel does; None if there is none.

    Links outside the tree are followed (they are the user's, such as ``/dev/stdout``),
    so that one leading into the tree is looked through too. ``tree`` is a real path.
    """
    done = Path("/")
    pending = list(PurePosixPath(Path.cwd(), path).parts[1:])
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            done = done.parent
            continue
        candidate = done / part
        if not _is_link(candidate):
            done = candidate
            continue
        target = str(candidate.readlink())
        if inside(done, tree):
            return TreeLink(link=candidate, target=target, last=not pending)
        hops += 1
        if hops > MAX_HOPS:
            return None  # opening it fails on its own (ELOOP)
        if target.startswith("/"):
            done = Path("/")
        pending = [p for p in PurePosixPath(target).parts if p != "/"] + pending
    return None


def open_directory(tree: Path, directory: Path) -> int:
    """A descriptor of ``directory``, a real path at or below ``tree``, opened one
    component at a time from ``tree`` without following a symlink, and created where
    missing. Raises :class:`LinkInTree` naming a component that is a symlink."""
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in directory.relative_to(tree).parts:
            fd = _open_below(fd, part, tree)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_below(parent: int, name: str, tree: Path) -> int:
    """``name`` in the directory ``parent`` (which this closes), opened without following."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        try:
            return os.open(name, flags, dir_fd=parent)
        except FileNotFoundError:
            os.mkdir(name, dir_fd=parent)
            return os.open(name, flags, dir_fd=parent)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link_at(parent, name):
                raise LinkInTree(
                    f"{name} in the graded tree ({tree}) became a symlink; write the report "
                    "outside the tree or remove the link"
                ) from None
            raise
    finally:
        os.close(parent)


def _is_link_at(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def open_way(tree: Path, relative: str, *, make: bool = True) -> tuple[int, str]:
    """For a write of ``relative`` (a path below ``tree``, a copy of ours): a descriptor of
    the directory it goes in, and its last component, every component of the way opened
    from ``tree`` without following a symlink.

    With ``make``, what stands on the way and is not a directory (a symlink or a file of
    the submission's) is removed and a directory made in its place, as a missing one is:
    what we write must land in the copy. Without, that raises :class:`LinkInTree` and a
    missing directory :class:`FileNotFoundError`. The caller closes the descriptor.
    """
    parts = relative.split("/")
    if PurePosixPath(relative).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{relative!r} is not a plain relative path")
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            fd = _enter(fd, part, make=make, tree=tree)
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _enter(parent: int, name: str, *, make: bool, tree: Path) -> int:
    """The directory ``name`` in ``parent`` (which this closes), opened without following."""
    try:
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            if not make:
                raise
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if not make:
                raise LinkInTree(f"{name} in {tree} is not a directory (a symlink?)") from None
            os.unlink(name, dir_fd=parent)  # a symlink or a file: never what it leads to
        os.mkdir(name, dir_fd=parent)
        return os.open(name, _DIRECTORY, dir_fd=parent)
    finally:
        os.close(parent)


def remove_at(parent: int, name: str) -> None:
    """Remove ``name`` from the directory ``parent``, all it holds if it is a directory,
    following no symlink; nothing if it is not there."""
    try:
        status = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(status.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = os.open(name, _DIRECTORY, dir_fd=parent)
    try:
        with os.scandir(fd) as entries:
            names = [entry.name for entry in entries]
        for child in names:
            remove_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def place(
    tree: Path,
    relative: str,
    *,
    data: bytes | None = None,
    from_tree: Path | None = None,
    link: str | None = None,
    mode: int = 0o644,
) -> None:
    """Write ``relative`` into ``tree`` (a copy of ours) through :func:`open_way`, in
    place of whatever is there: the bytes ``data``, a copy of the regular file at
    ``relative`` in the directory ``from_tree`` (content streamed, mode and times kept),
    or a symlink to ``link``.

    The file of ``from_tree`` is opened without following a symlink, on its way or at
    its end: root copies hidden tests so, into the copy where the submission's code
    reads them, and a link would carry whatever it names there (issue 19). A link or a
    file that is not regular raises :class:`LinkInTree`; nothing is written then.
    """
    given = None if from_tree is None else open_regular(from_tree, relative)
    try:
        parent, name = open_way(tree, relative)
    except BaseException:
        if given is not None:
            os.close(given)
        raise
    try:
        remove_at(parent, name)
        if link is not None:
            os.symlink(link, name, dir_fd=parent)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        if given is None:
            fd = os.open(name, flags, mode, dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data or b"")
            return
        with os.fdopen(given, "rb") as source:
            given = None  # closed with ``source``
            status = os.fstat(source.fileno())
            fd = os.open(name, flags, stat.S_IMODE(status.st_mode), dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
                os.fchmod(out.fileno(), stat.S_IMODE(status.st_mode))
        os.utime(
            name,
            ns=(status.st_atime_ns, status.st_mtime_ns),
            dir_fd=parent,
            follow_symlinks=False,
        )
    finally:
        os.close(parent)
        if given is not None:
            os.close(given)


def open_regular(tree: Path, relative: str) -> int:
    """A descriptor for reading the regular file ``relative`` of ``tree``, opened without
    following a symlink (``O_NONBLOCK``: a FIFO must not hang the open)."""
    parent, name = open_way(tree, relative, make=False)
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise LinkInTree(f"{relative} in {tree} is a symlink") from None
            raise
    finally:
        os.close(parent)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LinkInTree(f"{relative} in {tree} is not a regular file")
    os.set_blocking(fd, True)
    return fd
