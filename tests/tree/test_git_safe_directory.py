"""A work tree owned by another uid (an unpacked tarball, a bind mount), graded by the
`repogym` command (issue 19): git refuses it ("dubious ownership") unless the user's
`safe.directory` names it. The grade says what git said and how to fix it, and honours
the user's own `safe.directory`, though it reads no other setting of their global file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import Repo

TASK = """version: 1
type: refactor
constraints:
  paths: [src/**/*.py]
  max_function_length: 4
"""
OTHER_UID = 4242

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving a tree away takes root")


def given_away(repo: Repo) -> Path:
    for directory, dirnames, filenames in os.walk(repo.root):
        os.chown(directory, OTHER_UID, OTHER_UID)
        for name in dirnames + filenames:
            os.chown(Path(directory, name), OTHER_UID, OTHER_UID, follow_symlinks=False)
    return repo.root


def grade(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["HOME"] = str(home)
    env.pop("XDG_CONFIG_HOME", None)
    command = [sys.executable, "-m", "repogym", "grade", "-C", str(repo), "--base", "main"]
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, check=False)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    repo = Repo(tmp_path / "repo")
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": "def f():\n    return 1\n"})
    repo.branch("pr")
    repo.write({"src/m.py": "def f():\n    return 2\n"})
    return given_away(repo)


def test_another_users_tree_says_what_git_said_and_how_to_fix_it(
    tree: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = grade(tree, home)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "detected dubious ownership in repository" in line
    assert f"git config --global --add safe.directory {tree}" in line
    assert "not inside a git work tree" not in line


def test_the_users_safe_directory_is_honoured(tree: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # With one more setting that must not be read: an alias would be harmless, an
    # excludes file would hide the change from the grade.
    (home / "ignored").write_text("src/\n")
    (home / ".gitconfig").write_text(
        f"[safe]\n\tdirectory = {tree}\n[core]\n\texcludesFile = {home / 'ignored'}\n"
    )
    report = tmp_path / "report.json"
    done = grade(tree, home, "--json", str(report))
    assert done.returncode == 0, done.stderr
    assert json.loads(report.read_text())["files_changed"] == ["src/m.py"]
