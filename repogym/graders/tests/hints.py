"""Why task ids are missing from a report: the report's closest id for each, and what else
failed there (a file that could not be loaded first, with the cause its runner printed).
Hidden tests are never named."""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Callable

from repogym.graders.tests.loadfailure import load_failure
from repogym.graders.tests.outcome import TestsOutcome
from repogym.graders.tests.tamper import FAILURES
from repogym.junit import Outcome
from repogym.junit.testids import TestResult, escape_controls, file_of
from repogym.models import MAX_NAMED, CommandResult

MAX_COMPARED = 1_000  # report ids compared with one missing id in each step of the search


def missing_hints(outcome: TestsOutcome) -> list[str]:
    """Why task ids may be missing: the closest id the report has for each, and what else
    failed, a file that could not be loaded first (it takes all its tests with it).
    Hidden tests stay unnamed."""
    missing = _missing(outcome)
    if not missing:
        return []
    others = [i for i in outcome.shown if not outcome.is_task_id(i)]
    # A record of a whole file (one that failed to load) is no candidate: it is listed
    # below. Bare names are (Node 20 writes no file, mocha's root suite has none).
    hints = _closest_hints(missing, [i for i in others if file_of(i) != i])
    hints += _other_failures(outcome, others)
    if not outcome.results:
        hints.append("the report has no testcase at all")
    return hints


def _missing(outcome: TestsOutcome) -> list[str]:
    """The task ids that are not in the report, at most as many per kind as messages
    name (tests._name_ids); not those of hidden tests."""
    return [
        test_id
        for outcomes in (outcome.fail_to_pass, outcome.pass_to_pass)
        for test_id in [
            i
            for i, o in outcomes.items()
            if o is Outcome.MISSING and i not in outcome.hidden_ids and i not in outcome.results
        ][:MAX_NAMED]
    ]


def _closest_hints(missing: list[str], candidates: list[str]) -> list[str]:
    closest = _closest_finder(candidates)
    hints = []
    for test_id in missing:
        close = closest(test_id)
        if close is not None:
            hints.append(_closest_hint(test_id, close))
    return hints


def _other_failures(outcome: TestsOutcome, others: list[str]) -> list[str]:
    """What else failed, and a file skipped as a whole: it takes its tests with it. Files
    that did not load come first."""
    results = outcome.results
    failed = [
        i
        for i in others
        if results[i].outcome in FAILURES
        or (results[i].outcome is Outcome.SKIPPED and file_of(i) == i)
    ]
    failed.sort(key=lambda i: file_of(i) != i)  # stable
    # The cause of a file that did not load is output: not when hidden tests ran.
    run = None if outcome.hidden_ran else outcome.run
    return [_also_failed(i, results[i], run) for i in failed[:3]]


def _closest_finder(candidates: list[str]) -> Callable[[str], str | None]:
    """For a missing id, the report's closest one. Ids are compared as messages show them,
    control characters escaped: an id whose YAML ``"\\t"`` became a TAB then equals the
    report's ``\\t`` exactly, and ranks first. Then the ids that share its scope (all but
    the name), those that share its file or first part, and all of them when there are
    not too many: a report may have 100,000 ids."""
    shown = {escape_controls(i): i for i in candidates}
    by_scope: dict[str, list[str]] = {}
    by_head: dict[str, list[str]] = {}
    for written in shown:
        by_scope.setdefault(written.rpartition("::")[0], []).append(written)
        by_head.setdefault(written.partition("::")[0], []).append(written)
    everything = list(shown) if len(shown) <= MAX_COMPARED else []

    def closest(test_id: str) -> str | None:
        written = escape_controls(test_id)
        if written in shown:
            return shown[written]
        scope, head = written.rpartition("::")[0], written.partition("::")[0]
        for pool in (by_scope.get(scope, []), by_head.get(head, []), everything):
            close = _most_similar(written, pool[:MAX_COMPARED])
            if close is not None:
                return shown[close]
        return None

    return closest


def _closest_hint(test_id: str, close: str) -> str:
    """Names the report's closest id; says how to write the task's when the two differ
    only in a control character against its backslash escape."""
    written = escape_controls(test_id)
    if written != escape_controls(close):
        return f"{written} is not in the report; the closest id there is {escape_controls(close)}"
    if written != test_id:
        fix = (
            "with a backslash escape where the task's id has a control character: YAML "
            "turns `\\t` into a TAB inside double quotes; write the id in single quotes"
        )
    else:
        fix = (
            "with a control character where the task's id has a backslash escape: write "
            "the id in double quotes, where YAML turns `\\t` into a TAB"
        )
    return f"{written} is not in the report, which has the same id {fix}"


def _most_similar(word: str, pool: list[str], cutoff: float = 0.6) -> str | None:
    """difflib's closest match, at a bounded cost: its full ratio, quadratic in the
    length, is computed only for the few whose cheap upper bound is highest."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    bounds = []
    for candidate in pool:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= cutoff and (bound := matcher.quick_ratio()) >= cutoff:
            bounds.append((bound, candidate))
    best, best_ratio = None, cutoff
    for _, candidate in heapq.nlargest(10, bounds):
        matcher.set_seq1(candidate)
        if (ratio := matcher.ratio()) > best_ratio or (ratio == best_ratio and best is None):
            best, best_ratio = candidate, ratio
    return best


def _also_failed(test_id: str, result: TestResult, run: CommandResult | None) -> str:
    """One other failure of the report; for a file that did not load, the cause its
    runner printed (the report's own message seldom has it)."""
    text = f"the report also has {escape_controls(test_id)}: {result.outcome.value}"
    if run is not None and file_of(test_id) == test_id:
        failure = load_failure(test_id, run.stdout, run.stderr)
        if failure is not None:
            return f"{text}, the file could not be loaded: {escape_controls(failure.describe())}"
    first = result.message.splitlines()[0] if result.message else ""
    return f"{text} {escape_controls(first)}"
