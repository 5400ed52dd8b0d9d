"""What the grading processes of one machine share (issue 23): the base's runs of the
tests, made by the first process that needs them and read by the others, so that a
batch's workers (local, or a node's Ray workers) run a base's tests once per machine,
not once per worker. Trees stay each process's own (:mod:`repogym.tree.baselines`): a
checkout costs little, and a tree one process removes must not be one another uses.

Only where no command can write it: in a directory of root's, mode 0700, beside the
sandbox's slot locks (:func:`repogym.sandbox.users.private_directory`), and only while
every command runs as another uid (a sandbox uid, or a container's). Elsewhere (not
root, ``REPOGYM_SANDBOX=off``) each process makes its own: a command running as the
grader's user could write a forged value there for the next job's grade to read.

A value is pickled (only root writes the directory) under the digest of its key and of
repogym's version; made under a lock, so that two processes never make one value at
once; written whole or not at all. The directory keeps the :data:`KEEP` most recent.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from repogym._version import version
from repogym.sandbox.users import private_directory
from repogym.tree.atomic import write_atomic
from repogym.tree.baselines import Key, shared

T = TypeVar("T")
KEEP = 1000  # values kept on the machine (a few kilobytes each)
_DIRECTORY = "node-cache"


def node_shared(key: Key, make: Callable[[], T], *, keep: Callable[[T], bool], safe: bool) -> T:
    """What ``key`` names, made by ``make`` once per process (:func:`shared`) and, when
    ``safe`` (no command runs as this process's user), once per machine; a value that
    ``keep`` refuses (a run that came to no results) is not kept for other processes."""
    if not safe:
        return shared(key, make)
    return shared(key, lambda: _on_node(key, make, keep))


def _on_node(key: Key, make: Callable[[], T], keep: Callable[[T], bool]) -> T:
    directory = private_directory(_DIRECTORY)
    name = hashlib.sha256(repr((version(), key)).encode()).hexdigest()
    path = directory / f"{name}.pickle"
    with _locked(directory / f"{name}.lock"):
        if path.is_file():
            with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError):
                value: T = pickle.loads(path.read_bytes())
                return value
        value = make()
        if keep(value):
            write_atomic(path, pickle.dumps(value))
            _prune(directory)
    return value


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _prune(directory: Path) -> None:
    """Keep the :data:`KEEP` most recently written values (and their locks)."""
    values = sorted(directory.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
    for old in values[: max(0, len(values) - KEEP)]:
        for path in (old, old.with_suffix(".lock")):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
