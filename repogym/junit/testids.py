"""Canonical test ids: one string per test, whichever runner wrote the report.

A task names its tests as ``path/to/test_file.py::Class::name[params]`` and those ids are
matched exactly against what this module makes of a report (issue 3). The path is POSIX
and relative to the work tree; ``::`` separates the class or describe path from the name;
the name, parameters included, is copied byte for byte. ``docs/test-ids.md`` gives the
id form and reporter options of each runner; in short:

========================  =====================================================
pytest ``xunit1``         ``file`` + the classes in ``classname`` after the module + name
pytest ``xunit2``         ``classname`` resolved to a module file in the tree (below)
unittest (xmlrunner)      as pytest; a failing subTest counts against its method, a
                          module that failed to import is its file
``node --test``           [``file``::] enclosing ``<testsuite>`` names :: name
jest, mocha (configured)  [``file``::] ``classname`` (the describe path) :: name
Go, Surefire, nextest     ``classname`` :: name  (package, class, binary id)
========================  =====================================================

A dotted ``classname`` without a file (pytest's default ``xunit2``) is split into a module
path and classes: the split that gives one of the task's own ids wins, then one whose
module file exists in the tree (directories may contain dots); with neither, the id is
``classname::name`` unchanged.

:func:`collect` folds the testcases of one report into one result per id: a rerun is a
new attempt, a teardown error pytest writes apart from the call's failure joins that
failure's attempt. The report comes from the code being graded, so records that
contradict each other do not add up to a pass (issue 9): a pass counts after failures
only (a rerun), otherwise the worst attempt decides; and a file the report has as skipped
or not collected as a whole has no test of its own in the report (docs/test-ids.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.junit.naming import FILE_NOT_RUN, Namer, exists_in
from repogym.junit.records import Case, Outcome
from repogym.shown import escape

# Worst first within one attempt (issue 3): a call that failed and a teardown that
# errored make an ERROR. MISSING never comes from a report.
_SEVERITY = {
    Outcome.MISSING: 0,
    Outcome.PASSED: 0,
    Outcome.SKIPPED: 1,
    Outcome.FAILED: 2,
    Outcome.ERROR: 3,
}
_BROKEN = frozenset({Outcome.FAILED, Outcome.ERROR})
# How the message of a record that does not count starts (its outcome is MISSING).
NOT_COUNTED = "not counted: "

# pytest writes a teardown error as a testcase of its own after the call's failure.
_TEARDOWN = re.compile(r"failed on teardown with ")
# An id's first part names a file when it ends like a test file does; Go packages, Java
# classes, Rust binaries, describe blocks and test names do not. A file so named is
# protected and put back before the run, so the list errs on the side of more.
SOURCE_SUFFIXES = frozenset(
    {".py", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
     ".coffee", ".rb", ".go", ".java", ".kt", ".kts", ".scala", ".groovy", ".rs", ".php",
     ".cs", ".fs", ".swift", ".m", ".mm", ".c", ".cc", ".cpp", ".cxx", ".ex", ".exs", ".erl",
     ".dart", ".lua", ".pl", ".t", ".r", ".R", ".jl", ".hs", ".ml", ".clj", ".cljs", ".nim",
     ".zig", ".cr", ".sh", ".bash", ".zsh", ".bats", ".ps1", ".feature", ".robot"}
)  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True, kw_only=True)
class TestResult:
    """What a report says about one test id."""

    __test__ = False  # not a pytest test class, despite the name

    outcome: Outcome
    flaky: bool
    message: str
    attempts: int  # how many attempts (reruns) the report had for this id
    # The `line` attribute the report gave the test, as a number (pytest counts from 0,
    # xmlrunner from 1): where a finding points (graders/tests/findings.py).
    line: int | None = None


def test_id(case: Case, *, exists: Callable[[str], bool], known_ids: Collection[str] = ()) -> str:
    """The canonical id of one testcase.

    ``exists`` tells whether a relative POSIX path exists in the work tree, ``known_ids``
    are the task's ids, preferred when a report leaves the split of a name open.
    """
    return Namer(exists, known_ids).identify(case)[0]


test_id.__test__ = False  # type: ignore[attr-defined]  # not a pytest test either


def file_of(test_id: str) -> str | None:
    """The file a task's id names, or None when the id names none.

    An id is a name. Its part before the first ``::`` is a file when it ends with a
    source file's suffix (:data:`SOURCE_SUFFIXES`): ``tests/test_x.py::test_a`` names
    ``tests/test_x.py``, ``example.com/calc::TestDivide`` and ``/ matches root`` name
    none. An id without ``::`` is a whole file (a module that failed to load) only when
    it holds no whitespace as well: ``loads index.js`` is a test's name.
    """
    head, separator, _ = test_id.partition("::")
    if PurePosixPath(head).suffix not in SOURCE_SUFFIXES:
        return None
    if not separator and any(char.isspace() for char in head):
        return None
    return head


def escape_controls(text: str) -> str:
    """``text`` with each control character written as Python writes it (``\\t``,
    ``\\x1b``), so that an id holding one (a YAML ``"\\t"`` that became a TAB) can be
    seen in a message and compared with the report's ids."""
    return _CONTROL.sub(lambda found: escape(found[0], python=True), text)


