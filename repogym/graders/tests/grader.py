"""TestGrader: runs the task's tests and scores them by the spec's table.

The four steps the spec lists ("TestGrader"), on a fresh copy of the submission rather
than in its work tree (issue 9):

1. restore to the base every file a test id names, and the runner's configuration
   wherever it is (see repogym.graders.tests.runfiles), so a submission cannot rewrite the
   tests or their outcomes. The base is the commit the task was read at (the base
   branch's tip), not the merge base (issue 19): when the tests fail and the base changed
   them since the merge base, the messages name those files and say to bring the pull
   request up to date;
2. inject the hidden tests (``tests.hidden`` of that same commit) at the same relative
   paths;
3. run ``tests.command`` in the copy with ``{junit}`` pointing into a fresh directory
   outside it;
4. parse the JUnit XML; the copy is then removed.

The user's work tree is never written.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.graders.base import BuiltinGrader
from repogym.graders.tests import findings as _test_findings
from repogym.graders.tests import hints as _test_hints
from repogym.graders.tests import reruns as _reruns
from repogym.graders.tests.base_runs import HEADS_TESTS, ON_BASE_CODE, BaseRuns, base_runs
from repogym.graders.tests.outcome import TestsOutcome
from repogym.graders.tests.run import Hidden, TestRun, run_tests
from repogym.graders.tests.tamper import FAILURES
from repogym.graders.tests.versus_base import AgainstBase
from repogym.junit import Outcome
from repogym.junit.testids import TestResult, escape_controls, file_of
from repogym.models import (
    ALL_PASSED,
    EXIT_WARNING,
    MAX_NAMED,
    OUTPUT_NOT_SHOWN,
    SOME_FAILED,
    TESTS,
    CommandResult,
    Finding,
    GradeComponent,
)
from repogym.run.protocol import CommandRunner
from repogym.shown import counted
from repogym.task import TestsConfig
from repogym.tree import git as _git
from repogym.tree.globs import compile_globs, matching
from repogym.workspace import Workspace, files_under

# What reports show in place of the output when hidden tests ran: it would show their
# names and code (issue 9).


class TestGrader(BuiltinGrader):
    """Scores ``tests.fail_to_pass`` and ``tests.pass_to_pass`` (an objective when there
    are targets, a gate otherwise). ``hidden`` overrides ``tests.hidden`` with a
    directory from elsewhere; ``runner`` runs the commands."""

    name = TESTS
    __test__ = False  # not a pytest test class, despite the name

    def grade(self, workspace: Workspace) -> GradeComponent:
        config = workspace.task.tests
        if config is None:
            raise ValueError("the task has no `tests` section")
        runner = self.runner or workspace.command_runner()
        hidden_root = self._hidden_root(workspace, config)
        hidden = (hidden_root, files_under(hidden_root) if hidden_root else [])
        graded, against, problem = _runs(workspace, config, runner, hidden)
        outcome = TestsOutcome.of(
            workspace,
            config,
            run=graded.run,
            results=graded.results,
            problem=problem,
            hidden=set(hidden[1]),
            files=graded.files,
            hidden_changed=self.hidden is None and _hidden_changed(workspace, config),
            against=against,
        )
        again = None
        if outcome.problem is None:
            again = _reruns.rerun(
                workspace,
                config,
                runner,
                hidden,
                targets=outcome.fail_to_pass,
                regressions=outcome.pass_to_pass,
                base=against.base if against is not None else None,
            )
        today = datetime.datetime.now(datetime.timezone.utc).date()
        outcome = outcome.settled(again, config, today)
        return _component(outcome, workspace)

    def _hidden_root(self, workspace: Workspace, config: TestsConfig) -> Path | None:
        if self.hidden is not None:
            return self.hidden
        if config.hidden is None:
            return None
        # The base tip's hidden tests, not the merge base's (issue 19).
        return workspace.rubric_tree / config.hidden


def _hidden_changed(workspace: Workspace, config: TestsConfig) -> bool:
    """Whether the base changed ``tests.hidden`` since the merge base."""
    if config.hidden is None or workspace.rubric == workspace.base:
        return False
    at_fork = _git.tree_entry(workspace.root, workspace.base, config.hidden)
    at_tip = _git.tree_entry(workspace.root, workspace.rubric, config.hidden)
    return at_fork != at_tip


def _runs(
    workspace: Workspace, config: TestsConfig, runner: CommandRunner, hidden: Hidden
) -> tuple[TestRun, AgainstBase | None, str | None]:
    """The graded run (the submission's code, the base's tests); with ``added`` or
    ``baseline`` the base's runs first (issue 22), then the submission's own tests; and
    why there is nothing to score, if so. One after another: the submission's code must
    not run beside the runs that grade it, nor beside the base's."""
    if not config.runs_the_base:
        graded = run_tests(workspace, config, runner, hidden)[0]
        return graded, None, graded.problem
    changed = tuple(matching(compile_globs(config.paths), list(workspace.changed_files())))
    base = base_runs(workspace, config, runner, hidden)
    graded = run_tests(workspace, config, runner, hidden)[0]
    heads = without = None
    if changed:
        heads = run_tests(workspace, config, runner, hidden, HEADS_TESTS)[0]
        if config.added:
            without = run_tests(workspace, config, runner, hidden, ON_BASE_CODE)[0]
    problem = graded.problem or _base_problem(base, heads, without)
    if problem is not None:
        return graded, None, problem
    return graded, AgainstBase.of(config, base, graded, heads, without, changed), None


