"""Evidence that cannot be forged cheaply (issue 9): each attack is a submission built as a
real git repository and graded end to end by ``repogym grade``, with real pytest, unittest
and Node runs writing real JUnit reports.

The attacks: a regression test made to skip; a report rewritten after the runner said that
tests failed; a testcase that takes a target's identity (pytest's
``record_xml_attribute``) while the target's own file or test is skipped; an output tail
or a hint that would show hidden tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from repogym.graders.tests.grader import OUTPUT_NOT_SHOWN
from tests.support.repo import Repo

PYTEST = "python -m pytest -q -p no:cacheprovider -o junit_family={family} --junitxml={{junit}}"
XMLRUNNER = "PYTHONPATH=src python -m xmlrunner discover -s tests -t . --output-file {junit}"
NODE = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={junit}"
)

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = CALC.replace("return a - b\n\n", "return a + b\n\n", 1)
TEST_BUG = "from calc import add\n\n\ndef test_fix():\n    assert add(2, 3) == 5\n"
TEST_KEEP = "from calc import sub\n\n\ndef test_keep():\n    assert sub(5, 3) == 2\n"
TARGET = "tests/test_bug.py::test_fix"
KEPT = "tests/test_keep.py::test_keep"


def task(command: str, f2p: str = TARGET, p2p: str = KEPT) -> str:
    return (
        f"version: 1\ntype: bugfix\ntests:\n  command: {command}\n"
        f"  fail_to_pass: ['{f2p}']\n  pass_to_pass: ['{p2p}']\n"
    )


@dataclass(frozen=True)
class Graded:
    exit_code: int
    stdout: str
    report: dict[str, Any]
    markdown: str

    @property
    def tests(self) -> dict[str, Any]:
        return next(c for c in self.report["components"] if c["name"] == "tests")

    def everything(self) -> str:
        """All that a user of the grade sees: the table, the JSON report, the comment."""
        return "\n".join([self.stdout, json.dumps(self.report), self.markdown])


def grade(repo: Repo, tmp_path: Path, *extra: str) -> Graded:
    out, md = tmp_path / "report.json", tmp_path / "comment.md"
    command = [sys.executable, "-m", "repogym", "grade", "-C", str(repo.root), "--base", "main"]
    done = subprocess.run(
        [*command, "--json", str(out), "--markdown", str(md), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return Graded(done.returncode, done.stdout, json.loads(out.read_text()), md.read_text())


def python_task(repo: Repo, command: str, files: dict[str, str] | None = None) -> None:
    """The base on main: the bug in src/calc.py, its target test and a regression test;
    then the branch the submission is committed on."""
    repo.commit(
        "base",
        {
            ".repogym.yml": task(command),
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            "tests/__init__.py": "",
            "tests/test_bug.py": TEST_BUG,
            "tests/test_keep.py": TEST_KEEP,
            ".gitignore": "__pycache__/\n",
            **(files or {}),
        },
    )
    repo.branch("attack")


UNITTEST_TARGET = "tests/test_bug.py::TestBug::test_fix"
UNITTEST_KEPT = "tests/test_keep.py::TestKeep::test_keep"


def unittest_task(repo: Repo) -> None:
    """The same task, its tests unittest classes run by xmlrunner."""
    python_task(repo, XMLRUNNER)
    repo.git("checkout", "--quiet", "main")
    test_class = "import unittest\n\nfrom calc import {f}\n\n\nclass {c}(unittest.TestCase):\n"
    test_class += "    def {t}(self):\n        self.assertEqual({call})\n"
    repo.commit(
        "unittest",
        {
            ".repogym.yml": task(XMLRUNNER, f2p=UNITTEST_TARGET, p2p=UNITTEST_KEPT),
            "tests/test_bug.py": test_class.format(
                f="add", c="TestBug", t="test_fix", call="add(2, 3), 5"
            ),
            "tests/test_keep.py": test_class.format(
                f="sub", c="TestKeep", t="test_keep", call="sub(5, 3), 2"
            ),
        },
    )
    repo.git("checkout", "--quiet", "attack")
    repo.git("reset", "--quiet", "--hard", "main")


def submit(repo: Repo, files: dict[str, str]) -> None:
    repo.commit("attack", files)


def assert_fails(graded: Graded, score: float = 0.0) -> dict[str, Any]:
    tests = graded.tests
    assert graded.exit_code == 1, graded.stdout
    assert graded.report["passed"] is False
    assert (tests["score"], tests["passed"]) == (pytest.approx(score), False)
    return tests


# -- a skipped pass_to_pass test is broken ------------------------------------------------

SKIPPING_SUB = FIXED.replace(
    "def sub(a, b):\n", "def sub(a, b):\n    import pytest\n\n    pytest.skip('not today')\n"
)


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_a_regression_test_made_to_skip_is_broken(repo: Repo, tmp_path: Path, family: str) -> None:
    python_task(repo, PYTEST.format(family=family))
    submit(repo, {"src/calc.py": SKIPPING_SUB})
    graded = grade(repo, tmp_path)
    tests = assert_fails(graded)  # the target passes; 1 of 1 regression tests broken
    assert tests["details"]["pass_to_pass"] == {KEPT: "skipped"}
    assert "pass_to_pass: 1 of 1 broken" in tests["messages"]
    assert f"pass_to_pass skipped: {KEPT}: not today" in tests["messages"]
    assert [f["message"] for f in tests["findings"]] == [f"{KEPT} was skipped: not today"]


def test_a_regression_test_made_to_skip_under_unittest(repo: Repo, tmp_path: Path) -> None:
    unittest_task(repo)
    skipping = FIXED.replace(
        "def sub(a, b):\n",
        "def sub(a, b):\n    import unittest\n\n    raise unittest.SkipTest('not today')\n",
    )
    submit(repo, {"src/calc.py": skipping})
    tests = assert_fails(grade(repo, tmp_path))
    assert tests["details"]["pass_to_pass"] == {UNITTEST_KEPT: "skipped"}
    assert f"pass_to_pass skipped: {UNITTEST_KEPT}: not today" in tests["messages"]


# -- a report without a failure from a run whose tests failed -----------------------------

# The package under test rewrites the report when the test process exits: after pytest
# wrote it and chose its exit code. Every failure becomes a pass.
REWRITE_AT_EXIT = (
    CALC
    + """
