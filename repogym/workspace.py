"""A submission (a git work tree as it is now) and its baseline (a commit).

Everything is computed with git plumbing on a private copy of the index, so grading never
changes the repository's own index, refs or files. Untracked files that are not ignored
are part of the submission: they enter the private index as intent-to-add entries, which
makes them show up in ``git diff`` like any other new file.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path, PurePosixPath

from repogym import _git
from repogym.errors import WorkspaceError
from repogym.task import TASK_FILE, Task, load_task, parse_task

# git decides a blob is binary by a NUL byte in its first 8000 bytes (xdiff-interface.c).
_BINARY_SNIFF = 8000


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One path the submission changed: ``status`` is git's A, M, D or T."""

    path: str
    status: str
    added: int
    removed: int
    binary: bool


class Workspace:
    """A submission tree compared with its baseline commit. Open one with :meth:`open`."""

    def __init__(self, root: Path, base: str, task: Task, *, base_ref: str) -> None:
        self.root = root
        self.base = base
        self.base_ref = base_ref
        self.task = task

    @classmethod
    def open(
        cls, root: str | Path, *, base: str, task: str | Path | Task | None = None
    ) -> Workspace:
        """Open the work tree at ``root`` against the commit ``base``.

        ``task`` is a path to a task file, a loaded :class:`Task`, or None to read
        ``.repogym.yml`` as it is at ``base``, so a submission cannot edit its own rubric.
        """
        top = _git.toplevel(Path(root).resolve())
        sha = _git.resolve_commit(top, base)
        return cls(top, sha, task_for(top, sha, base, task), base_ref=base)

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
        """A pristine tree of ``base``, outside ``root``, materialised once per process."""
        return materialise(self.root, self.base)

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
        return self._files

    def snapshot(self) -> None:
        """Read the changes, the patch and the file list now, once.

        Each is computed on first use and kept, since the submission does not change while
        it is graded. The composite calls this before any grader runs the submission's
        code, which could rewrite the work tree's ``.git/config`` for later git calls.
        """
        _ = self._changes, self._patch, self._files

    @cached_property
    def _patch(self) -> str:
        out = self._git_diff(["--no-color", "--no-ext-diff", "--no-textconv"])
        return out.decode("utf-8", errors="replace")

    @cached_property
    def _files(self) -> tuple[str, ...]:
        with self._index() as env:
            out = _git.git(
                ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], self.root, env=env
            )
        paths = {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}
        return tuple(sorted(p for p in paths if os.path.lexists(self.root / p)))

    def baseline_files(self, under: str) -> tuple[str, ...]:
        """The files under the directory ``under`` at the baseline commit, sorted."""
        out = _git.git(
            ["ls-tree", "-r", "-z", "--name-only", self.base, "--", under.rstrip("/") + "/"],
            self.root,
            env={"GIT_LITERAL_PATHSPECS": "1"},
        )
        return tuple(sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p))

    def is_regular_file(self, path: str) -> bool:
        """Whether ``path`` is a regular file in the submission (not a symlink or missing)."""
        try:
            return (self.root / PurePosixPath(path)).lstat().st_mode & 0o170000 == 0o100000
        except OSError:
            return False

    def read_bytes(self, path: str) -> bytes:
        """The submission's bytes of ``path``; a file the submission deleted reads as empty."""
        change = self._changes.get(path)
        if change is not None and change.status == "D":
            return b""
        target = self.resolve(path)
        try:
            return target.read_bytes()
        except FileNotFoundError:
            raise WorkspaceError(f"{path}: no such file in the submission") from None
        except IsADirectoryError:
            raise WorkspaceError(f"{path}: is a directory, not a file") from None

    def read(self, path: str) -> str:
        """:meth:`read_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def resolve(self, path: str) -> Path:
        """The real location of ``path``; refuses anything that leads outside the tree."""
        pure = PurePosixPath(path)
        if not path or pure.is_absolute() or ".." in pure.parts:
            raise WorkspaceError(f"{path!r}: not a relative path inside the work tree")
        target = Path(os.path.realpath(self.root / pure))
        if target != self.root and self.root not in target.parents:
            raise WorkspaceError(f"{path}: leads outside the work tree (through a symlink)")
        return target

    # -- the diff, computed once -------------------------------------------------------

    @cached_property
    def _changes(self) -> dict[str, FileChange]:
        out = self._git_diff(["--raw", "--numstat", "--no-abbrev", "-z"])
        changes = _parse_raw_numstat(out)
        # A submission's .gitattributes can mark text as binary (`-diff`) to hide lines
        # from max_lines_changed; count those as text unless the content really is binary.
        disguised = [c.path for c in changes.values() if c.binary and not self._is_binary(c)]
        for path in disguised:
            # `--numstat` ignores `--text` (git 2.39), so count the lines of a text patch.
            patch = self._git_diff(
                ["--text", "--unified=0", "--no-ext-diff", "--no-textconv"], [path]
            )
            added, removed = _count_patch_lines(patch)
            changes[path] = replace(changes[path], added=added, removed=removed, binary=False)
        return dict(sorted(changes.items()))

    def _is_binary(self, change: FileChange) -> bool:
        old = _git.show_file(self.root, self.base, change.path) or b""
        try:
            new = (self.root / change.path).read_bytes()[:_BINARY_SNIFF]
        except OSError:
            new = b""
        return b"\0" in old[:_BINARY_SNIFF] or b"\0" in new

    def _git_diff(self, options: list[str], paths: list[str] | None = None) -> bytes:
        args = ["diff", "--no-renames", *options, self.base, "--"]
        with self._index() as env:
            return _git.git(args + (paths or []), self.root, env=env)

    def _index(self) -> _PrivateIndex:
        return _PrivateIndex(self.root)


class _PrivateIndex:
    """A copy of the repository's index with untracked files added as intent-to-add.

    Copying keeps git's stat cache, so unchanged files are not read again.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dir: str | None = None

    def __enter__(self) -> dict[str, str]:
        self._dir = tempfile.mkdtemp(prefix="repogym-index-")
        index = str(Path(self._dir) / "index")
        real = _git.git(["rev-parse", "--git-path", "index"], self.root).decode().strip()
        real_path = self.root / real
        if real_path.exists():
            # copy2 keeps the mtime, which git compares with entries to spot racy ones.
            shutil.copy2(real_path, index)
        env = {"GIT_INDEX_FILE": index, "GIT_LITERAL_PATHSPECS": "1"}
        _git.git(["add", "--all", "--intent-to-add", "--", "."], self.root, env=env)
        return env

    def __exit__(self, *exc: object) -> None:
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)


