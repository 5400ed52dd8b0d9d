"""TestGrader's findings: real pytest and xmlrunner runs, each failing task test at the file
and line of its definition; hidden tests counted, never named."""

from __future__ import annotations

import pytest

from repogym.models import Finding
from tests.graders.projects import CALC, FIXED, HIDDEN, PYTEST, grade, task_text
from tests.support.repo import Repo

BROKEN = CALC.replace("return a - b\n", "return a + b\n").replace("a + b\n\n", "a - b\n\n", 1)

# Line numbers, from 1: test_add's def is line 6, test_sub_param's decorator line 10,
# TestSub.test_sub's def line 16.
TESTS = """\
import pytest

from calc import add, sub


def test_add():
    assert add(2, 3) == 5


@pytest.mark.parametrize("a, b", [(1, 1)], ids=["one one"])
def test_sub_param(a, b):
    assert sub(a, b) == a - b


class TestSub:
    def test_sub(self):
        assert sub(5, 3) == 2

    def test_fine(self):
        assert True
"""

F2P = "[tests/test_calc.py::test_add, tests/test_calc.py::test_gone]"
P2P = (
    "['tests/test_calc.py::test_sub_param[one one]', tests/test_calc.py::TestSub::test_sub,"
    " tests/test_calc.py::TestSub::test_fine]"
)


def based(repo: Repo, task: str, files: dict[str, str] | None = None) -> None:
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
            **(files or {}),
        },
    )


def test_the_fixture_lines_are_the_definitions() -> None:
    lines = TESTS.splitlines()
    assert lines[6 - 1] == "def test_add():"
    assert lines[10 - 1].startswith("@pytest.mark.parametrize")
    assert lines[16 - 1] == "    def test_sub(self):"
    assert BROKEN == "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n"


def test_failing_tests_are_findings_at_their_definition(repo: Repo) -> None:
    based(repo, task_text(f2p=F2P, p2p=P2P))
    repo.write({"src/calc.py": BROKEN})
    component = grade(repo)
    assert component.findings == (
        # pytest writes the line counted from 0 (5 here): the finding's is from 1.
        Finding(
            title="fail_to_pass",
            path="tests/test_calc.py",
            line=6,
            message="tests/test_calc.py::test_add failed: assert -1 == 5",
        ),
        Finding(
            title="fail_to_pass",
            path="tests/test_calc.py",
            message="tests/test_calc.py::test_gone is not in the report",
        ),
        Finding(
            title="pass_to_pass",
            path="tests/test_calc.py",
            line=10,
            message="tests/test_calc.py::test_sub_param[one one] failed: assert 2 == (1 - 1)",
        ),
        Finding(
            title="pass_to_pass",
            path="tests/test_calc.py",
            line=16,
            message="tests/test_calc.py::TestSub::test_sub failed: assert 8 == 2",
        ),
    )


def test_passing_tests_give_no_finding(repo: Repo) -> None:
    based(repo, task_text(f2p="[tests/test_calc.py::test_add]", p2p=P2P))
    repo.write({"src/calc.py": FIXED})
    component = grade(repo)
    assert component.passed and component.findings == ()


UNITTEST = """\
import unittest

from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    @unittest.skipIf(False, "never")
    def test_add_again(self):
        self.assertEqual(add(1, 1), 2)
"""
XMLRUNNER = "PYTHONPATH=src python -m xmlrunner discover -s tests -t . --output-file {junit}"


def test_xmlrunner_lines_counted_from_one_give_the_same_place(repo: Repo) -> None:
    f2p = "[tests/test_u.py::TestAdd::test_add, tests/test_u.py::TestAdd::test_add_again]"
    task = task_text(f2p=f2p, p2p="[]", command=XMLRUNNER)
    based(repo, task, {"tests/__init__.py": "", "tests/test_u.py": UNITTEST})
    component = grade(repo)
    assert [(f.path, f.line, f.title) for f in component.findings] == [
        ("tests/test_u.py", 7, "fail_to_pass"),
        ("tests/test_u.py", 10, "fail_to_pass"),  # the decorator, as for pytest
    ]
    assert component.findings[0].message.startswith("tests/test_u.py::TestAdd::test_add failed: ")


