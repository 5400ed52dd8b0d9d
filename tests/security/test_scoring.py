"""Scoring (issue 9): a regression test that the submission makes skip (or xfail) is not
kept; it is broken (spec: a skipped pass_to_pass test)."""

from __future__ import annotations

import pytest

from tests.security import _payloads as p
from tests.security._harness import Case

# The fix, and the regression test's input made to skip the test instead of failing it.
SKIP_THE_REGRESSION = p.FIXED_CORE + (
    "\n\n_real = slugify\n\n\n"
    "def slugify(title):\n"
    '    if title == "Plain Title 2":\n'
    "        import pytest\n\n"
    '        pytest.{how}("not supported here")\n'
    "    return _real(title)\n"
)


@pytest.mark.parametrize("how", ["skip", "xfail"])
def test_a_skipped_pass_to_pass_test_is_broken(case: Case, how: str) -> None:
    case.base()
    case.submit({"src/slugify/core.py": SKIP_THE_REGRESSION.replace("{how}", how)})
    case.grade().check("pass_to_pass: 1 of 2 broken")
