"""A submission (a git work tree as it is now) and its baseline (a commit).

The work tree is read once into a snapshot (repogym.tree.snapshot): tracked files, and
untracked ones that are not ignored, as git lists them. Everything else is computed with
git plumbing on that snapshot in a private store, so grading never changes the
repository's index, refs, objects or files, and what the constraints check is exactly
what the commands run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cached_property
from pathlib import Path, PurePosixPath

from repogym.errors import UsageError, WorkspaceError
from repogym.run import choose as _choose
from repogym.run.protocol import CommandRunner
from repogym.sandbox import scratch
from repogym.task import Task, TaskSource, load_task
from repogym.tree import baselines as _baselines
from repogym.tree import git as _git
from repogym.tree.changes import FileChange, changes
from repogym.tree.snapshot import Snapshot, inside
from repogym.tree.store import Entry, Store, checkout, tree_entries


class Workspace:
    """A submission tree compared with its baseline commit. Open one with :meth:`open`.

    ``base`` is the baseline, the commit the diff is taken against (in a pull request,
    the merge base): the constraints and the perf baseline use it. ``rubric`` is the
    commit the task was read at (the base branch's tip; ``base`` when not given): the
    test files and runner configuration restored into each test run, the hidden tests
    and the custom graders come from it, so that the fork point a pull request chose
    decides nothing of its rubric (issue 19).

    The submission is read once, by :meth:`snapshot`, before any of its code runs: from
    then on the diff, the file list, every file read and every copy the commands run in
    come from that snapshot, never from the work tree again (see repogym.tree.snapshot).
    ``leave_out`` names untracked files that are not the submission's (the reports this
    grade writes into the tree): the snapshot does not take them.
    """

    def __init__(
        self,
        root: Path,
        base: str,
        task: Task,
        *,
        base_ref: str,
        rubric: str | None = None,
        leave_out: Collection[str] = (),
        runner: CommandRunner | None = None,
        shared: bool = True,
    ) -> None:
        self.root = root
        self.base = base
        self.base_ref = base_ref
        self.rubric = rubric or base
        self.task = task
        self.leave_out = frozenset(leave_out)
        self.runner = runner
        # Whether what is made of its base may be shared with the process's other grades
        # (repogym.tree.baselines): not when the repository's git is the submission's to
        # write, as RepoEnv's workspace is (issue 23), whose base it could forge.
        self.shared = shared
        self._own_trees: dict[str, Path] = {}

    def command_runner(self) -> CommandRunner:
        """What runs the task's commands in this grade: the runner given (``grade()``
        chooses it, :mod:`repogym.run.choose`), else the one chosen there for this
        workspace's task when first asked (closed at exit)."""
        if self.runner is None:
            made = _choose.command_runner(self.task, self.root, self.rubric)
            atexit.register(made.close)
            self.runner = made
        return self.runner

    @classmethod
    def open(cls, root: str | Path, *, base: str, task: TaskSource = None) -> Workspace:
        """Open the work tree at ``root`` against the commit ``base``.

        ``task`` is a path to a task file, a loaded :class:`Task`, or None to read
        ``.repogym.yml`` as it is at ``base``, so a submission cannot edit its own rubric.
        """
        top = _git.toplevel(Path(root).resolve())
        sha = _git.resolve_commit(top, base)
        return cls(top, sha, load_task(task, repo=top, commit=sha, ref=base), base_ref=base)

    def snapshot(self) -> Snapshot:
        """The submission as it is now, read once (HEAD included) and kept; the
        composite takes it before any grader runs the submission's code."""
        return self._snapshot

    @cached_property
    def _snapshot(self) -> Snapshot:
        _ = self.head
        snapshot = Snapshot.take(self.root, leave_out=self.leave_out)
        atexit.register(snapshot.close)
        return snapshot

    def close(self) -> None:
        """Remove what reading the submission made (its snapshot's store, in memory where
        there is room): at once, not when the process exits, which a batch's worker
        ended by its pool never does (issue 43: 65 MB a job left in /dev/shm)."""
        snapshot = self.__dict__.pop("_snapshot", None)
        if snapshot is not None:
            atexit.unregister(snapshot.close)
            snapshot.close()

    @cached_property
    def head(self) -> str | None:
        """The sha of the work tree's HEAD commit, or None on an unborn branch."""
        try:
            return (
                _git.git(["rev-parse", "--verify", "--quiet", "HEAD"], self.root).decode().strip()
            )
        except WorkspaceError:
            return None

    @property
    def baseline(self) -> Path:
        """A pristine tree of ``base``, outside ``root``, materialised once per process
        (once per Workspace when it is not ``shared``)."""
        return self._tree(self.base)

    @property
    def rubric_tree(self) -> Path:
        """A pristine tree of ``rubric`` (where hidden tests and custom graders are read),
        outside ``root``, materialised as :attr:`baseline` is."""
        return self._tree(self.rubric)

    def _tree(self, commit: str) -> Path:
        if self.shared:
            return materialise(self.root, commit)
        if commit not in self._own_trees:
            self._own_trees[commit] = export_tree(self.root, commit, prefix="repogym-baseline-")
        return self._own_trees[commit]

    def changed_files(self) -> tuple[str, ...]:
        """Every path the submission added, modified or deleted, sorted (renames are a
        deletion plus an addition)."""
        return tuple(self._changes)

    def diff_stats(self) -> dict[str, FileChange]:
        """Added and removed lines per changed path (0 and 0 for binary files)."""
        return dict(self._changes)

    def patch(self) -> str:
        """The unified diff of the submission against the baseline; binary files marked."""
        return self._patch

    def files(self) -> tuple[str, ...]:
        """Every file of the submission (tracked or untracked, not ignored), sorted."""
        return self._snapshot.files()

    def entry(self, path: str) -> Entry | None:
        """The submission's entry of ``path`` (mode and blob), or None."""
        return self._snapshot.entries.get(path)

    def copy(self, dest: Path, entries: Mapping[str, Entry] | None = None) -> Path:
        """A fresh copy of the submission (or of ``entries``) written into ``dest``."""
        return self._snapshot.checkout(dest, entries)

    @cached_property
    def _patch(self) -> str:
        options = ["--no-color", "--no-ext-diff", "--no-textconv"]
        large = [c.path for c in self._changes.values() if c.binary]
        stanzas = _large_binary_stanzas(self._snapshot.store, self._git_diff, large)
        if not stanzas:
            return self._git_diff(options).decode("utf-8", errors="replace")
        # git diff reads an added or deleted binary file whole to say it differs (1 GiB
        # of memory for a 1 GiB file, issue 19): those are left out and said here.
        excluded = [f":(exclude,literal){path}" for path in stanzas]
        out = self._git_diff(options, excluded)
        out += b"".join(stanzas[path] for path in sorted(stanzas))
        return out.decode("utf-8", errors="replace")

    def baseline_files(self, under: str, *, at: str | None = None) -> tuple[str, ...]:
        """The files under the directory ``under`` at the baseline commit (or at the
        commit ``at``), sorted."""
        commit = at or self.base
        out = _git.git(
            ["ls-tree", "-r", "-z", "--name-only", commit, "--", under.rstrip("/") + "/"],
            self.root,
            env={"GIT_LITERAL_PATHSPECS": "1"},
        )
        return tuple(sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p))

    def is_regular_file(self, path: str) -> bool:
        """Whether ``path`` is a regular file in the submission (not a symlink or missing)."""
        name = inside("", path)
        entry = None if name is None else self.entry(name)
        return entry is not None and entry.regular

    def read_bytes(self, path: str) -> bytes:
        """The submission's bytes of ``path``; a file the submission deleted reads as empty.

        A symlink is followed inside the submission only."""
        pure = PurePosixPath(path)
        name = inside("", path)
        if name is None or pure.is_absolute() or ".." in pure.parts:
            raise WorkspaceError(f"{path!r}: not a relative path inside the work tree")
        change = self._changes.get(name)
        if change is not None and change.status == "D":
            return b""
        data = self._snapshot.read_bytes(name)
        if data is None:
            if self._snapshot.follow(name) is not None:
                raise WorkspaceError(f"{path}: not a file (a submodule)")
            if name in self._snapshot.entries or _through_link(self._snapshot, name):
                raise WorkspaceError(f"{path}: leads outside the work tree (through a symlink)")
            if any(p.startswith(name + "/") for p in self._snapshot.entries):
                raise WorkspaceError(f"{path}: is a directory, not a file")
            raise WorkspaceError(f"{path}: no such file in the submission")
        return data

    def read(self, path: str) -> str:
        """:meth:`read_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` in the work tree itself (RepoEnv's file actions);
        refuses anything that leads outside the tree."""
        pure = PurePosixPath(path)
        if not path or pure.is_absolute() or ".." in pure.parts:
            raise WorkspaceError(f"{path!r}: not a relative path inside the work tree")
        target = Path(os.path.realpath(self.root / pure))
        if target != self.root and self.root not in target.parents:
            raise WorkspaceError(f"{path}: leads outside the work tree (through a symlink)")
        return target

    # -- the diff of the snapshot, computed once ----------------------------------------

    @cached_property
    def _changes(self) -> dict[str, FileChange]:
        return changes(self._git_diff)

    def _git_diff(self, options: list[str], pathspecs: Sequence[str] = ()) -> bytes:
        """``git diff`` of the baseline and the snapshot; ``pathspecs`` with their magic
        (else none is read as a pattern)."""
        snapshot = self._snapshot
        args = ["diff", "--cached", "--no-renames", *options, self.base, "--", *pathspecs]
        if not pathspecs:
            return snapshot.store.git(args, index=snapshot.index)
        env = {**snapshot.store.env(snapshot.index), "GIT_LITERAL_PATHSPECS": "0"}
        return _git.git(args, snapshot.store.holder, env=env)


