"""Putting files into a submission's tree for one test run, and the submission's own back.

The TestGrader's steps 1, 2 and 4 (spec, "TestGrader"): files restored from the baseline
(content and mode: the executable bit, a symlink as a symlink) and hidden tests injected,
then everything as it was, in steps that can each be done again, so that an interrupt
cannot leave the tree half put back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from repogym import _git
from repogym.workspace import Workspace


class TreeSwap:
    """Replaces files in a tree for the run and puts the submission's back afterwards."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._backup = Path(tempfile.mkdtemp(prefix="repogym-swap-"))
        self._saved: dict[str, bool] = {}  # path -> it existed (as file or symlink)

    def __enter__(self) -> TreeSwap:
        return self

    def __exit__(self, *exc: object) -> None:
        # An interrupt (Ctrl-C, or SIGTERM as the CLI raises it) may land anywhere in here,
        # more than once: each step can be done again, so go on until the tree is back,
        # then let the first interrupt through.
        interrupt: KeyboardInterrupt | None = None
        while True:
            try:
                self._put_back()
                break
            except KeyboardInterrupt as error:
                interrupt = interrupt or error
        shutil.rmtree(self._backup, ignore_errors=True)
        if interrupt is not None:
            raise interrupt

    def _put_back(self) -> None:
        """Put each saved path back; a path leaves ``_saved`` only once it is back, and
        doing one again after an interruption gives the same result."""
        while self._saved:
            path, existed = next(iter(self._saved.items()))
            target = self.root / path
            if target.is_symlink() or target.exists():
                _remove(target)
            if existed:
                target.parent.mkdir(parents=True, exist_ok=True)
                # A copy, not a move: an interrupted copy is simply made again.
                _copy(self._backup / path, target)
            else:
                _remove_empty_parents(target.parent, self.root)
            del self._saved[path]

    def _save(self, path: str) -> None:
        """Keep the submission's copy of ``path`` (a copy first, then the record, then the
        removal: an interruption at any point leaves the tree restorable)."""
        if path in self._saved:
            return
        target = self.root / path
        existed = target.is_symlink() or target.exists()
        if existed:
            (self._backup / path).parent.mkdir(parents=True, exist_ok=True)
            _copy(target, self._backup / path)
        self._saved[path] = existed
        if existed:
            _remove(target)

    def restore_from_baseline(self, workspace: Workspace, paths: Iterable[str]) -> list[str]:
        """Put the baseline's version of each path in place, content and mode (executable
        bit, symlink) alike; returns the paths changed."""
        changed = []
        for path in paths:
            target = self.root / path
            entry = _git.tree_entry(workspace.root, workspace.base, path)
            # Only files are restored: an id may name a directory (a Go package, say).
            if (entry is not None and entry.type != "blob") or (
                target.is_dir() and not target.is_symlink()
            ):
                continue
            wanted = None if entry is None else _baseline_state(workspace, entry)
            if wanted == _current_state(target):
                continue
            self._save(path)
            changed.append(path)
            if wanted is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                _write_state(target, wanted)
        return changed

    def inject(self, source: Path | None, files: list[str]) -> None:
        for path in files:
            assert source is not None
            self._save(path)
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / path, target)


# A file as git sees it: (is a symlink, content or link target, executable).
_State = tuple[bool, bytes, bool]


def _baseline_state(workspace: Workspace, entry: _git.TreeEntry) -> _State:
    content = _git.git(["cat-file", "blob", entry.sha], workspace.root)
    return (entry.symlink, content, entry.executable)


# Something else is there (a FIFO, a socket): equal to no state git can hold, since a
# link target cannot contain NUL.
_OTHER: _State = (True, b"\0", False)


def _current_state(target: Path) -> _State | None:
    if target.is_symlink():
        return (True, os.fsencode(target.readlink()), False)
    if target.is_file():
        return (False, target.read_bytes(), bool(target.stat().st_mode & 0o100))
    return _OTHER if target.exists() else None


def _write_state(target: Path, state: _State) -> None:
    symlink, content, executable = state
    if symlink:
        target.symlink_to(os.fsdecode(content))
        return
    target.write_bytes(content)
    if executable:  # as git checks it out: executable wherever it is readable
        mode = target.stat().st_mode
        target.chmod(mode | (mode & 0o444) >> 2)


def _copy(source: Path, dest: Path) -> None:
    """A file, symlink (as a symlink) or directory, copied with its modes."""
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, dest, symlinks=True)
    else:
        shutil.copy2(source, dest, follow_symlinks=False)


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink()


def _remove_empty_parents(directory: Path, root: Path) -> None:
    while directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
