"""Trees made from a base commit once per process and shared by its grades, and what
was found running commands in them.

A grade needs trees of the base that do not change with the submission: the pristine
base (``Workspace.base_tree``), the rubric's tree, the benchmark's baseline with the
task's setup run in it; and the base's own runs of the tests (issue 22). Making one costs
a checkout, sometimes a setup and a test run; RepoEnv, repeated ``grade()`` calls and a
batch worker's jobs (issue 23) in one process reuse it. Each is keyed by what it is made
of: what kind of tree, the commit, anything else it depends on (the task's digest), and
the ``scope`` it lives in (a container runner's volumes, gone with that runner; ``""`` for
the host).

Not by the repository it came from: a commit's id names its whole tree (git's hashes are
checked against collisions, and the trees are read through a private store that knows no
replace refs), so the same base in two clones (each batch job grades in a clone of its
own) is one tree, made once.

A tree that is no longer a directory (removed by a clean-up) is made again; a value that
is not a tree is kept until its scope is forgotten or it is among the least recently used
past :data:`KEEP` (a worker that grades jobs of many bases must not fill its disk).
"""

from __future__ import annotations

import shutil
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Key:
    """What a shared tree is made of."""

    kind: str
    commit: str
    depends_on: tuple[str, ...] = ()
    scope: str = ""


# The most values kept: a grade makes at most four (the pristine base and the rubric's
# tree where they differ, the benchmark's baseline, the base's runs), so this many
# outlives every grade of a few bases at once.
KEEP = 24

_SHARED: OrderedDict[Key, Any] = OrderedDict()


def shared(key: Key, make: Callable[[], T]) -> T:
    """What ``key`` names, made by ``make`` the first time (a tree: again if it is gone).
    A ``make`` that raises keeps nothing. Past :data:`KEEP` values, the least recently
    used go (a tree with its directory)."""
    value = _SHARED.get(key)
    if value is None or (isinstance(value, Path) and not value.is_dir()):
        value = _SHARED[key] = make()
    _SHARED.move_to_end(key)
    while len(_SHARED) > KEEP:
        drop(next(iter(_SHARED)))
    return value


def drop(key: Key) -> None:
    """Keep nothing for ``key`` (a value that is not to be reused); a tree is removed."""
    value = _SHARED.pop(key, None)
    if isinstance(value, Path):
        shutil.rmtree(value.parent, ignore_errors=True)


def forget(scope: str) -> None:
    """Remove every tree of ``scope`` (its directory's holder too): no later grade can
    use it once the runner that holds it is closed."""
    for key in [key for key in _SHARED if key.scope == scope]:
        value = _SHARED.pop(key)
        if isinstance(value, Path):
            shutil.rmtree(value.parent, ignore_errors=True)
