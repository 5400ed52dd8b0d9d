"""`pass_to_pass: baseline` and `fail_to_pass: added` (issue 22), end to end on real
repositories with real pytest, unittest and `node --test` runs writing real JUnit: the
base's own runs, the regressions by kind, the tests a pull request adds, flaky tests at
the base, and the base's runs made once per process."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import repogym
from repogym.graders import TestGrader
from repogym.graders.tests import base_runs as _base_tests
from repogym.models import Role
from repogym.report.build import report_dict
from repogym.report.render import render
from repogym.task import parse_task
from repogym.workspace import Workspace
from tests.graders.projects import PYTEST, grade
from tests.support.repo import Repo

CALC = (
    "CASES = [1, 2, 3]\n\n\n"
    "def add(a, b):\n    return a - b\n\n\n"
    "def sub(a, b):\n    return a - b\n\n\n"
    "def mul(a, b):\n    return a * b\n"
)
FIXED = CALC.replace("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
TESTS = """\
import pytest

import calc


def test_sub():
    assert calc.sub(5, 3) == 2


def test_mul():
    assert calc.mul(2, 3) == 6


@pytest.mark.parametrize("n", calc.CASES)
def test_case(n):
    assert calc.mul(n, 1) == n


def test_add_zero():
    assert calc.add(0, 0) == 0
