"""Failing Go tests run again in the task's environment (issue 47), end to end on a real
Docker engine with the go example's image: the grader narrows `go test` to the failing
tests by ``-run`` in ``GOFLAGS`` (repogym/graders/tests/chosen.py), which the ``go`` that
gotestsum starts reads, and each test's class comes out as it does for pytest."""

from __future__ import annotations

from pathlib import Path

from repogym import grade
from repogym._demo import build_example_repo
from repogym.graders.tests.run import run_tests
from repogym.junit import Outcome
from repogym.workspace import Workspace

RANGE = "example.com/roman::TestFormatOutOfRange"


def test_a_go_test_the_change_breaks_is_run_again_alone(
    tmp_path: Path, env_images: tuple[str, ...]
) -> None:
    repo = build_example_repo("go", tmp_path / "repo", solution=True)
    code = repo / "roman.go"
    code.write_text(code.read_text().replace("n > 3999", "n > 4000"))  # 4000 is written
    graded = grade(repo, base="main")
    (tests,) = [c for c in graded.result.components if c.name == "tests"]
    assert not tests.passed
    reruns = tests.details["reruns"]["tests"]
    assert reruns == {RANGE: {"class": "broken", "runs": "head 0/3 passed, base 2/2"}}
    # A run of the one id runs that test alone.
    workspace = Workspace.open(repo, base="main")
    assert workspace.task.tests is not None
    (run,) = run_tests(workspace, workspace.task.tests, workspace.command_runner(), select=(RANGE,))
    assert {i: r.outcome for i, r in run.results.items()} == {RANGE: Outcome.FAILED}, run.run