def _base_problem(base: BaseRuns, heads: TestRun | None, without: TestRun | None) -> str | None:
    """Why the runs besides the graded one leave nothing to compare, if they do."""
    if base.problem is not None:
        return (
            f"the base's own run of the tests has no results ({base.problem}): the tests "
            "that pass there cannot be known; fix the task at the base (`repogym validate` "
            "runs it)"
        )
    for run, what in ((heads, "the change's own tests"), (without, "its tests on the base's code")):
        if run is not None and run.problem is not None:
            return f"the run of {what} has no results: {run.problem}"
    return None


def _component(outcome: TestsOutcome, workspace: Workspace) -> GradeComponent:
    """The grade of one run; ``workspace`` is read for the lines of the findings."""
    messages = _messages(outcome) + _test_hints.missing_hints(outcome)
    advice = _up_to_date(outcome)
    stale: tuple[Finding, ...] = ()
    if advice is not None:
        messages.append(advice)
        stale = (Finding(title="out of date", message=advice, level="warning"),)
    found = (*stale, *_test_findings.findings(outcome, workspace))
    return GradeComponent(
        name="tests",
        role=outcome.role,
        score=_score(outcome),
        passed=outcome.passed,
        details=_details(outcome),
        messages=messages,
        findings=found + _test_findings.warnings(messages),
    )


def _score(outcome: TestsOutcome) -> float:
    """The spec's table: the share of targets that pass (all or nothing without partial
    credit), scaled down by the share of regression tests broken; 0 with a problem."""
    if outcome.problem is not None or outcome.no_targets:
        return 0.0
    f2p, failing = outcome.fail_to_pass, outcome.failing
    if f2p:
        passing = len(f2p) - len(failing)
        score = passing / len(f2p) if outcome.partial_credit else float(not failing)
    else:
        score = 1.0
    broken = outcome.broken
    if broken:
        kept = 1 - len(broken) / len(outcome.pass_to_pass)
        score = 0.0 if outcome.require_all_pass_to_pass else score * kept
    return score


def _unnamed_added(outcome: TestsOutcome) -> dict[str, str]:
    """The ids of the tests the submission added, each to a name that says nothing of it,
    when hidden tests ran (issue 44): a runner makes an id when the tests are collected
    (pytest of a parameter's value, jest of a template), in the copy where the hidden tests
    are, so the submission's code can spell them out in it. Counted, never named."""
    if not outcome.hidden_ran or outcome.against is None or not outcome.against.added:
        return {}
    return {i: f"added test {n}" for n, i in enumerate(outcome.fail_to_pass, 1)}


