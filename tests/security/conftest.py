"""Fixtures of the attack corpus: a grader's virtual environment per session (and one per
case for the attacks that poison it), and a :class:`Case` per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security._harness import Case, make_grader_venv


@pytest.fixture(scope="session")
def grader_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a grader's venv shared by the attacks that do not poison it."""
    return make_grader_venv(tmp_path_factory.mktemp("grader") / "venv")


@pytest.fixture
def case(tmp_path: Path, grader_python: Path) -> Case:
    return Case(root=tmp_path, python=grader_python)


@pytest.fixture
def own_case(tmp_path: Path) -> Case:
    """A case with a grader venv of its own, for attacks that write into it."""
    return Case(root=tmp_path, python=make_grader_venv(tmp_path / "venv"))
