"""Reading the grader's secrets (issue 9): the tests read ``/proc/<pid>/environ`` of the
processes around them and put what they find where the report shows it. The harness puts
a canary secret in repogym's environment; it must appear in no output and no report."""

from __future__ import annotations

import textwrap

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case

STEAL = p.FIND_GRADER + p.STEAL_ENVIRON

ATTACKS = {
    # Printed at exit, once pytest has stopped capturing: the output tail goes into
    # the report.
    "ancestors_printed_at_exit": {
        "src/slugify/__init__.py": p.package_init(
            STEAL
            + "\nimport sys\n"
            + "__import__('atexit').register(\n"
            + "    lambda: print('\\n'.join(_interesting(_ancestors())), file=sys.__stderr__)\n)\n"
        )
    },
    # Printed by the function under test: pytest shows a failing test's output.
    "every_process_printed_by_the_tests": {
        "src/slugify/core.py": STEAL
        + textwrap.dedent(
            """

            def slugify(title):
                print("\\n".join(_interesting(_all_pids())))
                return title
            """
        )
    },
    # Returned by the function under test: the failure message carries it into the
    # findings, the messages and the markdown.
    "in_the_failure_message": {
        "src/slugify/core.py": STEAL
        + textwrap.dedent(
            """

            def slugify(title):
                return " ".join(_interesting(_ancestors() + _all_pids()))
            """
        )
    },
    # A test whose id is the secret: the closest-id hints and the findings name ids.
    "in_a_test_id": {
        "src/slugify/test_leak.py": STEAL
        + textwrap.dedent(
            """
            import pytest


            @pytest.mark.parametrize("x", [0], ids=[" ".join(_interesting(_ancestors()))])
            def test_leak(x):
                assert False
            """
        )
    },
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_graders_environment_stays_secret(case: Case, attack: str) -> None:
    case.base(task=LOOSE_TASK)
    case.submit(ATTACKS[attack])
    case.grade().check("FAIL")
