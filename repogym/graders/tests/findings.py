"""The TestGrader's findings: each failing or broken task test at its file and line.

A test's finding points at the test's definition in the submission's tree: the file is the
first part of its id (when that is a file of the tree), the line the one the JUnit report
gave (pytest's ``xunit1`` and xmlrunner write a ``line`` attribute). Hidden tests are
counted in one finding without a place, never named (issue 8).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from repogym import shown as words
from repogym.errors import WorkspaceError
from repogym.graders.tests.outcome import TestsOutcome
from repogym.junit import Outcome
from repogym.junit.testids import NOT_COUNTED, TestResult
from repogym.models import TEST_WHAT, Finding, capped_findings
from repogym.shown import shown_path
from repogym.workspace import Workspace

# How a finding says what happened to a test that did not pass.
_WHAT = {Outcome(outcome): said for outcome, said in TEST_WHAT.items()}


def findings(outcome: TestsOutcome, workspace: Workspace) -> tuple[Finding, ...]:
    """The findings of one grade, but for its warnings and its advice to update: the
    problem, when there is no report to read or trust, else each task test that counts
    against the score; ``workspace`` is the tree the tests' lines are read in."""
    if outcome.problem is not None:
        run = outcome.run
        setup = run is not None and run.command == outcome.setup
        return (Finding(title="setup" if setup else "command", message=outcome.problem),)
    found = []
    hidden_counts = {}
    sources: dict[str, list[str] | None] = {}
    for kind, (outcomes, failing) in outcome.kinds.items():
        public = [i for i in failing if i not in outcome.hidden_ids]
        hidden_counts[kind] = len(failing) - len(public)
        for test_id in public:
            found.append(
                _finding(workspace, kind, test_id, outcomes[test_id], outcome.results, sources)
            )
    return capped_findings(found, "failing test") + _hidden(hidden_counts)


def _hidden(counts: Mapping[str, int]) -> tuple[Finding, ...]:
    """Hidden tests that count against the score, counted by kind in one finding."""
    total = sum(counts.values())
    if not total:
        return ()
    kinds_shown = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    message = f"{words.counted(total, 'hidden test')} not passing ({kinds_shown})"
    return (Finding(title="hidden", message=message),)


def warnings(messages: list[str]) -> tuple[Finding, ...]:
    """The messages that warn (the exit code contradicting the report) as findings."""
    return tuple(
        Finding(title="command", level="warning", message=m.removeprefix("warning: "))
        for m in messages
        if m.startswith("warning: ")
    )


def _finding(
    workspace: Workspace,
    kind: str,
    test_id: str,
    outcome: Outcome,
    results: Mapping[str, TestResult],
    sources: dict[str, list[str] | None],
) -> Finding:
    result = results.get(test_id)
    path = _test_file(workspace, test_id)
    line = None
    if path is not None and result is not None and result.line is not None:
        line = _definition_line(workspace, path, test_id, result.line, sources)
    what = _WHAT.get(outcome, outcome.value)
    detail = _first_line(result.message) if result is not None else ""
    if outcome is Outcome.MISSING and detail.startswith(NOT_COUNTED):
        # In the report, but its record contradicts the report (repogym.junit.testids).
        what, detail = "is not counted", detail.removeprefix(NOT_COUNTED)
    message = f"{shown_path(test_id)} {what}"
    if detail:
        message += f": {detail}"
    return Finding(title=kind, path=path, line=line, message=message)


def _first_line(message: str) -> str:
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def _test_file(workspace: Workspace, test_id: str) -> str | None:
    """The first part of ``test_id`` when it is a regular file of the tree (a Go or a bare
    name is not)."""
    part = test_id.split("::", 1)[0]
    if not part or PurePosixPath(part).as_posix() != part:
        return None
    # Only a regular file of the submission: an absolute path, `..` or a symlink is none.
    return part if workspace.is_regular_file(part) else None


def _definition_line(
    workspace: Workspace,
    path: str,
    test_id: str,
    reported: int,
    sources: dict[str, list[str] | None],
) -> int | None:
    """The line, from 1, where the test's definition starts (its first decorator's line
    when it has one), from the line its report gave.

    Writers count that line differently: pytest from 0, xmlrunner (and PHPUnit) from 1.
    So in a Python file the report's line and the one after it, counted from 1, are read:
    the first that is the test's ``def`` (or ``class``) or a decorator is the line; with
    neither, the finding has no line rather than a wrong one. In another file the line is
    taken as counted from 1, if the file has it.
    """
    if path not in sources:
        sources[path] = _source_lines(workspace, path)
    lines = sources[path]
    if lines is None:
        return None
    if not path.endswith(".py"):
        return reported if 1 <= reported <= len(lines) else None
    name = re.sub(r"\[.*", "", test_id.rsplit("::", 1)[-1], flags=re.DOTALL)
    if "::" not in test_id or not name:
        return None
    definition = re.compile(rf"\s*(?:(?:async\s+)?def|class)\s+{re.escape(name)}\b|\s*@")
    for line in (reported, reported + 1):
        if 1 <= line <= len(lines) and definition.match(lines[line - 1]):
            return line
    return None


def _source_lines(workspace: Workspace, path: str) -> list[str] | None:
    try:
        text = workspace.read(path)
    except (WorkspaceError, OSError):
        return None
    # Python numbers lines after turning \r\n and \r into \n (as repogym.metrics does).
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
