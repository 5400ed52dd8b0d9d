"""Trees into and out of a container's volumes, as archives (issue 20).

In: GNU tar writes the host's tree (tens of thousands of files take a tenth of Python's
tarfile's time), every entry the command's user's, links sent as links. Out: the archive
the engine gives is the command's to shape, so it is unpacked without following anything
in it, no member leaving the tree, only directories, regular files and links made, and
no more than the tree's room (a sparse file claims any size) nor, where asked, entries.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any


def copy_in(
    client: Any, container: str, at: str, tree: Path, uid: int, paths: Sequence[str] = ()
) -> None:
    """Send ``tree``'s content (or only ``paths`` of it) as an archive into ``at`` of
    ``container`` through the engine's put_archive, every entry ``uid``'s."""
    tar(tree, uid, paths, into=lambda chunks: client.api.put_archive(container, at, chunks))


def tar(tree: Path, uid: int, paths: Sequence[str] = (), *, into: Any) -> None:
    """GNU tar of ``tree`` (or of only ``paths`` of it), every entry ``uid``'s, given to
    ``into``: a function of the archive's chunks, or a socket to send it on; OSError when
    tar fails. GNU tar: tens of thousands of files take a tenth of Python's tarfile's
    time; links are sent as links."""
    names = ["--", *paths] if paths else ["."]
    process = subprocess.Popen(
        [
            "tar",
            "-C",
            str(tree),
            f"--owner={uid}",
            f"--group={uid}",
            "--numeric-owner",
            "--no-recursion" if paths else "--recursion",
            "-cf",
            "-",
            *names,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        if callable(into):
            into(_chunks(process.stdout))
        else:
            for chunk in _chunks(process.stdout):
                into.sendall(chunk)
    finally:
        process.stdout.close()
        _, err = process.communicate()
    if process.returncode != 0:
        raise OSError(f"tar of {tree} failed: {err.decode(errors='replace').strip()}")


def has_entries(tree: Path, least: int) -> bool:
    """Whether ``tree`` holds at least ``least`` entries (counted up to there)."""
    count, pending = 0, [str(tree)]
    while pending:
        with os.scandir(pending.pop()) as listing:
            for entry in listing:
                count += 1
                if count >= least:
                    return True
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
    return False


def within(tree: Path, most: int) -> bool:
    """Whether ``tree``'s files take at most ``most`` bytes in a tmpfs (each in whole
    pages; walked only up to there)."""
    total, pending = 0, [str(tree)]
    while pending:
        with os.scandir(pending.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                size = entry.stat(follow_symlinks=False).st_size if entry.is_file() else 0
                total += -(-size // 4096) * 4096
                if total > most:
                    return False
    return True


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(1 << 20):
        yield chunk


def copy_out(api: Any, ident: str, tree: Path, cap: int, entries: int | None = None) -> str:
    """Replace the host's ``tree`` with the container's: the archive the engine gives
    is the command's to shape, so nothing in it is followed, no member may leave the
    tree, and only directories, regular files and links are made (issue 20). At most
    ``cap`` bytes of files (``limits.disk``, all the tree's volume holds): a sparse file
    claims any size, and the engine sends every byte of it. What was left out, for the
    command's output ('' when nothing). At most ``entries`` members when given: empty
    files take no room, and a flood of them would keep the grader unpacking past the
    command's timeout."""
    stream, _ = api.get_archive(ident, str(tree))
    for child in list(tree.iterdir()):
        _remove(child)
    return _unpack(stream, tree, cap, entries, tree)


def swap_out(api: Any, ident: str, tree: Path, cap: int, entries: int) -> str:
    """:func:`copy_out` into a fresh directory beside ``tree``, swapped in for it only
    once whole: an archive that breaks off (the engine, a file that changed while it was
    read) leaves ``tree`` as it was and raises (issue 23). What was left out, as there."""
    fresh = Path(tempfile.mkdtemp(prefix=".repogym-copy-", dir=tree.parent))
    try:
        fresh.chmod(tree.stat().st_mode & 0o7777)
        stream, _ = api.get_archive(ident, str(tree))
        said = _unpack(stream, fresh, cap, entries, tree)
        old = tree.with_name(fresh.name + "-old")
        tree.rename(old)
        try:
            fresh.rename(tree)
        except BaseException:
            old.rename(tree)
            raise
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return said


def _unpack(stream: Any, dest: Path, cap: int, entries: int | None, tree: Path) -> str:
    """Unpack the archive of ``tree`` from ``stream`` into ``dest``; what was left out."""
    reader: Any = _StreamReader(stream)
    size = 0
    with contextlib.closing(stream), tarfile.open(fileobj=reader, mode="r|") as archive:
        for count, member in enumerate(archive):
            if entries is not None and count > entries:
                return (
                    f"\nrepogym: the copy of {tree} back to the grader stopped after "
                    f"{entries} entries, the rest was left out\n"
                )
            parts = PurePosixPath(member.name).parts[1:]  # the archive's top is the tree
            if not parts:
                continue
            member.name = "/".join(parts)
            size += member.size if member.isreg() else 0
            if size > cap:
                return (
                    f"\nrepogym: the copy of {tree} back to the grader stopped at "
                    f"{member.name!r}: its files hold more than {cap >> 20} MiB "
                    "(environment.limits.disk), the rest was left out\n"
                )
            kept = _member(member, dest)
            if kept is not None:
                archive.extract(kept, dest, set_attrs=not kept.issym(), **_CHECKED)
    return ""


# _member has checked each member: tarfile is told so where it has filters (3.12, and
# 3.10.12 and 3.11.4 on), else from 3.14 on it would apply its own, and warns before that.
_CHECKED: dict[str, Any] = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}