def _details(outcome: TestsOutcome) -> dict[str, Any]:
    results, run = outcome.results, outcome.run
    task_ids = (*outcome.fail_to_pass, *outcome.pass_to_pass)
    unnamed = outcome.hidden_ids - outcome.listed_hidden  # found by the base's runs
    added = _unnamed_added(outcome)
    details: dict[str, Any] = {
        "fail_to_pass": {added.get(i, i): o.value for i, o in outcome.fail_to_pass.items()},
        "pass_to_pass": {i: o.value for i, o in outcome.pass_to_pass.items()},
        "hidden": sorted(outcome.listed_hidden),
        "flaky": sorted(
            added.get(i, i)
            for i in task_ids
            if i in results and results[i].flaky and i not in unnamed
        ),
        "restored": outcome.files.restored,
        "tests_from": outcome.tests_from,
        "changed_on_base": outcome.files.changed_on_base,
        "reports_tests": sum(r.outcome is not Outcome.MISSING for r in results.values()),
        "problem": outcome.problem,
        # Records of a whole file: one that could not be loaded took its tests with it.
        "files_not_loaded": sorted(
            i for i in outcome.shown if file_of(i) == i and results[i].outcome in FAILURES
        ),
    }
    if outcome.against is not None:
        details.update(_against_details(outcome, outcome.against))
    details.update(_flaky_details(outcome))
    if run is not None:
        details["command"] = {
            "command": run.command,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "duration": round(run.duration, 3),
            "output_tail": OUTPUT_NOT_SHOWN if outcome.hidden_ran else run.tail(40),
            "output_cut_bytes": run.stdout_cut + run.stderr_cut,
        }
    return details


def _flaky_details(outcome: TestsOutcome) -> dict[str, Any]:
    """The failing tests run again and the tests in quarantine (issue 47), if any."""
    details: dict[str, Any] = {}
    if outcome.reruns is not None:
        # Only the ids messages may name are named (outcome.shown: not a hidden test's,
        # nor, with hidden tests, one naming no file); with hidden tests, an id the base's
        # runs found may be one of theirs: counts only.
        ids = frozenset(outcome.reruns.tests)
        counted_only = outcome.hidden_ran and outcome.against is not None
        details["reruns"] = outcome.reruns.details(
            ids if counted_only else ids - frozenset(outcome.shown)
        )
    if outcome.quarantined:
        shown = {i: r for i, r in outcome.quarantined.items() if i not in outcome.hidden_ids}
        details["quarantined"] = {"tests": shown, "hidden": len(outcome.quarantined) - len(shown)}
    return details


def _flaky_messages(outcome: TestsOutcome) -> list[str]:
    """What the reruns found, counted; the tests in quarantine; the entries past date."""
    said = outcome.reruns.message() if outcome.reruns is not None else None
    messages = [said] if said is not None else []
    if outcome.quarantined:
        messages.append(f"quarantined, not counted: {counted(len(outcome.quarantined), 'test')}")
    return messages + [f"warning: {line}" for line in outcome.expired]


def _against_details(outcome: TestsOutcome, against: AgainstBase) -> dict[str, Any]:
    """The ids the base's runs found, not the task's (a hidden test's never shown), and
    the comparison's own details."""
    added = _unnamed_added(outcome)
    found: dict[str, Any] = {
        kind: {added.get(i, i): o.value for i, o in outcomes.items() if i not in outcome.hidden_ids}
        for kind, (outcomes, _) in outcome.kinds.items()
    }
    found["baseline"] = against.details(named=not outcome.hidden_ran)
    found["baseline"]["counts"]["hidden"] = len(outcome.hidden_ids - outcome.listed_hidden)
    return found