import re as _re
import sys as _sys


def _rewrite():
    args = _sys.argv
    junit = [a.split("=", 1)[1] for a in args if a.startswith("--junitxml=")]
    junit += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--output-file"]
    for path in junit:
        with open(path) as report:
            text = report.read()
        text = _re.sub(r"<failure[^>]*/>|<failure[^>]*>.*?</failure>", "", text, flags=_re.S)
        text = _re.sub(r'(failures|errors)="\\d+"', r'\\1="0"', text)
        with open(path, "w") as report:
            report.write(text)


__import__("at" + "exit").register(_rewrite)
"""
)
TAMPERED = (
    "score 0: the test command exited with code 1 (tests failed) but the report has no "
    "failure: the report was altered, or it is not this run's"
)


@pytest.mark.parametrize("runner", ["pytest", "unittest"])
def test_a_report_rewritten_after_the_run_is_a_tampering_verdict(
    repo: Repo, tmp_path: Path, runner: str
) -> None:
    if runner == "pytest":
        python_task(repo, PYTEST.format(family="xunit1"))
    else:
        unittest_task(repo)
    submit(repo, {"src/calc.py": REWRITE_AT_EXIT})
    graded = grade(repo, tmp_path)
    tests = assert_fails(graded)
    # The report says the target passed; the runner said a test failed.
    assert set(tests["details"]["fail_to_pass"].values()) == {"passed"}
    assert tests["details"]["command"]["exit_code"] == 1
    assert tests["messages"][0] == TAMPERED
    assert [(f["title"], f["level"], f["message"]) for f in tests["findings"]] == [
        ("command", "failure", TAMPERED.removeprefix("score 0: "))
    ]
    assert "FAIL 0.000" in graded.stdout


def test_another_exit_code_with_a_clean_report_stays_a_warning(repo: Repo, tmp_path: Path) -> None:
    # Exit code 3 is no runner's "tests failed": the report is read, with a warning.
    python_task(repo, PYTEST.format(family="xunit1") + "; exit 3")
    submit(repo, {"src/calc.py": FIXED})
    graded = grade(repo, tmp_path)
    tests = graded.tests
    assert (tests["score"], tests["passed"]) == (1.0, True)
    assert (
        "warning: the test command exited with code 3 although every test in the report passed"
        in tests["messages"]
    )


# -- a testcase that takes a target's identity ---------------------------------------------

# A test module of the submission writes a passing testcase under the target's id, with
# every attribute pytest lets a test set.
IMPERSONATOR = """\
def test_fake(record_xml_attribute):
    record_xml_attribute("classname", "tests.test_bug")
    record_xml_attribute("name", "test_fix")
    record_xml_attribute("file", "tests/test_bug.py")
    record_xml_attribute("line", "3")
"""
# The package under test skips, or breaks, the module that imports it from the target file.
WHEN_IMPORTED_BY_THE_TARGET = (
    CALC
    + """
