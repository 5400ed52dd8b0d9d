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

import contextlib
import hashlib
import itertools
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym import _git
from repogym._links import SymlinkLoop, resolve
from repogym.errors import WorkspaceError

GITLINK = "160000"
SYMLINK = "120000"
_ATTRIBUTES = ".gitattributes"


@dataclass(frozen=True, slots=True)
class Entry:
    """One file of a tree: git's ``mode`` (100644, 100755, 120000, 160000) and blob sha."""

    mode: str
    sha: str

    @property
    def regular(self) -> bool:
        return self.mode in ("100644", "100755")


class Store:
    """A private bare git directory that borrows the repository's objects read-only."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        # Its loose objects are files: in memory when there is room (see copies_dir).
        self.holder = Path(tempfile.mkdtemp(prefix="repogym-snapshot-", dir=copies_dir(0)))
        self.git_dir = self.holder / "git"
        objects = (
            self.repo / _git.git(["rev-parse", "--git-path", "objects"], repo).decode().strip()
        )
        fmt = _git.git(["rev-parse", "--show-object-format"], repo).decode().strip() or "sha1"
        (self.git_dir / "objects" / "info").mkdir(parents=True)
        (self.git_dir / "refs").mkdir()
        (self.git_dir / "HEAD").write_text("ref: refs/heads/repogym\n")
        # Loose objects stored, not squeezed: the store lives for one grade.
        config = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tlooseCompression = 0\n"
        if fmt != "sha1":
            config = (
                "[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
                f"[extensions]\n\tobjectformat = {fmt}\n"
            )
        (self.git_dir / "config").write_text(config)
        alternates = self.git_dir / "objects" / "info" / "alternates"
        alternates.write_text(str(objects.resolve()) + "\n")
        self.object_format = fmt
        self._reader: _BlobReader | None = None
        self._lock = threading.Lock()

    def env(self, index: Path | None = None, work_tree: Path | None = None) -> dict[str, str]:
        env = {"GIT_DIR": str(self.git_dir), "GIT_LITERAL_PATHSPECS": "1"}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return env

    def git(
        self,
        args: list[str],
        *,
        cwd: Path | None = None,
        index: Path | None = None,
        work_tree: Path | None = None,
        stdin: bytes | None = None,
    ) -> bytes:
        env = self.env(index, work_tree)
        return _git.git(args, cwd or self.holder, env=env, stdin=stdin)

    def write_blob(self, data: bytes) -> str:
        """Store ``data`` as a loose blob in the private store; its sha."""
        header = b"blob %d\0" % len(data)
        digest = hashlib.new(self.object_format, header)
        digest.update(data)
        sha = digest.hexdigest()
        target = self.git_dir / "objects" / sha[:2] / sha[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            temp = target.parent / f".tmp-{sha}"
            temp.write_bytes(zlib.compress(header + data, 1))
            temp.replace(target)
        return sha

    def read_blob(self, sha: str) -> bytes:
        with self._lock:
            for _ in range(2):
                if self._reader is None:
                    self._reader = _BlobReader(self)
                try:
                    return self._reader.read(sha)
                except (OSError, ValueError):
                    # The runner kills every child of ours that a command may have left
                    # behind, and this reader is one: start another.
                    self._reader.close()
                    self._reader = None
            raise WorkspaceError(f"cannot read blob {sha} of the snapshot: git cat-file failed")

    def close_reader(self) -> None:
        """Stop the blob reader's process; a later read starts another."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def close(self) -> None:
        self.close_reader()
        shutil.rmtree(self.holder, ignore_errors=True)


