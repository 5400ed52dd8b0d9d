"""The bundled examples, as throwaway git repositories for ``repogym demo`` and tests.

Each ``examples/NAME/`` holds ``repo/`` (the baseline, with its ``.repogym.yml``) and
``solution/`` (files that a reference submission writes over it). The demo commits the
baseline on ``main``, the solution on a ``submission`` branch, and grades it exactly as
``repogym grade --base main`` would.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from repogym import _git
from repogym.errors import UsageError


def _examples() -> Path:
    """Where the examples are: inside the installed package (``repogym._examples``, which an
    editable install maps to the checkout's ``examples/``), else beside the source tree."""
    try:
        spec = importlib.util.find_spec("repogym._examples")
    except ImportError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return Path(__file__).resolve().parent.parent / "examples"


EXAMPLES = _examples()
_IDENTITY = {
    "GIT_AUTHOR_NAME": "repogym demo",
    "GIT_AUTHOR_EMAIL": "demo@example.invalid",
    "GIT_COMMITTER_NAME": "repogym demo",
    "GIT_COMMITTER_EMAIL": "demo@example.invalid",
}


def example_names() -> list[str]:
    if not EXAMPLES.is_dir():
        raise UsageError(
            f"{EXAMPLES}: the examples are not here: this installation of repogym is "
            "incomplete; reinstall it (`pip install --force-reinstall repogym`)"
        )
    return sorted(p.name for p in EXAMPLES.iterdir() if (p / "repo" / ".repogym.yml").is_file())


def build_example_repo(name: str, dest: Path, *, solution: bool = True) -> Path:
    """A git repository at ``dest``: the example's baseline on ``main`` and, with
    ``solution``, its reference solution committed on the checked-out ``submission``."""
    source = EXAMPLES / name
    shutil.copytree(source / "repo", dest)
    _run(["init", "--quiet", "--initial-branch=main"], dest)
    _commit(dest, f"{name}: baseline")
    _run(["checkout", "--quiet", "-b", "submission"], dest)
    if solution:
        shutil.copytree(source / "solution", dest, dirs_exist_ok=True)
        _commit(dest, f"{name}: reference solution")
    return dest


def _commit(repo: Path, message: str) -> None:
    _run(["add", "--all"], repo)
    _run(["commit", "--quiet", "--no-verify", "-m", message], repo)


def _run(args: list[str], repo: Path) -> None:
    _git.git(args, repo, env=_IDENTITY)
