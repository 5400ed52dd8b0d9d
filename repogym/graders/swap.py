"""Putting files into a submission's tree for one test run, and the submission's own back.

The TestGrader's steps 1, 2 and 4 (spec, "TestGrader"): files restored from the baseline
(content and mode: the executable bit, a symlink as a symlink) and hidden tests injected,
then everything as it was, with signals held back meanwhile so that an interrupt cannot
leave the tree half put back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from repogym import git as _git
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
        with _signals_held():
            self._put_back()

    def _put_back(self) -> None:
        for path, existed in self._saved.items():
            target = self.root / path
            if target.is_symlink() or target.exists():
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
            if existed:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(self._backup / path, target)
            else:
                _remove_empty_parents(target.parent, self.root)
        shutil.rmtree(self._backup, ignore_errors=True)

    def _save(self, path: str) -> None:
        if path in self._saved:
            return
        target = self.root / path
        existed = target.is_symlink() or target.exists()
        self._saved[path] = existed
        if existed:
            (self._backup / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(target, self._backup / path)

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


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while the tree is put back: an interrupt then
    lands once the submission's files are all in place, never halfway through."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _remove_empty_parents(directory: Path, root: Path) -> None:
    while directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent
