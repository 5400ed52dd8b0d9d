"""Whether a run's report can be that run's (issue 9): a runner that says tests failed and
a report with no failure in it cannot both be right. Every run the tests grader reads is
checked, the first one and each rerun (issue 47: code that knows it is being run again
could rewrite the report only then)."""

from __future__ import annotations

from collections.abc import Mapping

from repogym.junit import Outcome
from repogym.junit.testids import TestResult
from repogym.models import CommandResult

FAILURES = frozenset({Outcome.FAILED, Outcome.ERROR})
# The exit code of pytest, unittest, `node --test`, jest and mocha (with one failure) when
# a test failed. A report without any failure from such a run is not this run's report.
TESTS_FAILED = 1


def tampered(run: CommandResult | None, results: Mapping[str, TestResult]) -> str | None:
    """Why the report cannot be this run's, if it cannot: the runner said that tests
    failed, and the report has no failure. A coverage threshold that fails (pytest-cov,
    jest) exits with the same code: it belongs outside the test command."""
    if run is None or run.exit_code != TESTS_FAILED or not results:
        return None
    if any(r.outcome in FAILURES for r in results.values()):
        return None
    return (
        f"the test command exited with code {run.exit_code} (tests failed) but the report "
        "has no failure: the report was altered, or it is not this run's"
    )