"""
NEW_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PASSES_ANYWAY = "from calc import add\n\n\ndef test_add_zeros():\n    assert add(0, 0) == 0\n"
REGRESSION_TESTS = [
    "tests/test_calc.py::test_add_zero",
    "tests/test_calc.py::test_case[1]",
    "tests/test_calc.py::test_case[2]",
    "tests/test_calc.py::test_case[3]",
    "tests/test_calc.py::test_mul",
    "tests/test_calc.py::test_sub",
]


def task(f2p: str = "added", p2p: str = "baseline", extra: str = "", command: str = PYTEST) -> str:
    """A task; without targets, a refactor (the quality limits its objective)."""
    kind, limits = (
        ("refactor", "constraints:\n  max_function_length: 100\n")
        if f2p == "[]"
        else (
            "bugfix",
            "",
        )
    )
    return (
        f"version: 1\ntype: {kind}\ntests:\n  command: {command}\n"
        f"  fail_to_pass: {f2p}\n  pass_to_pass: {p2p}\n{extra}{limits}"
    )


def project(repo: Repo, text: str, files: dict[str, str | bytes] | None = None) -> Repo:
    repo.commit(
        "base",
        {
            ".repogym.yml": text,
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
            ".gitignore": "__pycache__/\n",
            **(files or {}),
        },
    )
    repo.branch("pr")
    return repo


def test_a_fix_with_a_test_that_fails_without_it_passes(repo: Repo) -> None:
    project(repo, task())
    repo.write({"src/calc.py": FIXED, "tests/test_add.py": NEW_TEST})
    component = grade(repo)
    assert (component.score, component.passed, component.role) == (1.0, True, Role.OBJECTIVE)
    assert component.details["fail_to_pass"] == {"tests/test_add.py::test_add": "passed"}
    assert list(component.details["pass_to_pass"]) == REGRESSION_TESTS
    baseline = component.details["baseline"]
    assert baseline["runs"] == 2 and baseline["named"] is True
    assert baseline["counts"]["regression_tests"] == 6 and baseline["counts"]["targets"] == 1
    assert baseline["new"] == ["tests/test_add.py::test_add"]
    assert baseline["test_files_changed"] == ["tests/test_add.py"]
    assert "fail_to_pass (the added tests that fail without the change): 1 of 1 passed" in (
        component.messages
    )
    assert "regressions: 0 broken, 0 removed, 0 newly skipped of 6 tests that pass at the base" in (
        " ".join(component.messages)
    )


def test_a_fix_without_a_test_scores_0_and_says_what_was_expected(repo: Repo) -> None:
    project(repo, task())
    repo.write({"src/calc.py": FIXED})
    component = grade(repo)
    assert (component.score, component.passed) == (0.0, False)
    assert component.details["fail_to_pass"] == {}
    assert (
        "the change adds no test (no test file under tests.paths changed): a bugfix comes "
        "with a test that fails without it"
    ) in component.messages


def test_an_added_test_that_passes_on_the_base_proves_nothing(repo: Repo) -> None:
    project(repo, task())
    repo.write({"src/calc.py": FIXED, "tests/test_add.py": NEW_TEST + "\n\n" + PASSES_ANYWAY})
    component = grade(repo)
    assert component.score == 1.0
    assert component.details["fail_to_pass"] == {"tests/test_add.py::test_add": "passed"}
    assert component.details["baseline"]["passes_at_base"] == ["tests/test_add.py::test_add_zeros"]
    assert (
        "added tests that pass without the change, so prove nothing (not counted): "
        "tests/test_add.py::test_add_zeros"
    ) in component.messages
    # Only tests that pass anyway: nothing shows what the change fixes.
    repo.write({"tests/test_add.py": PASSES_ANYWAY})
    alone = grade(repo)
    assert (alone.score, alone.passed) == (0.0, False)
    assert "none of the added tests fails without the change: none shows what it fixes" in (
        alone.messages
    )


def test_an_added_test_in_an_existing_file_counts_and_the_old_ones_run_as_at_the_base(
    repo: Repo,
) -> None:
    project(repo, task())
    # The pull request adds a test beside the old ones and weakens an old one: the old
    # one still runs as the base has it, and the added one is a target.
    weakened = TESTS.replace("assert calc.mul(2, 3) == 6", "assert True")
    repo.write(
        {
            "src/calc.py": FIXED.replace("a * b", "a ** b"),
            "tests/test_calc.py": weakened
            + "\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
        }
    )
    component = grade(repo)
    assert component.details["fail_to_pass"] == {"tests/test_calc.py::test_add": "passed"}
    assert component.details["baseline"]["broken"] == ["tests/test_calc.py::test_mul"]
    assert not component.passed
    assert "pass_to_pass failed: tests/test_calc.py::test_mul: assert 8 == 6" in (
        component.messages
    )


def test_an_unlisted_test_broken_fails_the_gate_and_is_named(repo: Repo) -> None:
    project(repo, task(f2p="[]"))  # regressions only: a gate
    repo.write({"src/calc.py": CALC.replace("a * b", "a ** b")})
    component = grade(repo)
    assert (component.role, component.passed) == (Role.GATE, False)
    assert component.score == pytest.approx(1 - 1 / 6)  # the spec's 1 - broken / total
    assert component.details["baseline"]["broken"] == ["tests/test_calc.py::test_mul"]
    # One line counts them (issue 45: `pass_to_pass: 1 of 6 broken` said it again).
    counted = [m for m in component.messages if " of 6 " in m]
    assert counted == [
        "regressions: 1 broken, 0 removed, 0 newly skipped of 6 tests that pass at the base "
        "(2 runs)"
    ], component.messages
    assert "pass_to_pass failed: tests/test_calc.py::test_mul: assert 8 == 6" in (
        component.messages
    )


def test_a_removed_test_is_a_regression(repo: Repo) -> None:
    project(repo, task(f2p="[]"))
    # The test's cases come from the code: dropping one drops the test.
    repo.write({"src/calc.py": CALC.replace("CASES = [1, 2, 3]", "CASES = [1, 2]")})
    component = grade(repo)
    assert not component.passed
    assert component.details["baseline"]["removed"] == ["tests/test_calc.py::test_case[3]"]
    assert "pass_to_pass missing: tests/test_calc.py::test_case[3]" in component.messages


def test_a_newly_skipped_test_is_a_regression(repo: Repo) -> None:
    # Test files outside tests.paths are the pull request's to change, and run as it has
    # them: a skip there is caught.
    other = "def test_other():\n    assert True\n"
    project(
        repo, task(f2p="[]", extra="  paths: [tests/test_calc.py]\n"), {"more/test_o.py": other}
    )
    repo.write({"more/test_o.py": "import pytest\n\n\n@pytest.mark.skip\n" + other})
    component = grade(repo)
    assert not component.passed
    assert component.details["baseline"]["newly_skipped"] == ["more/test_o.py::test_other"]


def test_a_new_passing_test_is_counted_and_is_no_target_of_a_regression_task(repo: Repo) -> None:
    project(repo, task(f2p="[]"))
    repo.write({"src/calc.py": FIXED, "tests/test_add.py": NEW_TEST})
    component = grade(repo)
    assert (component.score, component.passed) == (1.0, True)
    assert component.details["fail_to_pass"] == {}
    assert component.details["baseline"]["new"] == ["tests/test_add.py::test_add"]
    assert "new tests at the head: 1 (1 passing): tests/test_add.py::test_add" in (
        component.messages
    )


def test_a_new_test_module_cannot_patch_the_code_for_the_regression_tests(repo: Repo) -> None:
    project(repo, task(f2p="[]"))
    # Imported by pytest before the old tests run, it would make a broken mul look right.
    patch = "import calc\n\ncalc.mul = lambda a, b: a * b\n\n\ndef test_nothing():\n    pass\n"
    repo.write({"src/calc.py": CALC.replace("a * b", "a ** b"), "tests/test_aaa.py": patch})
    component = grade(repo)
    assert not component.passed
    assert "tests/test_calc.py::test_mul" in component.details["baseline"]["broken"]


def test_a_test_flaky_at_the_base_is_no_regression_test(repo: Repo) -> None:
    # Fails on the first run in a copy, passes on the second: its outcome differs.
    flaky = (
        "from pathlib import Path\n\n\ndef test_flaky():\n"
        "    mark = Path('.ran')\n    first = not mark.exists()\n    mark.touch()\n"
        "    assert not first\n"
    )
    project(repo, task(f2p="[]"), {"tests/test_flaky.py": flaky})
    component = grade(repo)
    assert component.passed
    assert component.details["baseline"]["flaky"] == ["tests/test_flaky.py::test_flaky"]
    assert "tests/test_flaky.py::test_flaky" not in component.details["pass_to_pass"]
    assert any(m.startswith("flaky at the base") for m in component.messages)


def test_the_base_runs_once_per_process(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    project(repo, task(f2p="[]", extra="  timeout: 123\n"))
    calls = []
    real = _base_tests.run_tests

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_base_tests, "run_tests", counting)
    repo.write({"src/calc.py": FIXED})
    first = grade(repo)
    repo.write({"src/calc.py": CALC.replace("a * b", "a ** b")})
    second = grade(repo)
    assert len(calls) == 1 and calls[0]["times"] == 2
    assert first.passed and not second.passed


def test_a_base_whose_tests_cannot_run_is_the_tasks_problem(repo: Repo) -> None:
    # The script the command runs is code: at the base it writes no report.
    text = task(f2p="[]", command="sh run.sh {junit}")
    project(repo, text, {"run.sh": "exit 3\n"})
    repo.write({"run.sh": PYTEST.replace("{junit}", '"$1"') + "\n"})
    component = grade(repo)
    assert (component.score, component.passed) == (0.0, False)
    assert component.messages[0].startswith("score 0: the base's own run of the tests has no ")
    assert "fix the task at the base (`repogym validate` runs it)" in component.messages[0]


def test_unittest_regressions_and_added_tests(repo: Repo) -> None:
    tests = (
        "import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n"
        "    def test_mul(self):\n        self.assertEqual(calc.mul(2, 3), 6)\n"
    )
    command = "python -m xmlrunner discover -s tests -t . --output-file {junit}"
    files = {"calc.py": CALC, "tests/__init__.py": "", "tests/test_calc.py": tests}
    repo.commit("base", {".repogym.yml": task(command=command), **files})
    repo.branch("pr")
    added = (
        "import unittest\n\nimport calc\n\n\nclass TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
    )
    repo.write({"calc.py": FIXED.replace("a * b", "a ** b"), "tests/test_add.py": added})
    component = grade(repo)
    assert component.details["fail_to_pass"] == {"tests/test_add.py::TestAdd::test_add": "passed"}
    assert component.details["baseline"]["broken"] == ["tests/test_calc.py::TestCalc::test_mul"]


NODE = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={junit}"
)


def test_node_regressions_and_added_tests(repo: Repo) -> None:
    if shutil.which("node") is None:
        pytest.fail("node is not installed: this test needs Node.js 20")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    calc = "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n"
    old = (
        "const { test } = require('node:test');\nconst assert = require('node:assert');\n"
        "const calc = require('../calc');\n"
        "test('multiplies', () => { assert.strictEqual(calc.mul(2, 3), 6); });\n"
    )
    new = old.replace("multiplies", "adds").replace("mul(2, 3), 6", "add(2, 3), 5")
    repo.commit("base", {".repogym.yml": "", "calc.js": calc, "test/calc.test.js": old})
    repo.branch("pr")
    repo.write(
        {
            "calc.js": calc.replace("a - b", "a + b").replace("a * b", "a ** b"),
            "test/add.test.js": new,
        }
    )
    text = task(command=NODE)
    component = TestGrader().grade(Workspace.open(repo.root, base="main", task=parse_task(text)))
    prefix = "" if version.stdout.startswith("v20.") else "test/add.test.js::"
    old_prefix = "" if version.stdout.startswith("v20.") else "test/calc.test.js::"
    assert component.details["fail_to_pass"] == {f"{prefix}adds": "passed"}
    assert component.details["baseline"]["broken"] == [f"{old_prefix}multiplies"]


def test_hidden_tests_found_by_the_base_are_never_named(repo: Repo) -> None:
    secret = (
        "import calc\n\n\ndef test_secret_sub_name():\n    assert calc.sub(9, 4) == 5\n\n\n"
        "def test_secret_mul_name():\n    assert calc.mul(3, 3) == 9\n"
    )
    text = task(extra="  hidden: .repogym/hidden\n")
    project(repo, text, {".repogym/hidden/tests/test_secret.py": secret})
    repo.write({"src/calc.py": FIXED.replace("a * b", "a ** b"), "tests/test_add.py": NEW_TEST})
    report = report_dict(repogym.grade(repo.root, base="main"))
    assert "secret" not in json.dumps(report)
    [tests] = [c for c in report["components"] if c["name"] == "tests"]
    counts = tests["details"]["baseline"]["counts"]
    assert counts["hidden"] == 2 and counts["broken"] == 2  # test_mul and a hidden one
    assert tests["details"]["baseline"]["named"] is False
    assert "pass_to_pass: 1 hidden test not passing" in tests["messages"]
    rendered = render(report, "comment.md.j2")
    assert "secret" not in rendered and "| ❌ broken: fail or error at the head | 2 |" in rendered
    assert "2 hidden tests ran with the others; their names are not shown." in rendered


def test_a_new_case_of_an_old_test_from_the_code_is_no_added_test(repo: Repo) -> None:
    """An old test's cases come from the code: a case the change adds is not collected on
    the base's code, which proves nothing of a fix (found in review)."""
    project(repo, task())
    repo.write(
        {
            "src/calc.py": CALC.replace("CASES = [1, 2, 3]", "CASES = [1, 2, 3, 4]"),
            "tests/notes.txt": "a test file changed, so that the change's own tests run\n",
        }
    )
    component = grade(repo)
    assert (component.score, component.passed) == (0.0, False)
    assert component.details["fail_to_pass"] == {}