def collect(
    cases: Iterable[Case], *, tree: Path, known_ids: Collection[str] = ()
) -> dict[str, TestResult]:
    """Canonical id -> result for every testcase of a report (tree: the work tree the tests
    ran in, used to resolve module paths; known_ids: the task's fail_to_pass + pass_to_pass
    ids)."""
    namer = Namer(exists_in(tree), known_ids, roots=(tree, tree.resolve()))
    history: dict[str, list[_Attempt]] = {}
    for case in cases:
        key, part = namer.identify(case)
        attempts = history.setdefault(key, [])
        if attempts and (part or _teardown_of(attempts[-1], case)):
            attempts[-1].add(case)
        else:
            attempts.append(_Attempt(case))
    return _without_contradictions({key: _result(attempts) for key, attempts in history.items()})


def _without_contradictions(results: dict[str, TestResult]) -> dict[str, TestResult]:
    """``results``, where a file that the report has as skipped or not collected as a
    whole has no test that counts: such a test's record is not this file's (a test of
    another module can write any ``file``, ``classname`` and ``name`` it likes, with
    pytest's ``record_xml_attribute``), so its id is left missing and says why."""
    not_run = {
        key: FILE_NOT_RUN[result.outcome]
        for key, result in results.items()
        if result.outcome in FILE_NOT_RUN and file_of(key) == key
    }
    if not not_run:
        return results
    kept = {}
    for key, result in results.items():
        file, separator, _ = key.partition("::")
        if separator and file in not_run:
            reason = f"{NOT_COUNTED}the report has its file {file} as {not_run[file]} as a whole"
            result = TestResult(
                outcome=Outcome.MISSING, flaky=False, message=reason, attempts=result.attempts
            )
        kept[key] = result
    return kept


class _Attempt:
    """One run of a test, from one or more testcases: the worst of them decides."""

    __slots__ = ("flaky", "line", "message", "outcome")

    def __init__(self, case: Case) -> None:
        self.outcome, self.message, self.flaky = case.outcome, case.message, case.flaky
        self.line = case.line

    def add(self, case: Case) -> None:
        if _SEVERITY[case.outcome] > _SEVERITY[self.outcome]:
            self.outcome, self.message = case.outcome, case.message
        self.flaky = self.flaky or case.flaky


def _teardown_of(last: _Attempt, case: Case) -> bool:
    """Whether ``case`` is the teardown error of the attempt whose call failed.

    pytest writes that pair as two testcases. A teardown error after a call that passed
    is written into the call's own testcase, so a separate one after a passing testcase is
    a later attempt (pytest-rerunfailures writes each failed attempt as a bare testcase),
    and a setup error always opens an attempt: nothing of it ran before.
    """
    return (
        last.outcome is Outcome.FAILED
        and case.outcome is Outcome.ERROR
        and _TEARDOWN.match(case.message) is not None
    )


def _result(attempts: list[_Attempt]) -> TestResult:
    final = attempts[-1]
    # The last attempt decides when it passed after failures or errors only: a rerun that
    # passed (gotestsum, pytest-rerunfailures' bare testcases, Node 20's shared names).
    # Otherwise the worst attempt does, the last of its kind: nothing reruns a skipped test,
    # so a pass after a skip is a second record contradicting it (issue 9), and a skip does
    # not take back a failure.
    decided = final
    if final.outcome is not Outcome.PASSED or any(a.outcome is Outcome.SKIPPED for a in attempts):
        worst = max(_SEVERITY[a.outcome] for a in attempts)
        decided = next(a for a in reversed(attempts) if _SEVERITY[a.outcome] == worst)
    # Flaky needs a failure on record: a pass after a failed or errored attempt, or
    # `flakyFailure` children on a pass (Surefire and nextest write them when a rerun
    # passed, `rerunFailure` when every run failed). Testcases that all passed are not
    # flaky, however many: tests sharing a name (two `it('works')` in one describe block,
    # a `test.each` with equal titles, Node 20's files that name no file) write exactly
    # that, and so, indistinguishably, does pytest-rerunfailures for a failed attempt.
    flaky = final.outcome is Outcome.PASSED and final.flaky
    broken = False
    for attempt in attempts:
        flaky = flaky or (broken and attempt.outcome is Outcome.PASSED)
        broken = broken or attempt.outcome in _BROKEN
    return TestResult(
        outcome=decided.outcome,
        flaky=flaky,
        message=decided.message,
        attempts=len(attempts),
        line=_reported_line(decided.line),
    )


def _reported_line(line: str | None) -> int | None:
    """A report's ``line`` attribute as a number, or None when it is not one (the report
    is untrusted: no sign, no spaces, at most 9 digits)."""
    if line is None or not 0 < len(line) <= 9 or not line.isascii() or not line.isdigit():
        return None
    return int(line)
