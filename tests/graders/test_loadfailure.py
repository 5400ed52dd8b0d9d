"""Finding why a test file did not load in a runner's output. The real outputs of pytest,
unittest (xmlrunner) and ``node --test`` are checked in tests/junit/test_testids.py; these are
the edges."""

from __future__ import annotations

from repogym.graders.tests.loadfailure import LoadFailure, load_failure

PYTEST_IMPORT_ERROR = """\
==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_broken.py ____________________
ImportError while importing test module '/ci/tree/tests/test_broken.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_broken.py:3: in <module>
    import nowhere_xyz
E   ModuleNotFoundError: No module named 'nowhere_xyz'
=========================== short test summary info ============================
ERROR tests/test_broken.py
"""


def test_the_first_exception_after_the_file_and_its_last_line_number() -> None:
    failure = load_failure("tests/test_broken.py", PYTEST_IMPORT_ERROR)
    assert failure == LoadFailure(
        cause="ModuleNotFoundError: No module named 'nowhere_xyz'", line=3
    )
    assert failure.describe() == "ModuleNotFoundError: No module named 'nowhere_xyz' (line 3)"


def test_another_file_of_the_same_tail_is_not_a_mention() -> None:
    assert load_failure("test_broken.py", PYTEST_IMPORT_ERROR) is not None  # `/test_broken.py`
    assert load_failure("s/test_broken.py", PYTEST_IMPORT_ERROR) is None
    assert load_failure("tests/test_broken.p", PYTEST_IMPORT_ERROR) is None


def test_an_exception_far_from_any_mention_is_not_the_cause() -> None:
    output = "ERROR tests/test_x.py\n" + "noise\n" * 50 + "ValueError: unrelated\n"
    assert load_failure("tests/test_x.py", output) is None


def test_a_line_number_of_an_earlier_traceback_is_not_kept() -> None:
    output = (
        'File "/ci/tests/test_x.py", line 7\n'
        + "noise\n" * 50
        + "ERROR collecting tests/test_x.py\nE   SyntaxError: invalid syntax\n"
    )
    failure = load_failure("tests/test_x.py", output)
    assert failure == LoadFailure(cause="SyntaxError: invalid syntax", line=None)
    assert failure.describe() == "SyntaxError: invalid syntax"


def test_the_outputs_are_tried_in_order() -> None:
    stdout = "tests/test_x.py:1: in <module>\nE   NameError: name 'x' is not defined\n"
    stderr = 'File "tests/test_x.py", line 2\nSyntaxError: invalid syntax\n'
    assert load_failure("tests/test_x.py", "", stderr) == LoadFailure(
        cause="SyntaxError: invalid syntax", line=2
    )
    assert load_failure("tests/test_x.py", stdout, stderr) == LoadFailure(
        cause="NameError: name 'x' is not defined", line=1
    )
    assert load_failure("tests/test_x.py", "nothing here\n", "") is None


def test_a_long_cause_is_cut() -> None:
    output = "tests/test_x.py:1\nValueError: " + "x" * 1000 + "\n"
    failure = load_failure("tests/test_x.py", output)
    assert failure is not None and len(failure.cause) == 300