def test_a_target_whose_file_cannot_load_without_the_change_counts(repo: Repo) -> None:
    project(repo, task())
    feature = "from calc import add, twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n"
    repo.write({"src/calc.py": FIXED + "\n\ndef twice(a):\n    return 2 * a\n"})
    repo.write({"tests/test_twice.py": feature})
    component = grade(repo)
    assert component.details["fail_to_pass"] == {"tests/test_twice.py::test_twice": "passed"}
    assert component.passed


def _old_fork(repo: Repo) -> None:
    """``main`` fixes ``mul`` after the pull request branched: the base tip's code is the
    one its regressions and added tests are told against, not the fork point's."""
    project(repo, task(), {})
    repo.git("checkout", "--quiet", "main")
    repo.commit("mul broken", {"src/calc.py": CALC.replace("a * b", "a * b + 1")})
    repo.git("branch", "-f", "pr")
    repo.commit("mul fixed", {"src/calc.py": CALC})
    repo.git("checkout", "--quiet", "pr")


def test_an_old_fork_cannot_hide_a_regression_the_tip_would_catch(repo: Repo) -> None:
    _old_fork(repo)
    # At the fork point test_mul fails; at the tip it passes, and the change keeps the
    # fork point's broken mul.
    repo.write({"src/calc.py": FIXED.replace("a * b", "a * b + 1"), "tests/test_add.py": NEW_TEST})
    component = grade(repo)
    assert not component.passed
    assert "tests/test_calc.py::test_mul" in component.details["baseline"]["broken"]