import inspect as _inspect

if any(f.filename.endswith("tests/test_bug.py") for f in _inspect.stack()):
    {action}
"""
)
MODULE_SKIP = "import pytest as _pytest\n\n    _pytest.skip('not here', allow_module_level=True)"
MODULE_ERROR = "raise ImportError('not here')"
# The package under test skips the target test itself, from inside `add`.
TEST_SKIP = FIXED.replace(
    "def add(a, b):\n",
    "def add(a, b):\n    import pytest\n\n    pytest.skip('not here')\n",
)


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_a_forged_target_beside_its_file_skipped_at_module_level(
    repo: Repo, tmp_path: Path, family: str
) -> None:
    python_task(repo, PYTEST.format(family=family))
    submit(
        repo,
        {
            "src/calc.py": WHEN_IMPORTED_BY_THE_TARGET.format(action=MODULE_SKIP),
            "tests/test_zz.py": IMPERSONATOR,
        },
    )
    graded = grade(repo, tmp_path)
    tests = assert_fails(graded)  # 0 of 1 targets; the regression test kept
    assert tests["details"]["fail_to_pass"] == {TARGET: "missing"}
    assert tests["details"]["pass_to_pass"] == {KEPT: "passed"}
    reason = "the report has its file tests/test_bug.py as skipped as a whole"
    assert f"fail_to_pass missing: {TARGET}: not counted: {reason}" in tests["messages"]
    assert [f["message"] for f in tests["findings"]] == [f"{TARGET} is not counted: {reason}"]


def test_a_forged_target_beside_its_file_that_fails_to_import(repo: Repo, tmp_path: Path) -> None:
    # Only with --continue-on-collection-errors does the forgery run at all.
    command = PYTEST.format(family="xunit1") + " --continue-on-collection-errors"
    python_task(repo, command)
    submit(
        repo,
        {
            "src/calc.py": WHEN_IMPORTED_BY_THE_TARGET.format(action=MODULE_ERROR),
            "tests/test_zz.py": IMPERSONATOR,
        },
    )
    tests = assert_fails(grade(repo, tmp_path))
    assert tests["details"]["fail_to_pass"] == {TARGET: "missing"}
    reason = "the report has its file tests/test_bug.py as not collected as a whole"
    assert f"fail_to_pass missing: {TARGET}: not counted: {reason}" in tests["messages"]


@pytest.mark.parametrize("forger", ["tests/test_zz.py", "tests/test_aa.py"])
def test_a_forged_pass_beside_the_target_skipped(repo: Repo, tmp_path: Path, forger: str) -> None:
    # The forged pass comes after the real skip (test_zz) or before it (test_aa): either
    # way the skip counts, as nothing reruns a skipped test.
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"src/calc.py": TEST_SKIP, forger: IMPERSONATOR})
    graded = grade(repo, tmp_path)
    tests = assert_fails(graded)
    assert tests["details"]["fail_to_pass"] == {TARGET: "skipped"}
    assert f"fail_to_pass skipped: {TARGET}: not here" in tests["messages"]


def test_a_forged_pass_after_the_target_failed_is_a_tampering_verdict(
    repo: Repo, tmp_path: Path
) -> None:
    # The target fails for real; a pass under its id afterwards reads as a rerun that
    # passed, but the runner said that a test failed.
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"tests/test_zz.py": IMPERSONATOR})
    graded = grade(repo, tmp_path)
    tests = assert_fails(graded)
    assert tests["details"]["fail_to_pass"] == {TARGET: "passed"}
    assert tests["details"]["flaky"] == [TARGET]
    assert tests["messages"][0] == TAMPERED


def test_the_honest_fix_still_passes(repo: Repo, tmp_path: Path) -> None:
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"src/calc.py": FIXED})
    graded = grade(repo, tmp_path)
    assert graded.exit_code == 0, graded.stdout
    assert (graded.tests["score"], graded.tests["passed"]) == (1.0, True)


# -- hidden tests are never shown -----------------------------------------------------------

SECRET = "s3cr3t_tie_break_for_hidden_grading"
HIDDEN = f"from calc import add\n\n\ndef test_{SECRET}():\n    assert add(10, 5) == 15\n"
# The package under test prints every test file it can find once pytest no longer captures
# its output, and removes the report: the grade has no report, and its message would come
# with the output's tail.
LEAKER = (
    FIXED
    + """
import glob as _glob
import os as _os
import sys as _sys


