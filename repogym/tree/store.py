"""The private git store a snapshot lives in, and writing trees out of it.

A throwaway bare git directory whose object database falls back on the repository's
(``objects/info/alternates``), so that nothing is written into the repository. It has no
config of the repository's: no filter, no hook, no fsmonitor, no attributes. Checkouts
leave the ``.gitattributes`` files out and write them afterwards, so that no attribute of
the submission's converts a byte (see repogym.tree.snapshot).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import shutil
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.errors import WorkspaceError
from repogym.sandbox import scratch as _scratch
from repogym.sandbox import seal as _seal
from repogym.sandbox import users as _sandbox
from repogym.tree import git as _git
from repogym.tree.links import place

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
        self.holder = _scratch.holder("repogym-snapshot-", copies_dir(0))
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
        self._process = _git.start(["cat-file", "--batch"], store.holder, env=store.env())

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


def split_z(out: bytes) -> list[str]:
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _index_info(entries: Iterable[tuple[str, Entry]]) -> bytes:
    return b"".join(
        f"{e.mode} {e.sha}\t{p}\0".encode("utf-8", "surrogateescape") for p, e in entries
    )


def write_index(store: Store, entries: Iterable[tuple[str, Entry]]) -> Path:
    """A new private index file in ``store`` holding exactly ``entries``; the caller
    removes it (or :meth:`Store.close` does, with the rest of the store)."""
    index = store.holder / f"index-{next(_counter)}"
    try:
        store.git(
            ["update-index", "-z", "--add", "--index-info"],
            index=index,
            stdin=_index_info(entries),
        )
    except BaseException:
        index.unlink(missing_ok=True)
        raise
    return index


@contextlib.contextmanager
def _index_of(store: Store, entries: Iterable[tuple[str, Entry]]) -> Iterator[Path]:
    """A private index file in ``store`` holding exactly ``entries``, removed after."""
    index = write_index(store, entries)
    try:
        yield index
    finally:
        index.unlink(missing_ok=True)


def write_tree(store: Store, index: Path) -> str:
    """The sha of the tree that the private index file ``index`` holds."""
    return store.git(["write-tree"], index=index).decode().strip()


def tree_entries(store: Store, tree: str) -> dict[str, Entry]:
    """The files of ``tree`` (a tree or commit sha), recursively."""
    out = store.git(["ls-tree", "-r", "-z", "--full-tree", tree])
    entries = {}
    for record in split_z(out):
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
    with _index_of(store, plain.items()) as index:
        store.git(["checkout-index", "--all", "--force"], cwd=dest, index=index, work_tree=dest)
    for path, entry in entries.items():
        if path in plain:
            continue
        # Through directories opened without following a link: a tree can list a
        # symlink and a .gitattributes below a directory of the same name (issue 19).
        data = store.read_blob(entry.sha)
        if entry.mode == SYMLINK:
            place(dest, path, link=os.fsdecode(data))
        else:
            place(dest, path, data=data, mode=0o755 if entry.mode == "100755" else 0o644)


_counter = itertools.count(1)
RAM_DIR = Path("/dev/shm")
_RAM_HEADROOM = 256 << 20  # bytes left free in it after a copy


def copies_dir(size: int) -> str | None:
    """Where to make a copy of about ``size`` bytes: ``REPOGYM_COPIES`` if set, else
    ``/dev/shm`` when it is a shared-memory file system with room to spare, else the
    temporary directory (None).

    Creating files is the copy's whole cost, and on many machines (virtual disks, CI
    runners) a file system in memory creates them ten times faster: 20,000 files take
    0.7 s there and 8.8 s on this project's CI disk.

    Not ``/dev/shm`` where the commands run as a sandbox uid confined by Landlock rather
    than sealed: they may read ``/dev/shm`` (POSIX semaphores live there), and so would
    another grade's copy there (issue 43)."""
    chosen = os.environ.get("REPOGYM_COPIES")
    confined = _sandbox.switches_user() and _seal.unavailable() is not None
    if chosen:
        if not Path(chosen).is_dir():
            raise WorkspaceError(
                f"REPOGYM_COPIES={chosen}: not a directory; make it, or unset REPOGYM_COPIES "
                "to let repogym choose"
            )
        if confined and _seal.within(os.path.realpath(chosen), str(RAM_DIR)):
            raise WorkspaceError(
                f"REPOGYM_COPIES={chosen}: the commands here are not sealed, and they may "
                f"read {RAM_DIR} (POSIX semaphores live there), another grade's copies too; "
                "choose a directory elsewhere"
            )
        return chosen
    if confined:
        return None
    try:
        info = os.statvfs(RAM_DIR)
        usable = RAM_DIR.is_dir() and os.access(RAM_DIR, os.W_OK | os.X_OK)
    except OSError:
        return None
    room = info.f_bavail * info.f_frsize
    return str(RAM_DIR) if usable and room >= 2 * size + _RAM_HEADROOM else None