def test_an_old_fork_cannot_claim_a_fix_the_tip_has(repo: Repo) -> None:
    _old_fork(repo)
    # The tip fixed mul: a test of mul passes without the change, and proves nothing.
    mul = "from calc import mul\n\n\ndef test_mul_again():\n    assert mul(2, 3) == 6\n"
    repo.write({"src/calc.py": CALC, "tests/test_mul.py": mul})
    component = grade(repo)
    assert (component.score, component.passed) == (0.0, False)
    assert component.details["baseline"]["passes_at_base"] == ["tests/test_mul.py::test_mul_again"]


def test_the_changes_code_never_runs_beside_the_base_s_tests(repo: Repo) -> None:
    """The base's runs come first: the change's code cannot hold the port an old test
    binds while the base runs, and so cannot make the test drop out of the regression
    tests (found in review)."""
    server = (
        "import socket\n\n\ndef test_server():\n    s = socket.socket()\n"
        "    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "    s.bind(('127.0.0.1', 47123))\n    s.close()\n"
    )
    project(repo, task(f2p="[]"), {"tests/test_server.py": server})
    holder = (
        "import socket, subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import signal, socket; s = socket.socket(); "
        's.bind(("127.0.0.1", 47123)); s.listen(); signal.pause()\'], start_new_session=True)\n'
    )
    repo.write({"src/calc.py": holder + CALC.replace("a * b", "a ** b")})
    component = grade(repo)
    assert not component.passed
    assert component.details["baseline"]["counts"]["regression_tests"] == 7
    assert "tests/test_calc.py::test_mul" in component.details["baseline"]["broken"]


