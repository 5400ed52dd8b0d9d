"""The reports ``repogym grade`` writes into the work tree are never part of the
submission (issue 19): the same grade run twice gives the same verdict, while a file the
user adds under another name is still graded. Real processes on a real repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import Repo

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bugfix"


def grade(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--base", "main", *args],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture
def solved(repo: Repo) -> Repo:
    """examples/bugfix on main, its solution committed on the checked-out branch ``pr``
    (whose `allowed_files: [src/**]` makes any other file a violation)."""
    shutil.copytree(EXAMPLE / "repo", repo.root, dirs_exist_ok=True)
    repo.commit("base")
    repo.branch("pr")
    shutil.copytree(EXAMPLE / "solution", repo.root, dirs_exist_ok=True)
    repo.commit("the fix")
    return repo


def test_the_same_grade_twice_in_the_work_tree_gives_the_same_verdict(solved: Repo) -> None:
    outputs = ("--json", "out.json", "--markdown", "out.md")
    first = grade(solved.root, *outputs)
    second = grade(solved.root, *outputs)
    assert (first.returncode, second.returncode) == (0, 0), second.stdout + second.stderr
    report = json.loads((solved.root / "out.json").read_text())
    assert report["files_changed"] == ["src/slugify/core.py"]
    assert (solved.root / "out.md").is_file()
    # From a subdirectory, the outputs named as they are from there.
    (solved.root / "out.json").unlink()
    (solved.root / "src" / "reports").mkdir()
    inside = ("--json", "reports/r.json", "--markdown", "../out.md")
    third = grade(solved.root / "src", *inside, "-C", "..")
    fourth = grade(solved.root / "src", *inside, "-C", "..")
    assert (third.returncode, fourth.returncode) == (0, 0), fourth.stdout + fourth.stderr


def test_a_file_of_another_name_is_still_graded(solved: Repo) -> None:
    outputs = ("--json", "out.json", "--markdown", "out.md")
    assert grade(solved.root, *outputs).returncode == 0
    # The user's own file, named like a report but not this run's: it is the submission's.
    (solved.root / "notes.json").write_text("{}\n")
    graded = grade(solved.root, *outputs)
    assert graded.returncode == 1, graded.stdout + graded.stderr
    assert "notes.json" in graded.stdout
    assert "out.json" not in json.loads((solved.root / "out.json").read_text())["files_changed"]
    # A report committed is a file of the submission like any other.
    (solved.root / "notes.json").unlink()
    solved.commit("the report, committed", {})
    committed = grade(solved.root, *outputs)
    assert committed.returncode == 1
    assert "out.json" in json.loads((solved.root / "out.json").read_text())["files_changed"]
