"""The submission as it was when grading began, and fresh copies of it for each run.

A :class:`Snapshot` reads the work tree once, before any of the submission's code runs:
the files git lists (tracked, and untracked ones that are not ignored) become blobs and a
tree in a private object store, and from then on everything is read from that tree. The
constraints see its diff, the tests and the benchmark run in copies checked out from it,
so what runs is exactly what was checked, and the user's work tree is never written.

The store is a throwaway bare git directory whose object database falls back on the
repository's (``objects/info/alternates``), so nothing is written into the repository
either. It has no config of the repository's: no filter, no hook, no fsmonitor, no
attributes. Files are hashed as their bytes (``--no-filters``): an ``ident`` or ``eol``
attribute, or a clean filter, cannot make the diff show other bytes than the ones that
run. ``.gitattributes`` files are written into copies after the checkout, so that no
attribute of the submission's converts what is checked out either.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeGuard

from repogym.tree import git as _git
from repogym.tree.links import SymlinkLoop, resolve
from repogym.tree.store import (
    GITLINK,
    SYMLINK,
    Entry,
    Store,
    checkout,
    split_z,
    write_index,
    write_tree,
)

_BLOCK = 4096  # what a file costs a file system beyond its bytes, about


class Snapshot:
    """The submission's files (tracked, and untracked ones that are not ignored), read
    once from the work tree of ``repo`` into a tree of a private store."""

    def __init__(
        self, store: Store, entries: Mapping[str, Entry], index: Path, size: int = 0
    ) -> None:
        self.store = store
        self.entries = dict(entries)
        self.index = index  # a private index file in the store holding exactly the entries
        self.size = size  # bytes of its files, about: what a copy takes

    @classmethod
    def take(cls, repo: Path, *, leave_out: frozenset[str] = frozenset()) -> Snapshot:
        """Read the work tree of ``repo``; ``leave_out`` are untracked paths that are not
        the submission's (the grader's own reports, issue 19)."""
        store = Store(repo)
        try:
            entries, size = _read_work_tree(repo, store, leave_out)
            index = write_index(store, entries.items())
        except BaseException:
            store.close()
            raise
        return cls(store, entries, index, size)

    @functools.cached_property
    def tree(self) -> str:
        """The sha of the snapshot's tree, written when first asked for: the diff is
        taken against :attr:`index`, which holds the same entries (issue 21: writing
        the trees of 20,000 files costs a tenth of a Workspace's diff)."""
        return write_tree(self.store, self.index)

    def files(self) -> tuple[str, ...]:
        return tuple(sorted(self.entries))

    def read_bytes(self, path: str) -> bytes | None:
        """The bytes of ``path``, symlinks followed inside the snapshot; None when it is
        not a file there or a link leads out of it."""
        entry = self.follow(path)
        if entry is None or not entry.regular:
            return None
        return self.store.read_blob(entry.sha)

    def follow(self, path: str) -> Entry | None:
        """The entry ``path`` leads to, symlinks (of the file or of a directory on the
        way) followed lexically inside the snapshot, at most 40 of them; None when it
        leads nowhere in it."""

        def link_target(relative: str) -> str | None:
            entry = self.entries.get(relative)
            if entry is None or entry.mode != SYMLINK:
                return None
            return os.fsdecode(self.store.read_blob(entry.sha))

        try:
            real = resolve(path, link_target)
        except SymlinkLoop:
            return None
        return self.entries.get(real) if real else None

    def checkout(self, dest: Path, entries: Mapping[str, Entry] | None = None) -> Path:
        """Write ``entries`` (default: the snapshot's) as files into the new directory
        ``dest``: content and mode, symlinks as symlinks, nothing converted."""
        checkout(self.store, self.entries if entries is None else entries, dest)
        return dest

    def close(self) -> None:
        self.store.close()


def inside(directory: str, target: str) -> str | None:
    """The path ``target`` names from ``directory``, both relative to the root, resolved
    lexically; None when it is absolute or leaves the root."""
    if target.startswith("/"):
        return None
    return resolve(f"{directory}/{target}", lambda _: None) or None


def _read_work_tree(
    repo: Path, store: Store, leave_out: frozenset[str] = frozenset()
) -> tuple[dict[str, Entry], int]:
    """Every file git lists in the work tree, as an entry whose blob is in ``store``.

    A path is taken only if it is a regular file or a symlink and no directory on the way
    to it is a symlink: the grader never reads through a link of the submission's.
    """
    index, stats = _index_entries(repo)
    racy_from = _index_mtime(repo)
    untracked = split_z(_git.git(["ls-files", "-z", "--others", "--exclude-standard"], repo))
    untracked = [p for p in untracked if p not in leave_out]
    real_dirs: dict[str, bool] = {"": True}
    regular: list[str] = []
    entries: dict[str, Entry] = {}
    size = 0
    # An untracked nested repository is listed as `dir/`: its files are not the
    # submission's (they are not in any diff), so it is not taken.
    for path in sorted({*index, *(p for p in untracked if not p.endswith("/"))}):
        if not _real_parents(repo, path, real_dirs):
            continue
        known = index.get(path)
        if known is not None and known.mode == GITLINK:
            entries[path] = known
            continue
        try:
            info = os.lstat(f"{repo}/{path}")
        except OSError:
            continue  # deleted
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode((repo / path).readlink())
            entries[path] = Entry(SYMLINK, store.write_blob(target))
        elif stat.S_ISREG(info.st_mode):
            size += info.st_size + _BLOCK
            mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
            if _unchanged(known, mode, info, stats.get(path), racy_from):
                entries[path] = known  # as git itself trusts its index: by stat
                continue
            entries[path] = Entry(mode, "")
            regular.append(path)
    for path, sha in zip(regular, _hash_files(repo, store, regular), strict=True):
        entries[path] = Entry(entries[path].mode, sha)
    return entries, size


def _hash_files(repo: Path, store: Store, paths: list[str]) -> list[str]:
    """The blob sha of each file's bytes, no filter applied; the blobs that the
    repository does not have already are written into ``store``."""
    if any("\n" in p for p in paths):  # --stdin-paths is line-based: hash those one by one
        # by git, which streams a large file, never read whole here (issue 19).
        one = ["hash-object", "-w", "--no-filters", "--"]
        return [store.git([*one, p], cwd=repo).decode().strip() for p in paths]
    # Passes that write: git writes no object the repository (an alternate) has. git
    # hashes in one thread, so many files are dealt round-robin (each process gets its
    # share of large and small ones) among a process per core (issue 21).
    ways = max(1, min(os.cpu_count() or 1, _HASHERS, len(paths) // _PER_HASHER))
    args = ["hash-object", "-w", "--no-filters", "--stdin-paths"]

    def hash_part(part: list[str]) -> list[str]:
        if not part:
            return []
        listing = "".join(p + "\n" for p in part).encode("utf-8", "surrogateescape")
        return store.git(args, cwd=repo, stdin=listing).decode().split()

    if ways == 1:
        return hash_part(paths)
    with ThreadPoolExecutor(ways) as pool:
        parts = list(pool.map(hash_part, [paths[i::ways] for i in range(ways)]))
    shas = [""] * len(paths)
    for i, part in enumerate(parts):
        shas[i::ways] = part
    return shas


_HASHERS = 4  # processes that hash the changed files at most
_PER_HASHER = 500  # files each of them is given at least: fewer are hashed in one


def _index_entries(repo: Path) -> tuple[dict[str, Entry], dict[str, _Stat]]:
    """The index's entries at stage 0 (a path in conflict has none: its file is read),
    and what the index recorded of each file's stat when it was last hashed."""
    entries: dict[str, Entry] = {}
    stats: dict[str, _Stat] = {}
    out = _git.git(["ls-files", "-z", "--stage", "--debug"], repo)
    matches = list(_DEBUG_ENTRY.finditer(out))
    if len(matches) != out.count(b"\0"):
        # A form of the stat lines this reader does not know: no stat data, every
        # file is hashed, nothing is missed.
        for record in split_z(_git.git(["ls-files", "-z", "--stage"], repo)):
            fields, _, name = record.partition("\t")
            kind, blob, number = fields.split()
            if number == "0":
                entries[name] = Entry(kind, blob)
        return entries, stats
    for match in matches:
        mode, sha, stage, raw, seconds, nanoseconds, inode, size = match.groups()
        if stage != b"0":
            continue
        path = raw.decode("utf-8", "surrogateescape")
        entries[path] = Entry(mode.decode(), sha.decode())
        mtime = int(seconds) * 1_000_000_000 + int(nanoseconds)
        stats[path] = (mtime, int(size), int(inode))
    return entries, stats


# One entry of `git ls-files -z --stage --debug`: the entry, then five lines of stat data.
_DEBUG_ENTRY = re.compile(
    rb"([0-7]+) ([0-9a-f]+) ([0-3])\t([^\0]*)\0"
    rb"  ctime: [0-9:]+\n  mtime: ([0-9]+):([0-9]+)\n  dev: [0-9]+\tino: ([0-9]+)\n"
    rb"  uid: [0-9]+\tgid: [0-9]+\n  size: ([0-9]+)\tflags: [0-9a-f]+\n"
)
# (mtime in ns, size, inode) as the index keeps them: size and inode cut to 32 bits.
_Stat = tuple[int, int, int]


def _unchanged(
    known: Entry | None, mode: str, info: os.stat_result, recorded: _Stat | None, racy_from: int
) -> TypeGuard[Entry]:
    """Whether the index's entry ``known`` still holds for a file of this mode and stat:
    same mode, mtime, size and inode, and not modified in the index's own last instant
    (git's racy check).

    The index is the submission's to write (RepoEnv's agent can): a lie only makes the
    snapshot hold the index's blob, which is then also what the copies run."""
    if known is None or recorded is None or known.mode != mode:
        return False
    mtime, size, inode = recorded
    same = (info.st_mtime_ns, info.st_size & 0xFFFFFFFF, info.st_ino & 0xFFFFFFFF) == (
        mtime,
        size,
        inode,
    )
    return same and mtime < racy_from


def _index_mtime(repo: Path) -> int:
    """The index file's mtime in ns: a file modified at or after it may have changed
    without its stat showing it; 0 (trust nothing) when there is no index."""
    path = repo / _git.git(["rev-parse", "--git-path", "index"], repo).decode().strip()
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _real_parents(repo: Path, path: str, real_dirs: dict[str, bool]) -> bool:
    """Whether every directory on the way to ``path`` is a real directory (not a link)."""
    parent = path.rpartition("/")[0]
    if parent in real_dirs:
        return real_dirs[parent]
    ok = _real_parents(repo, parent, real_dirs)
    if ok:
        try:
            ok = stat.S_ISDIR(os.lstat(f"{repo}/{parent}").st_mode)
        except OSError:
            ok = False
    real_dirs[parent] = ok
    return ok