def test_a_hidden_test_made_to_look_rerun_is_not_named(repo: Repo) -> None:
    """The change's code rewrites the report at exit so that every test looks rerun (a
    failed attempt, then the pass, as pytest-rerunfailures writes it): the hidden test's
    id must not reach the report's list of flaky tests (found in review)."""
    secret = "import calc\n\n\ndef test_secret_sub_name():\n    assert calc.sub(9, 4) == 5\n"
    project(
        repo, task(extra="  hidden: .repogym/hidden\n"), {".repogym/hidden/tests/test_s.py": secret}
    )
    rewrite = (
        "import atexit, re, sys\n\n\ndef _rerun():\n"
        "    paths = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--junitxml=')]\n"
        "    for path in paths:\n"
        "        text = open(path).read()\n"
        "        fail = (r'<testcase \\1><failure message=\"x\">x</failure></testcase>'\n"
        "                r'<testcase \\1/>')\n"
        "        open(path, 'w').write(re.sub(r'<testcase ([^>]*?)\\s*/>', fail, text))\n\n\n"
        "atexit.register(_rerun)\n"
    )
    repo.write({"src/calc.py": rewrite + FIXED, "tests/test_add.py": NEW_TEST})
    report = report_dict(repogym.grade(repo.root, base="main"))
    [tests] = [c for c in report["components"] if c["name"] == "tests"]
    assert tests["details"]["flaky"], "the rewrite made no test look rerun"
    assert "secret" not in json.dumps(report)


def test_the_bases_runs_are_made_again_when_the_linked_dependencies_change(repo: Repo) -> None:
    # Issue 44: a first grade whose ignored node_modules/dep throws finds no test passing
    # at the base; a second grade, the dependency fixed, must not take that over, or a
    # change that breaks `multiplies` would break no regression test.
    if shutil.which("node") is None:
        pytest.fail("node is not installed: this test needs Node.js 20")
    calc = "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n"
    old = (
        "const { test } = require('node:test');\nconst assert = require('node:assert');\n"
        "require('dep');\nconst calc = require('../calc');\n"
        "test('multiplies', () => { assert.strictEqual(calc.mul(2, 3), 6); });\n"
    )
    files = {".repogym.yml": "", ".gitignore": "node_modules/\n", "calc.js": calc}
    repo.commit("base", {**files, "test/calc.test.js": old})
    repo.branch("pr")
    text = task(command=NODE)
    added = old.replace("multiplies", "adds").replace("mul(2, 3), 6", "add(2, 3), 5")
    dep = repo.root / "node_modules" / "dep" / "index.js"
    dep.parent.mkdir(parents=True)
    dep.write_text("throw new Error('not installed yet');\n")
    first = TestGrader().grade(Workspace.open(repo.root, base="main", task=parse_task(text)))
    assert first.details["baseline"]["counts"]["regression_tests"] == 0
    dep.write_text("module.exports = {};\n")
    fixed = calc.replace("a - b", "a + b").replace("a * b", "a ** b")
    repo.write({"calc.js": fixed, "test/add.test.js": added})
    second = TestGrader().grade(Workspace.open(repo.root, base="main", task=parse_task(text)))
    broken = second.details["baseline"]["broken"]
    assert [b.rsplit("::", 1)[-1] for b in broken] == ["multiplies"], second.messages