PATCH_BLOB_LIMIT = 1 << 20  # bytes of a binary blob above which git diff is not asked


def _large_binary_stanzas(
    store: Store, diff: Callable[[list[str], Sequence[str]], bytes], paths: list[str]
) -> dict[str, bytes]:
    """For each of ``paths`` (binary, as git's numstat found them without reading a
    large blob) that has a side over :data:`PATCH_BLOB_LIMIT`, the stanza git diff
    would print for it, made from the raw diff and the blobs' sizes alone."""
    if not paths:
        return {}
    out = diff(["--raw", "--no-abbrev", "-z"], [f":(literal){p}" for p in paths])
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    records = [(fields[i][1:].split(), fields[i + 1]) for i in range(0, len(fields) - 1, 2)]
    shas = sorted({sha for meta, _ in records for sha in meta[2:4] if sha.strip("0")})
    sizes = dict(zip(shas, _blob_sizes(store, shas), strict=True))
    stanzas = {}
    for (old_mode, new_mode, old, new, _status), path in records:
        if max(sizes.get(old, 0), sizes.get(new, 0)) <= PATCH_BLOB_LIMIT:
            continue
        a = "/dev/null" if not old.strip("0") else f"a/{path}"
        b = "/dev/null" if not new.strip("0") else f"b/{path}"
        lines = [f"diff --git a/{path} b/{path}"]
        if a == "/dev/null":
            lines += [f"new file mode {new_mode}", f"index {old[:7]}..{new[:7]}"]
        elif b == "/dev/null":
            lines += [f"deleted file mode {old_mode}", f"index {old[:7]}..{new[:7]}"]
        elif old_mode != new_mode:
            lines += [f"old mode {old_mode}", f"new mode {new_mode}"]
            lines += [f"index {old[:7]}..{new[:7]}"]
        else:
            lines += [f"index {old[:7]}..{new[:7]} {new_mode}"]
        lines.append(f"Binary files {a} and {b} differ")
        stanzas[path] = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    return stanzas


