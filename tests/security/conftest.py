"""Fixtures of the attack corpus: a grader's virtual environment per session (and one per
case for the attacks that poison it), and a :class:`Case` per test."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.run.host import Runner
from tests.security._harness import Case, make_grader_venv


@pytest.fixture(scope="session", autouse=True)
def _sandbox_can_run_python() -> None:
    """As root the attacks run as the sandbox user, which must reach this Python: a
    pyenv under a 0700 /root cannot be run by it (.ci/run opens the way with o+x)."""
    if os.geteuid() != 0:
        return
    run = Runner().run(f"{shlex.quote(sys.executable)} -c pass", Path("/"), timeout=60)
    if not run.ok:
        pytest.fail(
            f"the sandbox user cannot run {sys.executable} ({run.tail(1)}): let others "
            "through its directories (chmod o+x on each, as .ci/run does)",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def venvs() -> Iterator[Path]:
    """Where the graders' venvs are made: a directory the sandbox user can go through, as
    a CI job's venv is. pytest's 0700 temporary directories are not: the grade would stop
    before grading, its PATH's first python out of that user's reach (issue 20)."""
    path = Path(tempfile.mkdtemp(prefix="repogym-venvs-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def grader_python(venvs: Path) -> Path:
    """The python of a grader's venv shared by the attacks that do not poison it."""
    return make_grader_venv(venvs / "shared")


@pytest.fixture
def case(tmp_path: Path, grader_python: Path) -> Iterator[Case]:
    yield from _cleaned(Case(root=tmp_path, python=grader_python))


@pytest.fixture
def own_case(tmp_path: Path, venvs: Path) -> Iterator[Case]:
    """A case with a grader venv of its own, for attacks that write into it."""
    holder = Path(tempfile.mkdtemp(prefix="case-", dir=venvs))
    holder.chmod(0o711)
    yield from _cleaned(Case(root=tmp_path, python=make_grader_venv(holder / "venv")))


def _cleaned(case: Case) -> Iterator[Case]:
    # What an attack that got through left in the temporary directory (the check has
    # already counted it): gone, so that the machine is as before the suite.
    yield case
    for leftover in Path(tempfile.gettempdir()).glob(f"*{case.marker}*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


@pytest.fixture
def readable_secret() -> Iterator[Path]:
    """A file any user may read, outside every tree a grade makes: another user's
    checkout, the source repository of a batch, another grade's copy."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-elsewhere-"))
    holder.chmod(0o755)
    secret = holder / "solution.py"
    secret.write_text("ANSWER = 42\n")
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(holder)
