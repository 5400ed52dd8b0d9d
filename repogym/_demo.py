"""The bundled examples, as throwaway git repositories for ``repogym demo`` and tests.

Each ``examples/NAME/`` holds ``repo/`` (the baseline, with its ``.repogym.yml``) and
``solution/`` (files that a reference submission writes over it). The demo commits the
baseline on ``main``, the solution on a ``submission`` branch, and grades it exactly as
``repogym grade --base main`` would.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from repogym.errors import EngineError, ExitCode, UsageError
from repogym.run.image import prepare
from repogym.task import load_task
from repogym.tree import git as _git


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


def skipped(repo: Path) -> tuple[str, bool] | None:
    """Why the example at ``repo`` cannot be graded here, and whether that is the user's
    to fix before the demo means anything (a missing pytest) rather than a part of it the
    machine does not have (a Docker engine, an image it cannot pull); None to grade it.

    Both are said up front, in one line, instead of grading every example ``FAIL 0.000``
    with the reason in a test log that hidden tests keep out of the report."""
    sha = _git.resolve_commit(repo, "main")
    task = load_task(None, repo=repo, commit=sha, ref="main")
    if task.environment is not None:
        try:
            prepare(task, repo, sha).client.close()
        except EngineError as error:
            said = error.lines[0].split(" (the build log")[0]
            return f"its environment cannot be had here: {said}", False
        return None
    command = task.tests.command if task.tests is not None else ""
    if command.startswith("python -m pytest"):
        python = shutil.which("python")
        if python is None:
            return "its tests run `python -m pytest`, and there is no `python` on PATH", True
        probe = subprocess.run(
            [python, "-c", "import pytest"], capture_output=True, check=False, timeout=120
        )
        if probe.returncode != 0:
            return (
                f"its tests run `python -m pytest`, and {python} has no pytest: "
                f"install it there (`{python} -m pip install pytest`)",
                True,
            )
    return None


def run_demo(*, keep: bool, grade: Callable[[list[str]], int]) -> int:
    """Grade every example's reference solution with ``grade`` (the command line's
    ``repogym grade``); the worst exit code of them.

    An interrupt (Ctrl-C, SIGTERM) stops the whole demo, not just the example being
    graded: it propagates to :func:`main`, which reports it.
    """
    root = Path(tempfile.mkdtemp(prefix="repogym-demo-"))
    worst = 0
    codes = []
    try:
        for name in example_names():
            repo = build_example_repo(name, root / name)
            report = root / f"{name}.json"
            skip = skipped(repo)
            if skip is not None:
                print(f"== {name}: skipped: {skip[0]}\n")
                worst = max(worst, ExitCode.ERROR if skip[1] else 0)
                continue
            print(f"== {name}: grading branch `submission` of {repo} against `main`")
            codes.append(grade(["grade", "-C", str(repo), "--base", "main", "--json", str(report)]))
            worst = max(worst, codes[-1])
            print()
    finally:
        if keep:
            print(f"The repositories and JSON reports are in {root}")
        else:
            for repo in root.iterdir():
                if repo.is_dir():
                    shutil.rmtree(repo, ignore_errors=True)
            print(f"The JSON reports are in {root} (`repogym demo --keep` keeps the repositories)")
    if codes and min(codes) >= ExitCode.ERROR:
        # Said last, where the eye lands: no example was graded at all (issue 43).
        print(
            f"repogym demo: none of the {len(codes)} examples could be graded; each ended in"
            " the error printed under its name above",
            file=sys.stderr,
        )
    return worst
