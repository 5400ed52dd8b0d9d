"""The sources of a template directory, read whole before anything is rendered.

A template directory replaces built-in templates by name (:func:`repogym.report.render.render`
takes its sources as a mapping, name to text). Where it comes from decides who wrote the
verdict's words, so it is read here in one of two ways, each refusing what could reach
outside it (issue 19: a committed link to ``/proc/self/environ`` or ``.git/config``,
included by a template, put the job's token in a posted comment):

- :func:`templates_at`: the directory as a commit has it, read through git, never the work
  tree: the Action reads it at the base commit, where the task is read. A symbolic link
  (mode 120000) or a submodule in it is refused, not followed.
- :func:`templates_in`: a directory on disk, walked without following a link: a symbolic
  link, a FIFO or a device in it is refused, and each file is opened with ``O_NOFOLLOW``
  relative to its directory.

A name is the path below the directory with ``/`` between its parts, as a template names
another (``{% include "parts/row.md.j2" %}``); no name has a ``..`` part, so an include
cannot leave the directory either. The directory is bounded: :data:`MAX_FILES` files of at
most :data:`MAX_BYTES` bytes each, all UTF-8.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from repogym.errors import UsageError
from repogym.tree import git as _git

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "TemplateFilesError",
    "templates_at",
    "templates_in",
]

MAX_FILES = 200
MAX_BYTES = 1024 * 1024


class TemplateFilesError(UsageError):
    """A template directory that cannot be used: one line naming the path and the fix."""


def templates_at(repo: Path, commit: str, directory: str, *, at: str) -> dict[str, str] | None:
    """The files under ``directory`` in ``commit``'s tree, by name; None when the commit
    has nothing at ``directory``. ``at`` names the commit in messages (a branch name).

    Raises:
        TemplateFilesError: ``directory`` is not a directory there, or holds a symbolic
            link, a submodule, a file over :data:`MAX_BYTES` or not UTF-8, or more than
            :data:`MAX_FILES` files.
    """
    directory = _relative(directory)
    entry = _git.tree_entry(repo, commit, directory)
    if entry is None:
        return None
    if entry.type != "tree":
        what = "a symbolic link" if entry.symlink else "a file"
        what = "a submodule" if entry.type == "commit" else what
        raise TemplateFilesError(
            f"{directory} at {at} is {what}, not a directory; name a directory of templates"
        )
    listing = _git.git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", directory + "/"], repo)
    sources: dict[str, str] = {}
    for record in filter(None, listing.split(b"\0")):
        meta, _, raw = record.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = os.fsdecode(raw)
        if mode == "120000":
            raise TemplateFilesError(
                f"{path} at {at} is a symbolic link; commit the template itself there"
            )
        if kind != "blob":
            raise TemplateFilesError(f"{path} at {at} is a submodule; commit templates only")
        _count(sources, directory, at)
        size = int(_git.git(["cat-file", "-s", sha], repo))
        _size(size, f"{path} at {at}")
        data = _git.git(["cat-file", "blob", sha], repo)
        sources[path[len(directory) + 1 :]] = _text(data, f"{path} at {at}")
    return sources


def templates_in(directory: Path, *, shown: str) -> dict[str, str]:
    """The files under ``directory`` on disk, by name; ``shown`` is how messages name
    the directory (as the user gave it).

    Raises:
        TemplateFilesError: ``directory`` is not a directory (or is a symbolic link), or
            holds anything but directories and regular files, a file over
            :data:`MAX_BYTES` or not UTF-8, or more than :data:`MAX_FILES` files.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        raise TemplateFilesError(
            f"{shown} is not a directory ({error.strerror}); name a directory of templates"
        ) from None
    sources: dict[str, str] = {}
    try:
        _walk(fd, PurePosixPath(), sources, shown)
    finally:
        os.close(fd)
    return sources


def _walk(fd: int, below: PurePosixPath, sources: dict[str, str], shown: str) -> None:
    for name in sorted(os.listdir(fd)):
        path = below / name
        where = f"{shown.rstrip('/')}/{path}"
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            raise TemplateFilesError(f"{where} is a symbolic link; put the template itself there")
        if stat.S_ISDIR(mode):
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                _walk(inner, path, sources, shown)
            finally:
                os.close(inner)
            continue
        if not stat.S_ISREG(mode):
            raise TemplateFilesError(f"{where} is not a regular file; put templates only there")
        _count(sources, shown, "")
        # O_NOFOLLOW and O_NONBLOCK: a link or a FIFO put there since the stat is refused,
        # not followed or waited on.
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(file, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise TemplateFilesError(f"{where} is not a regular file; put templates only there")
            data = handle.read(MAX_BYTES + 1)
        _size(len(data), where)
        sources[str(path)] = _text(data, where)


def _relative(directory: str) -> str:
    path = PurePosixPath(directory)
    if not directory or path.is_absolute() or ".." in path.parts:
        raise TemplateFilesError(
            f"{directory!r} is not a directory inside the repository; give one relative to "
            "its top, e.g. .github/repogym"
        )
    return str(path)


def _count(sources: dict[str, str], directory: str, at: str) -> None:
    if len(sources) >= MAX_FILES:
        where = f"{directory} at {at}" if at else directory
        raise TemplateFilesError(f"{where} has more than {MAX_FILES} files; keep templates only")


def _size(size: int, where: str) -> None:
    if size > MAX_BYTES:
        raise TemplateFilesError(f"{where} is over {MAX_BYTES} bytes; a template is text")


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TemplateFilesError(f"{where} is not UTF-8 text; save the template as UTF-8") from None
