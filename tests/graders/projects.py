"""The project the tests grader's tests grade: a calculator with a bug, its fix, hidden tests."""

from __future__ import annotations

from pathlib import Path

from repogym.graders import TestGrader
from repogym.models import GradeComponent
from repogym.workspace import Workspace
from tests.support.repo import Repo

PYTEST = "python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}"


CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


FIXED = CALC.replace("return a - b\n\n", "return a + b\n\n", 1)


def task_text(
    f2p: str = "[tests/test_calc.py::test_add]",
    p2p: str = "[tests/test_calc.py::test_sub, 'tests/test_calc.py::test_sub_param[one one]']",
    extra: str = "",
    command: str = PYTEST,
) -> str:
    return (
        f"version: 1\ntype: bugfix\ntests:\n  command: {command}\n"
        f"  fail_to_pass: {f2p}\n  pass_to_pass: {p2p}\n{extra}"
    )


def snapshot(root: Path) -> dict[str, bytes]:
    files = {}
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if ".git/" in relative + "/" or "__pycache__" in relative or path.is_dir():
            continue
        files[relative] = path.read_bytes()
    return files


def grade(repo: Repo, **kwargs: object) -> GradeComponent:
    workspace = Workspace.open(repo.root, base="main")
    before = snapshot(repo.root)
    component = TestGrader(**kwargs).grade(workspace)  # type: ignore[arg-type]
    assert snapshot(repo.root) == before, "grading changed the submission tree"
    return component


HIDDEN = "from calc import add\n\n\ndef test_secret():\n    assert add(10, 5) == 15\n"
