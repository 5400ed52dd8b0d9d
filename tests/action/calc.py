"""A task on a `calc` module whose `add` is broken, one target test: the base of the
Action's cases that need only a small pull request to grade (tests/action/test_confined.py,
tests/action/test_runner_start.py)."""

from __future__ import annotations

TASK = """\
version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: [tests/test_calc.py::test_add]
  timeout: 120
"""
BASE = {
    ".repogym.yml": TASK,
    "pytest.ini": "[pytest]\npythonpath = src\n",
    "src/calc.py": "def add(a, b):\n    return 0\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
