"""The submission's changes against its baseline, as git's diff of the snapshot reports
them: a status letter and line counts per path.

The line counts are the costly part (git reads both sides of every changed file), and
git takes them in one thread. So the statuses come first, from ``git diff --raw`` (which
reads no file), and when many paths changed their counts are taken by a ``git diff
--numstat`` per core, each limited to a few directories that together hold its share of
the changed paths (issue 21, bench/diff.py). The counts are git's either way.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, cast

# git's status letters for a change: added, modified, deleted, type changed (a file that
# became a link, or the other way round).
ChangeStatus = Literal["A", "M", "D", "T"]

# A git diff of the baseline and the snapshot: options, then pathspecs with their magic.
Diff = Callable[[list[str], Sequence[str]], bytes]

_WAYS = 4  # numstat processes at most
_PER_WAY = 500  # changed paths each is given at least: fewer are counted in one
_SPECS = 64  # pathspecs at most in all: git matches every entry it walks against each


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One path the submission changed: ``status`` is git's letter for it (renames are
    off: a rename is a deletion and an addition)."""

    path: str
    status: ChangeStatus
    added: int
    removed: int
    binary: bool


def changes(diff: Diff) -> dict[str, FileChange]:
    """Every changed path and its line counts, sorted by path."""
    status = _statuses(diff(["--raw", "--no-abbrev", "-z"], ()))
    ways = max(1, min(os.cpu_count() or 1, _WAYS, len(status) // _PER_WAY))
    groups = pathspec_groups(sorted(status), ways) if ways > 1 else []
    if len(groups) < 2:
        counts = _numstat(diff(["--numstat", "-z"], ()))
    else:
        specs = [[f":(literal){prefix}" for prefix in group] for group in groups]
        with ThreadPoolExecutor(len(specs)) as pool:
            parts = list(pool.map(lambda spec: diff(["--numstat", "-z"], spec), specs))
        counts = {path: c for part in parts for path, c in _numstat(part).items()}
    return {
        path: FileChange(
            path=path,
            status=status.get(path, "M"),
            added=added,
            removed=removed,
            binary=binary,
        )
        for path, (added, removed, binary) in sorted(counts.items())
    }


def pathspec_groups(paths: Sequence[str], ways: int) -> list[list[str]]:
    """``paths`` cut into at most ``ways`` groups of about equal size, each given as the
    prefixes (directories, or paths themselves) that hold exactly its paths.

    A prefix starts as a top-level name and is split into the names below it while it
    holds more than a group's share, none of its paths is the prefix itself (a literal
    pathspec ``a`` would also match ``a/b`` of another group) and there are no more than
    :data:`_SPECS` prefixes; the prefixes are then dealt, largest first, to the group
    that holds the fewest paths so far. Empty groups are left out."""
    share = len(paths) / ways
    held: dict[str, list[str]] = _below("", paths)
    while True:
        prefix = max(held, key=lambda p: len(held[p]))
        under = held[prefix]
        if len(under) <= share or prefix in under:
            break
        children = _below(prefix + "/", under)
        if len(children) < 2 or len(held) - 1 + len(children) > _SPECS:
            break
        del held[prefix]
        held.update(children)
    groups: list[tuple[int, list[str]]] = [(0, []) for _ in range(ways)]
    for prefix in sorted(held, key=lambda p: (-len(held[p]), p)):
        i = min(range(ways), key=lambda k: groups[k][0])
        size, group = groups[i]
        groups[i] = (size + len(held[prefix]), [*group, prefix])
    return [group for _, group in groups if group]


def _below(prefix: str, paths: Sequence[str]) -> dict[str, list[str]]:
    """``paths`` (all of them starting with ``prefix``) by the name that follows it."""
    held: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        name = path[len(prefix) :].partition("/")[0]
        held[prefix + name].append(path)
    return dict(held)


def _statuses(out: bytes) -> dict[str, ChangeStatus]:
    """Parse ``git diff --raw -z``: a record of metadata, then the path."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    return {
        fields[i + 1]: cast(ChangeStatus, fields[i].split()[-1][0])
        for i in range(0, len(fields) - 1, 2)
        if fields[i].startswith(":")
    }


def _numstat(out: bytes) -> dict[str, tuple[int, int, bool]]:
    """Parse ``git diff --numstat -z`` (renames off): lines added, removed, and whether
    git found the file binary (its counts are then ``-``: 0 here)."""
    counts = {}
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        added, removed, path = record.split("\t", 2)
        binary = added == "-"
        counts[path] = (0 if binary else int(added), 0 if binary else int(removed), binary)
    return counts
