"""A flaky test is not a regression (issue 47), end to end on real repositories with real
pytest runs: the failing tests run again at the head and at the base, and each is broken,
made flaky, flaky before the change or already broken. A test here fails by a counter, not
by chance: code that fails the first time it runs in a copy of the tree and passes after
(a file it leaves in the copy), so the graded run fails and the second rerun passes."""

from __future__ import annotations

import subprocess
import sys

from repogym.graders.tests import reruns as _reruns
from repogym.graders.tests.run import run_tests
from repogym.junit import Outcome
from repogym.workspace import Workspace
from tests.graders.projects import PYTEST, grade
from tests.support.repo import Repo

# Passes from the second call on in one copy of the tree: the first leaves a mark.
WOBBLY = """\
import os


def wobbly():
    if os.path.exists(".ran"):
        return 1
    open(".ran", "w").close()
    return 0
"""
STEADY = "def steady():\n    return 1\n"
TESTS = """\
import calc


def test_steady():
    assert calc.steady() == 1


def test_other():
    assert 1 + 1 == 2
"""
STEADY_ID = "tests/test_calc.py::test_steady"
OTHER_ID = "tests/test_calc.py::test_other"


def _project(
    repo: Repo,
    extra: str = "",
    code: str = STEADY,
    tests: str = TESTS,
    reruns: int | None = None,
    regressions: str = f"[{STEADY_ID}]",
) -> Repo:
    """The task says nothing of reruns (the default, 2) unless ``reruns`` is given."""
    said = "" if reruns is None else f"  reruns: {reruns}\n"
    task = (
        f"version: 1\ntype: bugfix\ntests:\n  command: {PYTEST}\n"
        f"  fail_to_pass: [tests/test_calc.py::test_other]\n"
        f"  pass_to_pass: {regressions}\n{said}{extra}"
    )
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": code,
            "tests/test_calc.py": tests,
            ".gitignore": "__pycache__/\n.ran\n",
        },
    )
    repo.branch("pr")
    return repo


def _made_flaky(repo: Repo) -> None:
    """The change makes `steady` pass only from its second run in a copy."""
    repo.write({"src/calc.py": WOBBLY + "\n\ndef steady():\n    return wobbly()\n"})


def test_a_test_the_change_breaks_fails_every_run_and_is_broken(repo: Repo) -> None:
    _project(repo)
    repo.write({"src/calc.py": "def steady():\n    return 0\n"})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.BROKEN, "runs": "head 0/3 passed, base 2/2"}
    assert "run again: 1 failing test: 1 broken by the change" in component.messages


def test_a_test_the_change_makes_flaky_fails_the_grade(repo: Repo) -> None:
    _project(repo)
    _made_flaky(repo)
    component = grade(repo)
    assert not component.passed
    assert component.details["pass_to_pass"] == {STEADY_ID: "failed"}  # its first run
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.MADE_FLAKY, "runs": "head 1/3 passed, base 2/2"}


# Code that knows when it is run again: the grader's manifest names the ids a rerun keeps
# (its path is in the environment the process started with, which /proc still shows).
KNOWS_A_RERUN = """\
import json


def steady():
    with open("/proc/self/environ", "rb") as started:
        names = dict(v.split(b"=", 1) for v in started.read().split(b"\\0") if b"=" in v)
    manifest = names.get(b"REPOGYM_PYTEST_MANIFEST", b"").decode()
    if manifest and json.load(open(manifest)).get("select"):
        return 1
    return 0
"""


def test_a_change_that_passes_a_test_it_broke_when_run_again_fails(repo: Repo) -> None:
    """A pull request's code can tell a rerun from the first run (the grader's manifest,
    the number of tests collected); passing the test it broke only then makes the test
    flaky by the change, which fails the grade (docs/security.md)."""
    _project(repo)
    repo.write({"src/calc.py": KNOWS_A_RERUN})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.MADE_FLAKY, "runs": "head 1/2 passed, base 2/2"}


def test_made_flaky_may_be_forgiven_by_the_task(repo: Repo) -> None:
    _project(repo, extra="  flaky: {made: ignore}\n")
    _made_flaky(repo)
    component = grade(repo)
    assert component.passed and component.score == 1.0
    assert component.details["reruns"]["tests"][STEADY_ID]["class"] == _reruns.MADE_FLAKY