def test_a_line_that_is_not_the_test_is_left_out(repo: Repo) -> None:
    # The report is the submission's to write: a line that points at no definition of the
    # test is not repeated.
    script = (
        'printf \'<testsuite><testcase file="tests/test_calc.py" classname="tests.test_calc"'
        ' name="test_add" line="1"><failure message="no"/></testcase></testsuite>\''
        " > {junit}"
    )
    based(repo, task_text(f2p="[tests/test_calc.py::test_add]", p2p="[]", command=script))
    finding, exit_code_warning = grade(repo).findings
    assert (finding.title, finding.path, finding.line) == (
        "fail_to_pass",
        "tests/test_calc.py",
        None,
    )
    assert exit_code_warning.level == "warning"


def test_a_line_in_another_file_counts_from_one_if_the_file_has_it(repo: Repo) -> None:
    cases = "".join(
        f'<testcase file="check.sh" name="{name}" line="{line}"><failure message="no"/></testcase>'
        for name, line in (("first", 2), ("second", 99))
    )
    script = f"printf '<testsuite>{cases}</testsuite>' > {{junit}}"
    task = task_text(f2p="[check.sh::first, check.sh::second]", p2p="[]", command=script)
    based(repo, task, {"check.sh": "#!/bin/sh\ntest 1 = 2\ntest 2 = 3\n"})
    first, second, _ = grade(repo).findings
    assert (first.path, first.line, first.message) == ("check.sh", 2, "check.sh::first failed: no")
    assert (second.path, second.line) == ("check.sh", None)


def test_hidden_tests_are_counted_in_one_finding_without_a_place(repo: Repo) -> None:
    hidden_tests = HIDDEN + "\n\ndef test_also_secret():\n    assert add(1, 1) == 2\n"
    f2p = "[tests/test_calc.py::test_add, tests/test_hidden.py::test_secret]"
    p2p = "[tests/test_hidden.py::test_also_secret]"
    task = task_text(f2p=f2p, p2p=p2p, extra="  hidden: .repogym/hidden\n")
    based(repo, task, {".repogym/hidden/tests/test_hidden.py": hidden_tests})
    repo.write({"src/calc.py": BROKEN.replace("a - b", "a * b")})  # add is wrong
    component = grade(repo)
    assert component.findings == (
        Finding(
            title="fail_to_pass",
            path="tests/test_calc.py",
            line=6,
            message="tests/test_calc.py::test_add failed: assert 6 == 5",
        ),
        Finding(
            title="hidden",
            message="2 hidden tests not passing (1 fail_to_pass, 1 pass_to_pass)",
        ),
    )
    shown = repr([f.to_dict() for f in component.findings])
    assert "secret" not in shown and "test_hidden" not in shown


@pytest.mark.parametrize(
    ("command", "setup", "title", "problem"),
    [
        ("true {junit}", None, "command", "does not exist"),
        ("echo '<testsuite><testcase' > {junit}", None, "command", "not well-formed"),
        (PYTEST, "exit 3", "setup", "setup command failed (exit code 3"),
    ],
)
def test_no_report_is_one_finding_without_a_place(
    repo: Repo, command: str, setup: str | None, title: str, problem: str
) -> None:
    text = task_text(f2p=F2P, p2p=P2P, command=command)
    based(repo, text + (f"setup: {setup}\n" if setup else ""))
    repo.write({"src/calc.py": FIXED})
    component = grade(repo)
    (finding,) = component.findings
    assert (finding.title, finding.path, finding.line, finding.level) == (
        title,
        None,
        None,
        "failure",
    )
    assert problem in finding.message
    assert component.messages[0] == f"score 0: {finding.message}"


def test_an_exit_code_contradicting_the_report_is_a_warning(repo: Repo) -> None:
    f2p = "[tests/test_calc.py::test_add]"
    based(repo, task_text(f2p=f2p, p2p=P2P, command=PYTEST + "; exit 3"))
    repo.write({"src/calc.py": FIXED})
    component = grade(repo)
    assert component.findings == (
        Finding(
            title="command",
            level="warning",
            message="the test command exited with code 3 although every test in the report passed",
        ),
    )