def _leak():
    for path in sorted(_glob.glob("tests/test_*.py")):
        print(open(path).read())
        print(open(path).read(), file=_sys.stderr)
    for arg in _sys.argv:
        if arg.startswith("--junitxml="):
            _os.remove(arg.split("=", 1)[1])


__import__("at" + "exit").register(_leak)
"""
)
# A test module of the submission that fails to load with a hidden test's source as its
# error: the cause of a file that did not load is read from the output.
LOAD_FAILURE = (
    "import glob\n\n"
    "raise ImportError(' '.join(open(p).read() for p in glob.glob('tests/test_hidden*.py'))"
    ".replace(chr(10), ' '))\n"
)


def hidden_dir(tmp_path: Path) -> Path:
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests/test_hidden.py").write_text(HIDDEN)
    return hidden


def test_the_output_is_not_shown_when_hidden_tests_ran(repo: Repo, tmp_path: Path) -> None:
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"src/calc.py": LEAKER})
    graded = grade(repo, tmp_path, "--hidden", str(hidden_dir(tmp_path)))
    tests = assert_fails(graded)
    assert tests["messages"][0].startswith("score 0: JUnit report ")
    assert tests["messages"][1] == OUTPUT_NOT_SHOWN
    assert tests["details"]["command"]["output_tail"] == OUTPUT_NOT_SHOWN
    assert SECRET not in graded.everything()


def test_the_output_is_shown_without_hidden_tests(repo: Repo, tmp_path: Path) -> None:
    # The same submission, graded without hidden tests: its output is the user's own.
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"src/calc.py": LEAKER})
    tests = assert_fails(grade(repo, tmp_path))
    assert tests["messages"][1].startswith("output tail:\n")
    assert "def test_fix" in tests["details"]["command"]["output_tail"]


def test_a_load_failure_does_not_show_hidden_sources(repo: Repo, tmp_path: Path) -> None:
    python_task(repo, PYTEST.format(family="xunit1"))
    submit(repo, {"src/calc.py": FIXED, "tests/test_leak.py": LOAD_FAILURE})
    graded = grade(repo, tmp_path, "--hidden", str(hidden_dir(tmp_path)))
    tests = assert_fails(graded)
    # pytest stopped at the collection error: the ids are missing, the file is named,
    # but not the cause it printed.
    assert tests["details"]["fail_to_pass"] == {TARGET: "missing"}
    assert "the report also has tests/test_leak.py: error collection failure" in tests["messages"]
    assert SECRET not in graded.everything()


NODE_TESTS = {
    "test/calc.test.js": (
        "const { test } = require('node:test');\n"
        "const assert = require('node:assert');\n"
        "const { add } = require('../src/calc.js');\n"
        "test('adds small numbers', () => { assert.strictEqual(add(2, 3), 5); });\n"
    ),
    "src/calc.js": "exports.add = (a, b) => a - b;\n",
}
NODE_HIDDEN = (
    "const { test } = require('node:test');\n"
    "const assert = require('node:assert');\n"
    "const { add } = require('../src/calc.js');\n"
    f"test('adds large numbers {SECRET}', () => {{ assert.strictEqual(add(2e9, 3), 2e9 + 3); }});\n"
    f"test('never passes {SECRET}', () => {{ assert.fail('no'); }});\n"
)


def test_node_hints_never_name_hidden_tests(repo: Repo, tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.fail("node is not installed: this test needs Node.js")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    prefix = "" if version.stdout.startswith("v20.") else "test/calc.test.js::"
    # A mistyped public id whose closest id in the report is a hidden test's, and a hidden
    # test that fails, which the hints would list among what else failed.
    f2p = f"{prefix}adds large numbers {SECRET[:-3]}"
    base = {**NODE_TESTS, ".repogym.yml": task(NODE, f2p=f2p, p2p=f"{prefix}adds small numbers")}
    repo.commit("base", base)
    repo.branch("attack")
    submit(repo, {"src/calc.js": "exports.add = (a, b) => a + b;\n"})
    hidden = tmp_path / "hidden"
    (hidden / "test").mkdir(parents=True)
    (hidden / "test/hidden.test.js").write_text(NODE_HIDDEN)
    graded = grade(repo, tmp_path, "--hidden", str(hidden))
    tests = assert_fails(graded, score=0.0)
    assert tests["details"]["fail_to_pass"] == {f2p: "missing"}
    hidden_names = [f"adds large numbers {SECRET}", f"never passes {SECRET}"]
    assert not any(name in m for m in tests["messages"] for name in hidden_names)
    assert tests["details"]["command"]["output_tail"] == OUTPUT_NOT_SHOWN
    assert not any(name in graded.everything() for name in hidden_names)