def _blob_sizes(store: Store, shas: list[str]) -> list[int]:
    listing = "".join(f"{sha}\n" for sha in shas).encode()
    out = store.git(["cat-file", "--batch-check=%(objectsize)"], stdin=listing)
    return [int(size) for size in out.split()]


def _through_link(snapshot: Snapshot, path: str) -> bool:
    """Whether a directory on the way to ``path`` is a symlink of the submission."""
    parts = path.split("/")
    return any(
        (e := snapshot.entries.get("/".join(parts[:i]))) is not None and e.mode == "120000"
        for i in range(1, len(parts))
    )


def files_under(directory: Path) -> list[str]:
    """Every file below ``directory`` as a sorted POSIX path relative to it; [] if absent.

    How hidden tests are listed: they are copied into the tree at these same paths, by
    root in a container, into the copy where the submission's code runs. So each must be
    a regular file of the directory: a symlink below it (to a file or a directory) is
    refused, not copied or followed, for what it names could be anything root reads
    (issue 19), and so is a FIFO or a device. Raises :class:`UsageError` naming it.
    """
    if not directory.is_dir():
        return []
    files: list[str] = []
    wrong: list[tuple[str, str]] = []
    for top, dirs, names in os.walk(directory):
        for name in sorted(dirs + names):
            path = Path(top, name)
            relative = path.relative_to(directory).as_posix()
            status = path.lstat()
            if stat.S_ISLNK(status.st_mode):
                wrong.append((relative, f"is a symlink (-> {path.readlink()})"))
            elif stat.S_ISREG(status.st_mode):
                files.append(relative)
            elif not stat.S_ISDIR(status.st_mode):
                wrong.append((relative, "is not a regular file"))
    if wrong:
        relative, what = min(wrong)
        raise UsageError(
            f"hidden tests: {relative} in {directory} {what}; a hidden test must be a "
            "file in the directory itself: put the file there, not a link to it"
        )
    return sorted(files)


def materialise(repo: Path, commit: str) -> Path:
    """A pristine tree of ``commit``, made once per process and shared (read it only)."""
    key = _baselines.Key(kind="pristine", commit=commit)
    return _baselines.shared(key, lambda: export_tree(repo, commit, prefix="repogym-baseline-"))


def export_tree(
    repo: Path, commit: str, *, prefix: str, where: str | None = None, commands: bool = False
) -> Path:
    """The files of ``commit`` in a new private directory (no ``.git``) under ``where``
    (default: the temporary directory), removed at exit.

    Checked out through a private store (repogym.tree.store): no config, filter or
    attribute of the repository's converts a byte.
    """
    holder = scratch.holder(prefix, where, commands=commands)
    atexit.register(shutil.rmtree, holder, True)
    store = Store(repo)
    try:
        checkout(store, tree_entries(store, commit), holder / "tree")
    finally:
        store.close()
    return holder / "tree"
