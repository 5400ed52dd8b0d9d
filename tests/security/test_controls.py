"""The bases the attacks are built on, graded honestly: the reference fix passes and the
empty submission fails, with no finding of the harness. So an attack test that fails
fails because of its attack, and one that passes does not pass because its task ids are
wrong or its harness is blind."""

from __future__ import annotations

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case
from tests.security._node import needs_node, node_base
from tests.security._perf import SMALL_PERF


@pytest.mark.parametrize("task", [None, LOOSE_TASK], ids=["bugfix", "loose"])
def test_the_reference_fix_passes_and_leaves_nothing(case: Case, task: str | None) -> None:
    case.base(task=task)
    case.submit({"src/slugify/core.py": p.FIXED_CORE})
    graded = case.grade()
    assert graded.returncode == 0, graded.output
    assert "PASS 1.000" in graded.stdout
    # What the attack check finds in an honest PASS is the PASS itself, nothing else.
    problems = graded.problems(expect="PASS")
    said = ("repogym exited 0", "the summary line says PASS", "the JSON report says passed=True")
    assert len(problems) == 3 and all(x.startswith(said) for x in problems), problems


def test_the_empty_submission_fails_cleanly(case: Case) -> None:
    case.base()
    case.grade().check("fail_to_pass: 0 of 2 passed")


@needs_node
@pytest.mark.parametrize("runner", ["mocha", "jest"])
def test_the_node_bases_grade_their_fix(case: Case, runner: str) -> None:
    node_base(case, runner)
    empty = case.grade()
    empty.check("fail_to_pass: 0 of 1 passed")
    assert "pass_to_pass: 0 of 1 broken" in empty.stdout
    case.submit({"src/double.js": "exports.double = (x) => 2 * x;\n"})
    fixed = case.grade()
    assert fixed.returncode == 0, fixed.output
    assert "fail_to_pass: 1 of 1 passed" in fixed.stdout


def test_the_small_perf_task_fails_without_a_speedup(case: Case) -> None:
    case.base(task=SMALL_PERF["task"], files=SMALL_PERF["files"])
    case.submit({"src/work.py": SMALL_PERF["files"]["src/work.py"] + "\n# same\n"})
    case.grade().check("perf")