def _count_patch_lines(patch: bytes) -> tuple[int, int]:
    """Added and removed lines of a one-file unified diff."""
    added = removed = 0
    in_hunk = False
    for line in patch.split(b"\n"):
        if line.startswith(b"@@"):
            in_hunk = True
        elif line.startswith(b"diff --git"):
            in_hunk = False
        elif in_hunk and line.startswith(b"+"):
            added += 1
        elif in_hunk and line.startswith(b"-"):
            removed += 1
    return added, removed


def _parse_raw_numstat(out: bytes) -> dict[str, FileChange]:
    """Parse ``git diff --raw --numstat -z``: raw records first, then numstat records."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    status: dict[str, str] = {}
    changes: dict[str, FileChange] = {}
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        status[fields[i + 1]] = fields[i].split()[-1][0]
        i += 2
    while i + 1 < len(fields) and fields[i]:
        added, removed, path = fields[i].split("\t", 2)
        binary = added == "-"
        changes[path] = FileChange(
            path=path,
            status=status.get(path, "M"),
            added=0 if binary else int(added),
            removed=0 if binary else int(removed),
            binary=binary,
        )
        i += 1
    return changes


def shown_path(path: str) -> str:
    """``path`` as a message shows it: as it is when every character prints, else quoted,
    with an undecodable byte (held as a lone surrogate) written ``\\xff``, as the reports
    write it, and other characters that do not print as Python escapes (``\\n``), so that
    one message stays one line."""
    if path.isprintable():
        return path
    shown = []
    for char in path:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            shown.append(f"\\x{code - 0xDC00:02x}")
        else:
            shown.append(char if char.isprintable() else repr(char)[1:-1])
    return '"' + "".join(shown) + '"'


def files_under(directory: Path) -> list[str]:
    """Every file below ``directory`` as a sorted POSIX path relative to it; [] if absent.

    How hidden tests are listed: they are copied into the tree at these same paths.
    """
    if not directory.is_dir():
        return []
    return sorted(
        p.relative_to(directory).as_posix() for p in directory.rglob("*") if not p.is_dir()
    )


def task_for(
    repo: Path, commit: str, ref: str, task: str | os.PathLike[str] | Task | None = None
) -> Task:
    """The task to grade with: ``task`` itself when loaded, the file at the path ``task``,
    or by default the task file as it is at ``commit`` (named ``ref`` in messages)."""
    if isinstance(task, Task):
        return task
    if task is not None:
        return load_task(task)
    return task_at(repo, commit, ref)


def task_at(repo: Path, commit: str, ref: str | None = None) -> Task:
    """The task file as it is at ``commit`` (never the submission's copy)."""
    entry = _git.tree_entry(repo, commit, TASK_FILE)
    name = ref or commit[:12]
    if entry is None:
        raise WorkspaceError(
            f"{TASK_FILE} not found at {name}: commit a task file on the base branch, "
            "or pass one with --task FILE"
        )
    if entry.type != "blob" or entry.symlink:
        what = {"tree": "a directory", "commit": "a submodule"}.get(entry.type, "a symlink")
        raise WorkspaceError(
            f"{TASK_FILE} at {name} is {what}: commit the task file itself there, "
            "or pass one with --task FILE"
        )
    raw = _git.git(["cat-file", "blob", entry.sha], repo)
    return parse_task(raw, f"{TASK_FILE}@{name}")


_BASELINES: dict[tuple[str, str], Path] = {}


def materialise(repo: Path, commit: str) -> Path:
    """A pristine tree of ``commit``, made once per process and shared (read it only)."""
    common = _git.git(["rev-parse", "--git-common-dir"], repo).decode().strip()
    key = (str((repo / common).resolve()), commit)
    if key in _BASELINES and _BASELINES[key].is_dir():
        return _BASELINES[key]
    _BASELINES[key] = export_tree(repo, commit, prefix="repogym-baseline-")
    return _BASELINES[key]


def export_tree(repo: Path, commit: str, *, prefix: str) -> Path:
    """The files of ``commit`` in a new private directory (no ``.git``), removed at exit.

    A private index keeps the repository's own untouched.
    """
    holder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, holder, True)
    tree = holder / "tree"
    env = {"GIT_INDEX_FILE": str(holder / "index")}
    _git.git(["read-tree", commit], repo, env=env)
    _git.git(["checkout-index", "--all", "--force", f"--prefix={tree}/"], repo, env=env)
    (holder / "index").unlink()
    tree.mkdir(exist_ok=True)
    return tree


def clone_at(repo: Path, commit: str, dest: Path) -> Path:
    """A git work tree at ``dest``, checked out (detached) at ``commit``.

    It borrows ``repo``'s objects read-only (``--shared``) and has no remote, so nothing
    done in it, a ``git push`` included, reaches ``repo``.
    """
    _git.git(["clone", "--shared", "--no-checkout", "--quiet", "--", str(repo), str(dest)], repo)
    _git.git(["checkout", "--quiet", "--detach", commit], dest)
    _git.git(["remote", "remove", "origin"], dest)
    return dest
