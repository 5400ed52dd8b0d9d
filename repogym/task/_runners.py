"""Whether a task's command starts a Python test runner, which the grader starts its own
way (issue 44: :mod:`repogym.graders.tests.pytest_start`, :mod:`repogym.graders.tests.python_start`)
and whose command the task's checks hold to that (:mod:`repogym.task._checks`)."""

from __future__ import annotations

import re

__all__ = ["runs_pytest", "runs_unittest"]

# pytest, py.test, a path to either, Debian's pytest-3, `python -mpytest`, its __main__
# (issue 44's red team: each missed form started pytest with no guard).
_RUNS_PYTEST = re.compile(
    r"(?:(?<![\w.-])(?:[\w./-]*/)?|(?<=-m))(?:pytest|py\.test)(?:-\d+(?:\.\d+)*)?"
    r"(?:\.__main__)?(?![\w.-])"
)
# unittest or xmlrunner by -m, after a cluster of flags too (`-Im`).
_RUNS_UNITTEST = re.compile(
    r"(?<![\w.-])-[A-Za-z]*m\s*(?:unittest|xmlrunner)(?:\.__main__)?(?![\w.-])"
)


def runs_pytest(command: str) -> bool:
    """Whether ``command`` starts pytest (``pytest``, ``py.test``, ``python -m pytest``,
    ``uv run pytest``...)."""
    return bool(_RUNS_PYTEST.search(command))


def runs_unittest(command: str) -> bool:
    """Whether ``command`` starts unittest or xmlrunner by ``-m``."""
    return bool(_RUNS_UNITTEST.search(command))