def test_with_baseline_a_forgiven_test_is_no_regression_in_the_comparison(repo: Repo) -> None:
    """`pass_to_pass: baseline`: the comparison with the base counts no regression for a
    test the reruns forgave; the reruns' table says what it was."""
    _project(repo, extra="  flaky: {made: ignore}\n", regressions="baseline")
    _made_flaky(repo)
    component = grade(repo)
    assert component.passed and component.score == 1.0, component.messages
    assert component.details["reruns"]["tests"][STEADY_ID]["class"] == _reruns.MADE_FLAKY
    assert component.details["baseline"]["counts"]["broken"] == 0
    said = " ".join(component.messages)
    assert "0 of 1 broken" in said and "1 made flaky by the change" in said


def test_a_test_flaky_before_the_change_is_no_regression(repo: Repo) -> None:
    flaky = WOBBLY + "\n\ndef steady():\n    return wobbly()\n"
    _project(repo, code=flaky)
    repo.write({"README": "a change that touches no code\n"})
    component = grade(repo)
    assert component.passed and component.score == 1.0
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.FLAKY, "runs": "head 1/3 passed, base 1/2"}
    assert "flaky before the change" in " ".join(component.messages)


def test_flaky_before_counts_when_the_task_says_so(repo: Repo) -> None:
    flaky = WOBBLY + "\n\ndef steady():\n    return wobbly()\n"
    _project(repo, extra="  flaky: {before: fail}\n", code=flaky)
    repo.write({"README": "a change that touches no code\n"})
    assert not grade(repo).passed


def test_breaking_a_test_flaky_at_the_base_is_forgiven_unless_the_task_says_fail(
    repo: Repo,
) -> None:
    """What a pull request gains by breaking a test that is a coin toss at the base already
    (docs/security.md): it fails every run at the head and is flaky before the change,
    which `flaky.before: ignore` forgives; the report shows it never passed at the head."""
    flaky = WOBBLY + "\n\ndef steady():\n    return wobbly()\n"
    _project(repo, code=flaky)
    repo.write({"src/calc.py": "def steady():\n    return 0\n"})
    component = grade(repo)
    assert component.passed
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.FLAKY, "runs": "head 0/3 passed, base 1/2"}
    # With `flaky.before: fail` it counts: test_flaky_before_counts_when_the_task_says_so.


def test_a_listed_test_already_broken_at_the_base_still_counts(repo: Repo) -> None:
    """The task lists it as one that must pass: the task is wrong (`repogym validate` says
    so), and the grade keeps to it; the class says why it fails."""
    _project(repo, code="def steady():\n    return 0\n")
    repo.write({"README": "a change that touches no code\n"})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.ALREADY_BROKEN, "runs": "head 0/3 passed, base 0/2"}


def test_a_target_that_passes_only_when_run_again_passes_and_is_shown(repo: Repo) -> None:
    tests = TESTS.replace("assert 1 + 1 == 2", "assert calc.target() == 1")
    _project(repo, tests=tests, code=STEADY + "\n\ndef target():\n    return 0\n")
    repo.write(
        {"src/calc.py": WOBBLY + "\n\n" + STEADY + "\n\ndef target():\n    return wobbly()\n"}
    )
    component = grade(repo)
    assert component.passed and component.score == 1.0
    assert component.details["fail_to_pass"] == {OTHER_ID: "failed"}  # its first run
    rerun = component.details["reruns"]["tests"][OTHER_ID]
    assert rerun == {"class": _reruns.PASSED_ON_RERUN, "runs": "head 1/3 passed"}


def test_reruns_zero_runs_nothing_again(repo: Repo) -> None:
    """0 turns them off (the default is 2: tests.reruns, docs/task.md)."""
    _project(repo, reruns=0)
    _made_flaky(repo)
    component = grade(repo)
    assert not component.passed
    assert "reruns" not in component.details


def test_a_grade_where_everything_passes_runs_nothing_again(repo: Repo) -> None:
    _project(repo)
    repo.write({"README": "a change that touches no code\n"})
    component = grade(repo)
    assert component.passed and "reruns" not in component.details


def test_a_quarantined_test_runs_is_reported_and_does_not_count(repo: Repo) -> None:
    entry = (
        "  quarantine: [{id: 'tests/test_calc.py::test_st*', reason: 'issue 12', "
        "until: 2999-01-01}]\n"
    )
    _project(repo, extra=entry)
    repo.write({"src/calc.py": "def steady():\n    return 0\n"})
    component = grade(repo)
    assert component.passed and component.score == 1.0
    assert component.details["pass_to_pass"] == {STEADY_ID: "failed"}
    assert component.details["quarantined"] == {"tests": {STEADY_ID: "issue 12"}, "hidden": 0}
    assert "quarantined, not counted: 1 test" in component.messages


