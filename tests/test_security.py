"""The submission's code runs during grading; it must not reach the grader through git."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.graders import CompositeGrader
from repogym.workspace import Workspace
from tests.support.repo import Repo

PYTEST = "python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}"


@pytest.mark.parametrize(
    "attack",
    [
        # git runs core.fsmonitor whenever it refreshes the index (diff, add, status).
        "git -C {repo} config core.fsmonitor '{trap}; false'",
        # A clean filter runs on work tree files that git diff reads.
        "printf '* filter=evil\\n' > {repo}/.gitattributes; "
        "git -C {repo} config filter.evil.clean '{trap}; cat'",
    ],
)
def test_config_written_by_the_tests_runs_nothing_in_the_grader(
    repo: Repo, tmp_path: Path, attack: str
) -> None:
    marker = tmp_path / "pwned"
    # Every command the runner starts carries REPOGYM_RUN, so git calls made by the
    # submission's own processes (pytest plugins call git) do not leave the marker.
    trap = f'test -n "$REPOGYM_RUN" || touch {marker}'
    # The tests run in a copy of the submission: the attack writes to the repository by
    # its path (it fails where the sandbox user may not write there: the tests still run).
    command = attack.format(trap=trap, repo=repo.root) + "; " + PYTEST
    task = (
        f"version: 1\ntype: refactor\ntests:\n  command: {command}\n"
        "  pass_to_pass: [tests/test_a.py::test_a]\n"
        "constraints:\n  max_function_length: 10\n"
    )
    repo.commit(
        "base",
        {".repogym.yml": task, "tests/test_a.py": "def test_a():\n    pass\n", "a.py": "x = 1\n"},
    )
    repo.branch("pr")
    repo.write({"a.py": "x = 2\n"})
    workspace = Workspace.open(repo.root, base="main")
    result = CompositeGrader.for_workspace(workspace).grade_result(workspace)
    assert result.component("tests").details["pass_to_pass"] == {
        "tests/test_a.py::test_a": "passed"
    }
    assert result.files_changed == ("a.py",)
    assert not marker.exists(), "a command from the submission ran inside the grader's git"
