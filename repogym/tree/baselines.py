"""Trees made from a base commit once per process and shared by its grades.

A grade needs trees of the base that do not change with the submission: the pristine
base (``Workspace.base_tree``), the rubric's tree, the benchmark's baseline with the
task's setup run in it. Making one costs a checkout, sometimes a setup; RepoEnv and
repeated ``grade()`` calls in one process reuse it. Each is keyed by what it is made of:
what kind of tree, the repository (its common git directory, so worktrees share), the
commit, anything else it depends on (the task's digest), and the ``scope`` it lives in
(a container runner's volumes, gone with that runner; ``""`` for the host).

A tree that is no longer a directory (removed by a clean-up) is made again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repogym.tree import git as _git


@dataclass(frozen=True, slots=True, kw_only=True)
class Key:
    """What a shared tree is made of."""

    kind: str
    repository: str
    commit: str
    depends_on: tuple[str, ...] = ()
    scope: str = ""


_TREES: dict[Key, Path] = {}


def repository(repo: Path) -> str:
    """The identity of ``repo``'s objects: its common git directory, resolved."""
    common = _git.git(["rev-parse", "--git-common-dir"], repo).decode().strip()
    return str((repo / common).resolve())


def shared(key: Key, make: Callable[[], Path]) -> Path:
    """The tree of ``key``, made by ``make`` the first time (and again if it is gone). A
    ``make`` that raises keeps nothing."""
    tree = _TREES.get(key)
    if tree is None or not tree.is_dir():
        tree = _TREES[key] = make()
    return tree


def forget(scope: str) -> None:
    """Remove every tree of ``scope`` (its directory's holder too): no later grade can
    use it once the runner that holds it is closed."""
    for key in [key for key in _TREES if key.scope == scope]:
        shutil.rmtree(_TREES.pop(key).parent, ignore_errors=True)