def test_a_quarantine_past_its_date_counts_warns_and_is_invalid(repo: Repo) -> None:
    entry = f"  quarantine: [{{id: '{STEADY_ID}', reason: 'issue 12', until: 2020-01-01}}]\n"
    _project(repo, extra=entry)
    repo.write({"src/calc.py": "def steady():\n    return 0\n"})
    component = grade(repo)
    assert not component.passed and "quarantined" not in component.details
    said = (
        f"warning: tests.quarantine: '{STEADY_ID}' was quarantined until 2020-01-01 (issue 12), "
        "which is past: its tests count again; fix them and remove the entry, or set a later date"
    )
    assert said in component.messages
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "validate", "-C", str(repo.root), "--base", "main"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PROBLEM  " + said.removeprefix("warning: ") in done.stdout


def test_a_rerun_runs_the_chosen_ids_alone(repo: Repo) -> None:
    """The grader's guard keeps the chosen items, whatever the task's command collects."""
    _project(repo)
    workspace = Workspace.open(repo.root, base="main")
    config = workspace.task.tests
    assert config is not None
    runner = workspace.command_runner()
    (run,) = run_tests(workspace, config, runner, select=(STEADY_ID,))
    assert run.problem is None
    assert {i: r.outcome for i, r in run.results.items()} == {STEADY_ID: Outcome.PASSED}
    (everything,) = run_tests(workspace, config, runner)
    assert set(everything.results) == {STEADY_ID, OTHER_ID}


def test_a_rerun_s_class_is_read_from_its_runs() -> None:
    rerun = _reruns.Rerun(False, (Outcome.FAILED, Outcome.FAILED), (Outcome.PASSED,))
    assert rerun.kind == _reruns.BROKEN and rerun.said() == "head 0/2 passed, base 1/1"
    flaky_target = _reruns.Rerun(True, (Outcome.ERROR, Outcome.PASSED), ())
    assert flaky_target.kind == _reruns.PASSED_ON_RERUN and flaky_target.said() == "head 1/2 passed"


UNITTEST = "python -m xmlrunner discover -s tests -t . --output-file {junit}"
UNITTEST_TESTS = """\
import unittest

import calc


class TestCalc(unittest.TestCase):
    def test_steady(self):
        self.assertEqual(calc.steady(), 1)

    def test_other(self):
        self.assertEqual(1 + 1, 2)
"""


def test_unittest_runs_the_failing_ids_again_and_tells_made_flaky_from_broken(repo: Repo) -> None:
    steady, other = (
        "tests/test_calc.py::TestCalc::test_steady",
        "tests/test_calc.py::TestCalc::test_other",
    )
    task = (
        f"version: 1\ntype: bugfix\ntests:\n  command: {UNITTEST}\n"
        f"  fail_to_pass: ['{other}']\n  pass_to_pass: ['{steady}']\n  reruns: 2\n"
    )
    files = {"calc.py": STEADY, "tests/__init__.py": "", "tests/test_calc.py": UNITTEST_TESTS}
    repo.commit("base", {".repogym.yml": task, ".gitignore": "__pycache__/\n.ran\n", **files})
    repo.branch("pr")
    repo.write({"calc.py": WOBBLY + "\n\ndef steady():\n    return wobbly()\n"})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"][steady]
    assert rerun == {"class": _reruns.MADE_FLAKY, "runs": "head 1/3 passed, base 2/2"}
    repo.write({"calc.py": "def steady():\n    return 0\n"})
    rerun = grade(repo).details["reruns"]["tests"][steady]
    assert rerun == {"class": _reruns.BROKEN, "runs": "head 0/3 passed, base 2/2"}
    workspace = Workspace.open(repo.root, base="main")
    assert workspace.task.tests is not None
    runner = workspace.command_runner()
    (run,) = run_tests(workspace, workspace.task.tests, runner, select=(steady,))
    assert {i: r.outcome for i, r in run.results.items()} == {steady: Outcome.FAILED}