def _member(member: tarfile.TarInfo, dest: Path) -> tarfile.TarInfo | None:
    """``member`` as it may be made in ``dest``, or None to leave it out: what tarfile's
    ``data`` filter checks, done here because the Python of Debian bookworm (3.11.2, the
    Action's image on the tests' base) predates the filters. No absolute path, no
    ``..``, nothing that would land outside ``dest`` through a link made before it, a
    hard link only to a member inside; only directories, regular files and links; no
    setuid, setgid or sticky bit, no group or other write; owned by the grader."""
    name = PurePosixPath(member.name)
    if member.name.startswith("/") or ".." in name.parts:
        return None
    kept = copy.copy(member)
    kept.uid, kept.gid, kept.uname, kept.gname = os.geteuid(), os.getegid(), "", ""
    if member.issym():
        return kept if _inside(dest / name.parent, dest) else None
    if not _inside(dest / name, dest):
        return None
    if member.islnk():
        target = PurePosixPath(member.linkname).parts[1:]  # the archive's top is the tree
        if member.linkname.startswith("/") or not target or ".." in target:
            return None
        kept.linkname = "/".join(target)
        return kept if _inside(dest / kept.linkname, dest) else None
    if member.isdir():
        kept.mode = (member.mode & 0o755) | 0o700
    elif member.isreg():
        kept.mode = (member.mode & 0o755) | 0o600
    else:
        return None
    return kept


def _inside(path: Path, dest: Path) -> bool:
    """Whether ``path``, every link on the way resolved, is ``dest`` or under it."""
    real, root = os.path.realpath(path), os.path.realpath(dest)
    return real == root or real.startswith(root + os.sep)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in list(path.iterdir()):
            _remove(child)
        path.rmdir()
    else:
        path.unlink()


class _StreamReader:
    """A file over the chunks the SDK yields, for tarfile's stream mode."""

    def __init__(self, chunks: Any) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._pending) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._pending += chunk
        if size < 0:
            data, self._pending = self._pending, b""
        else:
            data, self._pending = self._pending[:size], self._pending[size:]
        return data