class _BlobReader:
    """One ``git cat-file --batch`` for every blob read, rather than a process each."""

    def __init__(self, store: Store) -> None:
        env = {**_git.environment(), **store.env()}
        self._process = subprocess.Popen(
            _git.command(["cat-file", "--batch"]),
            cwd=store.holder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def read(self, sha: str) -> bytes:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(sha.encode() + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline().split()
        if not header:
            raise ValueError("git cat-file ended")
        if len(header) != 3 or header[1] != b"blob":
            raise WorkspaceError(f"the snapshot has no blob {sha}")
        size = int(header[2])
        data = self._process.stdout.read(size + 1)
        if len(data) != size + 1:
            raise ValueError("git cat-file ended")
        return data[:-1]

    def close(self) -> None:
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):  # the process may be gone already
                self._process.stdin.close()
        self._process.kill()
        self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


class Snapshot:
    """The submission's files (tracked, and untracked ones that are not ignored), read
    once from the work tree of ``repo`` into a tree of a private store."""

    def __init__(
        self, store: Store, entries: Mapping[str, Entry], tree: str, size: int = 0
    ) -> None:
        self.store = store
        self.entries = dict(entries)
        self.tree = tree
        self.size = size  # bytes of its files, about: what a copy takes

    @classmethod
    def take(cls, repo: Path) -> Snapshot:
        store = Store(repo)
        try:
            entries, size = _read_work_tree(repo, store)
            tree = write_tree(store, entries)
        except BaseException:
            store.close()
            raise
        return cls(store, entries, tree, size)

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


def _read_work_tree(repo: Path, store: Store) -> tuple[dict[str, Entry], int]:
    """Every file git lists in the work tree, as an entry whose blob is in ``store``.

    A path is taken only if it is a regular file or a symlink and no directory on the way
    to it is a symlink: the grader never reads through a link of the submission's.
    """
    index, stats = _index_entries(repo)
    racy_from = _index_mtime(repo)
    untracked = _split_z(_git.git(["ls-files", "-z", "--others", "--exclude-standard"], repo))
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
            if (
                known is not None
                and known.mode == mode
                and _unchanged(info, stats.get(path), racy_from)
            ):
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
    if not paths:
        return []
    listing = "".join(p + "\n" for p in paths).encode("utf-8", "surrogateescape")
    if any("\n" in p for p in paths):  # --stdin-paths is line-based: hash those one by one
        return [store.write_blob((repo / p).read_bytes()) for p in paths]
    # One pass that writes: git writes no object the repository (an alternate) has.
    args = ["hash-object", "-w", "--no-filters", "--stdin-paths"]
    return store.git(args, cwd=repo, stdin=listing).decode().split()


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
        for record in _split_z(_git.git(["ls-files", "-z", "--stage"], repo)):
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


def _unchanged(info: os.stat_result, recorded: _Stat | None, racy_from: int) -> bool:
    """Whether the index's sha still holds for a file with this stat: same mtime, size
    and inode, and not modified in the index's own last instant (git's racy check).

    The index is the submission's to write (RepoEnv's agent can): a lie only makes the
    snapshot hold the index's blob, which is then also what the copies run."""
    if recorded is None:
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


def _split_z(out: bytes) -> list[str]:
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _index_info(entries: Iterable[tuple[str, Entry]]) -> bytes:
    return b"".join(
        f"{e.mode} {e.sha}\t{p}\0".encode("utf-8", "surrogateescape") for p, e in entries
    )


def write_tree(store: Store, entries: Mapping[str, Entry]) -> str:
    """The sha of a tree holding exactly ``entries``."""
    index = store.holder / f"index-{next(_counter)}"
    try:
        store.git(
            ["update-index", "-z", "--add", "--index-info"],
            index=index,
            stdin=_index_info(entries.items()),
        )
        return store.git(["write-tree"], index=index).decode().strip()
    finally:
        index.unlink(missing_ok=True)


def tree_entries(store: Store, tree: str) -> dict[str, Entry]:
    """The files of ``tree`` (a tree or commit sha), recursively."""
    out = store.git(["ls-tree", "-r", "-z", "--full-tree", tree])
    entries = {}
    for record in _split_z(out):
        meta, _, path = record.partition("\t")
        mode, _kind, sha = meta.split()
        entries[path] = Entry(mode, sha)
    return entries


def checkout(store: Store, entries: Mapping[str, Entry], dest: Path) -> None:
    """``entries`` written into ``dest`` (created) byte for byte.

    git converts nothing here: the store has no config, and the ``.gitattributes`` files
    are left out of the checkout and written afterwards, so none of them applies.
    """
    dest.mkdir(parents=True, exist_ok=False)
    plain = {p: e for p, e in entries.items() if PurePosixPath(p).name != _ATTRIBUTES}
    index = store.holder / f"index-{next(_counter)}"
    try:
        store.git(
            ["update-index", "-z", "--add", "--index-info"],
            index=index,
            stdin=_index_info(plain.items()),
        )
        store.git(["checkout-index", "--all", "--force"], cwd=dest, index=index, work_tree=dest)
    finally:
        index.unlink(missing_ok=True)
    for path, entry in entries.items():
        if path in plain:
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = store.read_blob(entry.sha)
        if entry.mode == SYMLINK:
            target.symlink_to(os.fsdecode(data))
        else:
            target.write_bytes(data)


_counter = itertools.count(1)
_BLOCK = 4096  # what a file costs a file system beyond its bytes, about
RAM_DIR = Path("/dev/shm")
_RAM_HEADROOM = 256 << 20  # bytes left free in it after a copy


def copies_dir(size: int) -> str | None:
    """Where to make a copy of about ``size`` bytes: ``REPOGYM_COPIES`` if set, else
    ``/dev/shm`` when it is a shared-memory file system with room to spare, else the
    temporary directory (None).

    Creating files is the copy's whole cost, and on many machines (virtual disks, CI
    runners) a file system in memory creates them ten times faster: 20,000 files take
    0.7 s there and 8.8 s on this project's CI disk."""
    chosen = os.environ.get("REPOGYM_COPIES")
    if chosen:
        return chosen
    try:
        info = os.statvfs(RAM_DIR)
        usable = RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK | os.X_OK)
    except OSError:
        return None
    room = info.f_bavail * info.f_frsize
    return str(RAM_DIR) if usable and room >= 2 * size + _RAM_HEADROOM else None