def test_a_rerun_command_gets_the_ids(repo: Repo) -> None:
    """Where the grader cannot tell the runner which tests to run, the task says how:
    `{ids}`, each quoted for the shell. (pytest here, so that the run is real and the ids
    are the report's: the guard keeps them too.)"""
    rerun_command = "python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 " + (
        "--junitxml={junit} {ids}"
    )
    _project(repo, extra=f"  rerun_command: '{rerun_command}'\n")
    _made_flaky(repo)
    component = grade(repo)
    rerun = component.details["reruns"]["tests"][STEADY_ID]
    assert rerun == {"class": _reruns.MADE_FLAKY, "runs": "head 1/3 passed, base 2/2"}
    workspace = Workspace.open(repo.root, base="main")
    assert workspace.task.tests is not None
    runner = workspace.command_runner()
    (run,) = run_tests(workspace, workspace.task.tests, runner, select=(STEADY_ID,))
    # The log and the report show the task's rerun command and how many ids, not which:
    # they may be hidden tests' (issue 47's red team).
    assert run.run is not None and run.run.command.endswith(" {ids}  # run again: 1 chosen test")
    assert {i: r.outcome for i, r in run.results.items()} == {STEADY_ID: Outcome.FAILED}


# Code that, once it knows it is being run again, rewrites the report at exit: every
# failure gone (issue 47's red team; the forgeries of tests/security/test_forging.py).
FORGES_ON_RERUN = (
    KNOWS_A_RERUN
    + """

import atexit, re, sys


def _forge():
    junit = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    with open(junit) as f:
        text = f.read()
    text = re.sub(r"<failure.*?</failure>", "", text, flags=re.S)
    text = re.sub(r'failures="[0-9]+"', 'failures="0"', text)
    with open(junit, "w") as f:
        f.write(text)


if steady():
    atexit.register(_forge)


def other():
    return 0
"""
)


def test_a_report_rewritten_on_a_rerun_is_no_pass(repo: Repo) -> None:
    """Every rerun's report is checked as the first run's is: pytest said a test failed
    and the report has none, so the rerun passed nothing, and the target still fails."""
    tests = "import calc\n\n\ndef test_steady():\n    assert calc.steady() in (0, 1)\n\n\n"
    tests += "def test_other():\n    assert calc.other() == 2\n"
    _project(repo, code=STEADY + "\n\ndef other():\n    return 0\n", tests=tests)
    repo.write({"src/calc.py": FORGES_ON_RERUN})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"][OTHER_ID]
    assert rerun == {"class": _reruns.FAILING, "runs": "head 0/3 passed"}


def test_a_test_the_rerun_cannot_reach_is_never_forgiven() -> None:
    """A run that did not record the test (not selected, skipped, no report) is no
    evidence at the base: the test stays as its first run had it (issue 47's red team:
    a node subtest the filter missed came out flaky before the change, and was forgiven)."""
    missing = (Outcome.MISSING, Outcome.MISSING)
    assert _reruns.Rerun(False, (Outcome.FAILED, *missing), missing).kind == _reruns.BROKEN
    skipped = (Outcome.SKIPPED, Outcome.PASSED)
    assert _reruns.Rerun(False, (Outcome.FAILED,), skipped).kind == _reruns.BROKEN
    both = (Outcome.PASSED, Outcome.FAILED)
    assert _reruns.Rerun(False, (Outcome.FAILED,), both).kind == _reruns.FLAKY


def test_the_quarantine_never_names_a_test_the_pull_request_adds(repo: Repo) -> None:
    """With `fail_to_pass: added`, a failing test the pull request writes under a
    quarantined glob is still a target that must pass (issue 47's red team)."""
    entry = "  quarantine: [{id: 'tests/test_calc.py::*', reason: 'issue 12', until: 2999-01-01}]\n"
    _project(repo, extra=entry, regressions="baseline")
    task = repo.root / ".repogym.yml"
    text = task.read_text().replace("[tests/test_calc.py::test_other]", "added")
    repo.git("checkout", "--quiet", "main")
    repo.commit("added", {".repogym.yml": text})
    repo.git("checkout", "--quiet", "pr")
    repo.git("merge", "--quiet", "main")
    added = TESTS + "\n\ndef test_new():\n    assert False\n"
    repo.write({"tests/test_calc.py": added})
    component = grade(repo)
    assert not component.passed, component.messages
    assert "tests/test_calc.py::test_new" not in component.details.get("quarantined", {}).get(
        "tests", {}
    )