def _up_to_date(outcome: TestsOutcome) -> str | None:
    """What to do when the tests the base changed since the fork point may be what
    failed (issue 19): the rubric is the base tip's, whatever the fork point, so an
    out-of-date pull request is brought up to date rather than graded by older tests.
    Hidden tests are not named, nor counted: only that they changed."""
    changed = outcome.files.changed_on_base
    if outcome.passed or not (changed or outcome.hidden_changed):
        return None
    named = [escape_controls(p) for p in changed[:MAX_NAMED]]
    if len(changed) > MAX_NAMED:
        named.append(f"{len(changed) - MAX_NAMED} more")
    if outcome.hidden_changed:
        named.append("the hidden tests")
    base_ref = outcome.base_ref
    return (
        f"the tests changed on {base_ref} since this change's merge base "
        f"{outcome.merge_base[:12]} ({', '.join(named)}); they ran as they are at {base_ref} "
        f"({outcome.tests_from[:12]}): if they fail for want of its newer code, "
        f"bring the pull request up to date with {base_ref} (merge or rebase)"
    )


def _messages(outcome: TestsOutcome) -> list[str]:
    """The problem, if there is one, and the output's tail; else how many tests passed
    or broke, the failing ones named, and whether the exit code contradicts the report."""
    run = outcome.run
    if outcome.problem is not None:
        messages = [f"score 0: {outcome.problem}"]
        if run is not None and run.tail():
            messages.append(
                OUTPUT_NOT_SHOWN if outcome.hidden_ran else "output tail:\n" + run.tail()
            )
        return messages
    messages = []
    f2p, p2p = outcome.fail_to_pass, outcome.pass_to_pass
    if f2p:
        added = outcome.against is not None and outcome.against.added
        which = " (the added tests that fail without the change)" if added else ""
        messages.append(
            f"fail_to_pass{which}: {len(f2p) - len(outcome.failing)} of {len(f2p)} passed"
        )
        messages += _name_ids(outcome, "fail_to_pass")
    if p2p:
        # With `baseline` the comparison's regressions line counts the same tests, by kind
        # (issue 45: the two lines said one thing twice).
        if outcome.against is None or not outcome.against.regressions:
            messages.append(f"pass_to_pass: {len(outcome.broken)} of {len(p2p)} broken")
        messages += _name_ids(outcome, "pass_to_pass")
    if outcome.against is not None:
        messages += outcome.against.messages(named=not outcome.hidden_ran)
    return messages + _flaky_messages(outcome) + _exit_code_warnings(run, outcome.results)


def _exit_code_warnings(run: CommandResult | None, results: Mapping[str, TestResult]) -> list[str]:
    """A warning when the test command's exit code contradicts the report."""
    if run is None:
        return []
    all_passed = bool(results) and all(r.outcome is Outcome.PASSED for r in results.values())
    any_failed = any(r.outcome in FAILURES for r in results.values())
    if run.exit_code not in (0, None) and all_passed:
        return [EXIT_WARNING.format(code=run.exit_code, why=ALL_PASSED)]
    if run.exit_code == 0 and any_failed:
        return [EXIT_WARNING.format(code=0, why=SOME_FAILED)]
    return []


def _name_ids(outcome: TestsOutcome, kind: str) -> list[str]:
    """The ids of ``kind`` that count against the score, each with the first line of its
    report's message; hidden tests' only counted."""
    outcomes, ids = outcome.kinds[kind]
    public = [i for i in ids if i not in outcome.hidden_ids]
    lines = []
    for test_id in public[:MAX_NAMED]:
        result = outcome.results.get(test_id)
        detail = result.message if result is not None else ""
        suffix = f": {escape_controls(detail.splitlines()[0])}" if detail.strip() else ""
        lines.append(f"{kind} {outcomes[test_id].value}: {escape_controls(test_id)}{suffix}")
    if len(public) > MAX_NAMED:
        lines.append(f"{kind}: {len(public) - MAX_NAMED} more not listed")
    hidden_count = len(ids) - len(public)
    if hidden_count:
        lines.append(f"{kind}: {counted(hidden_count, 'hidden test')} not passing")
    return lines
