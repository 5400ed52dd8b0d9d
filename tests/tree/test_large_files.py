"""A large file in the submission (issue 19): a 1 GiB sparse untracked file drove a git of
the grade to 1 GB of memory (`git diff` reads an added binary file whole to say that it
differs). No process of a grade reads a file whole to look at its start or to hash it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from repogym.tree.git import git
from repogym.workspace import PATCH_BLOB_LIMIT, Workspace
from tests.support.repo import Repo

TASK = """version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: [tests/test_m.py::test_f]
constraints:
  max_lines_changed: 40
  forbidden_patterns: ['breakpoint\\(']
  paths: [src/**/*.py]
  max_function_length: 20
"""
BASE = {
    ".repogym.yml": TASK,
    "src/m.py": "def f():\n    return 2\n",
    "tests/test_m.py": "from src.m import f\n\ndef test_f():\n    assert f() == 1\n",
}
BOUND_MB = 200  # generous: the grade's largest process measured 38 MB (README)

# Runs the grade as its child and prints the largest resident set of the child and all
# it waited for, in kilobytes (Linux's ru_maxrss).
MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def test_a_1_gib_sparse_file_is_graded_in_little_memory(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", BASE)
    repo.branch("pr")
    repo.write({"src/m.py": "def f():\n    return 1\n"})
    with (repo.root / "src" / "big.bin").open("wb") as big:
        big.truncate(1 << 30)  # untracked, all hole: no disk, and 1 GiB to git
    report = tmp_path / "report.json"
    grade = [sys.executable, "-m", "repogym", "grade", "-C", str(repo.root), "--base", "main"]
    env = {**os.environ, "REPOGYM_COPIES": str(tmp_path)}  # not /dev/shm: a 1 GiB copy
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *grade, "--json", str(report)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, peak_kb = map(int, done.stdout.split()[-2:])
    assert code == 0, done.stderr
    assert json.loads(report.read_text())["files_changed"] == ["src/big.bin", "src/m.py"]
    assert peak_kb < BOUND_MB * 1024, f"the grade's largest process took {peak_kb} kB"


def test_the_stanza_of_a_large_binary_file_is_gits_own(tmp_path: Path) -> None:
    """What the patch says of a binary file it does not ask git to diff is what git says."""
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {**BASE, "gone.bin": b"\0" * (PATCH_BLOB_LIMIT + 1)})
    repo.branch("pr")
    repo.delete("gone.bin")
    repo.write({"new.bin": b"\0" * (PATCH_BLOB_LIMIT + 1), "small.bin": b"\0\1"})
    workspace = Workspace.open(repo.root, base="main")
    store = workspace.snapshot().store
    args = [
        "diff",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        workspace.base,
        workspace.snapshot().tree,
    ]
    theirs = git(args, store.holder, env=store.env()).decode()
    stanzas = sorted(theirs.split("diff --git ")[1:])
    assert sorted(workspace.patch().split("diff --git ")[1:]) == stanzas
    assert any("Binary files /dev/null and b/new.bin differ" in s for s in stanzas)
