"""Symlinks and the graded tree: where a path really leads, read one component at a time.

The submission controls every symlink in its tree (issue 9). The constraint gate resolves
the links it adds without looking outside the tree (:func:`resolve_in_tree`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_HOPS = 40  # symlinks followed in one resolution, as Linux allows before ELOOP


class SymlinkLoop(Exception):
    """More than :data:`MAX_HOPS` symlinks in one resolution."""


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # missing, or under a file: read as written from here on
        return False


def resolve_in_tree(root: Path, path: str) -> str | None:
    """``path`` (relative to ``root``) with every symlink in it resolved as the kernel
    would, relative to ``root`` ("" for the root itself); None as soon as it leads
    outside ``root``, whose outside is never looked at. Raises :class:`SymlinkLoop`."""
    pending = path.split("/")
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        candidate = root.joinpath(*done, part)
        if not _is_link(candidate):
            done.append(part)
            continue
        hops += 1
        if hops > MAX_HOPS:
            raise SymlinkLoop(path)
        target = str(candidate.readlink())
        if target.startswith("/"):
            return None
        pending = target.split("/") + pending
    return "/".join(done)
