"""TestGrader: runs the task's tests and scores them by the spec's table.

The four steps the spec lists ("TestGrader"), on a fresh copy of the submission rather
than in its work tree (issue 9):

1. restore to the base every file a test id names, and the runner's configuration
   wherever it is (see repogym.graders._runfiles), so a submission cannot rewrite the
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

import shlex
import tempfile
from pathlib import Path
from typing import Any

from repogym._words import counted
from repogym.container.runner import AnyRunner, ContainerRunner
from repogym.errors import JUnitError
from repogym.graders import _runfiles, _test_findings, _test_hints
from repogym.graders.base import BuiltinGrader
from repogym.junit import Outcome, iter_cases
from repogym.junit.testids import TestResult, collect, escape_controls, file_of
from repogym.models import Finding, GradeComponent
from repogym.runner import CommandResult
from repogym.sandbox import notfound as _notfound
from repogym.task import TestsConfig
from repogym.tree import git as _git
from repogym.tree.links import place
from repogym.tree.store import copies_dir
from repogym.workspace import Workspace, files_under

_FAILING_F2P = frozenset(Outcome) - {Outcome.PASSED}
# A regression test that the submission makes skip is not kept (issue 9): anything but a
# pass breaks it, as for a target.
_BROKEN_P2P = _FAILING_F2P
_FAILURES = _test_hints.FAILURES
# The exit code of pytest, unittest, `node --test`, jest and mocha (with one failure) when
# a test failed. A report without any failure from such a run is not this run's report.
TESTS_FAILED = 1
# What reports show in place of the output when hidden tests ran: it would show their
# names and code (issue 9).
OUTPUT_NOT_SHOWN = "output not shown: hidden tests ran"
MAX_NAMED = _test_hints.MAX_NAMED  # failing ids named in messages; the rest are counted


class TestGrader(BuiltinGrader):
    """Scores ``tests.fail_to_pass`` and ``tests.pass_to_pass`` (an objective when there
    are targets, a gate otherwise). ``hidden`` overrides ``tests.hidden`` with a
    directory from elsewhere; ``runner`` runs the commands."""

    name = "tests"
    __test__ = False  # not a pytest test class, despite the name

    def grade(self, workspace: Workspace) -> GradeComponent:
        config = workspace.task.tests
        if config is None:
            raise ValueError("the task has no `tests` section")
        runner = self.runner or workspace.command_runner()
        hidden_root = self._hidden_root(workspace, config)
        hidden_files = files_under(hidden_root) if hidden_root else []
        copies = copies_dir(workspace.snapshot().size)
        with tempfile.TemporaryDirectory(prefix="repogym-tests-", dir=copies) as holder:
            Path(holder).chmod(0o711)  # the sandbox user goes through to its copy
            tree = Path(holder) / "tree"
            # With network for `setup` only, the hidden tests go in after it (issue 20).
            late = bool(workspace.task.setup and _setup_has_network(runner) and hidden_files)
            given = (hidden_root, [] if late else hidden_files)
            in_container = isinstance(runner, ContainerRunner)
            files = _runfiles.build(workspace, config, tree, given, links=not in_container)
            later = (hidden_root, hidden_files) if late else None
            run, results, problem = _run_and_parse(workspace, config, runner, tree, later)
        return _score(
            workspace,
            config,
            run=run,
            results=results,
            problem=problem,
            hidden=set(hidden_files),
            files=files,
            hidden_changed=self.hidden is None and _hidden_changed(workspace, config),
        )

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


def _setup_has_network(runner: AnyRunner) -> bool:
    return isinstance(runner, ContainerRunner) and runner.network == "setup"


def _run_and_parse(
    workspace: Workspace,
    config: TestsConfig,
    runner: AnyRunner,
    tree: Path,
    later: tuple[Path | None, list[str]] | None = None,
) -> tuple[CommandResult | None, dict[str, TestResult], str | None]:
    """Run setup and the tests in ``tree``; the results by id, or the reason there are
    none. ``later``: hidden tests to put in once setup is done. A program the shell did
    not find is the machine's or the environment's to install (issue 20)."""
    if workspace.task.setup:
        setup = runner.run(
            workspace.task.setup, tree, timeout=config.timeout, writable=[tree], network=True
        )
        _notfound.check_run(runner, setup, "setup")
        if not setup.ok:
            return setup, {}, f"setup command failed ({setup.describe()})"
    if later is not None:
        source, hidden = later
        assert source is not None
        for path in hidden:
            place(tree, path, from_tree=source)
        runner.add(tree, hidden)
    # Next to the copy, in the grader's own directory: the sandbox user's clean-up
    # removes what that user owns at the top of /tmp.
    reports = tree.parent / "junit"
    reports.mkdir()
    junit = reports / "junit.xml"
    command = config.command.replace("{junit}", shlex.quote(str(junit)))
    run = runner.run(
        command, tree, timeout=config.timeout, writable=[tree, reports], collect=[reports]
    )
    _notfound.check_run(runner, run, "tests.command")
    if run.timed_out:
        return run, {}, f"the test command {run.describe()}"
    known = config.fail_to_pass + config.pass_to_pass
    try:
        return run, collect(iter_cases(junit), tree=tree, known_ids=known), None
    except JUnitError as error:
        return run, {}, str(error)


def _score(
    workspace: Workspace,
    config: TestsConfig,
    *,
    run: CommandResult | None,
    results: dict[str, TestResult],
    problem: str | None,
    hidden: set[str],
    files: _runfiles.RunFiles,
    hidden_changed: bool = False,
) -> GradeComponent:
    f2p = {i: _outcome(results, i) for i in config.fail_to_pass}
    p2p = {i: _outcome(results, i) for i in config.pass_to_pass}
    failing = [i for i, o in f2p.items() if o in _FAILING_F2P]
    broken = [i for i, o in p2p.items() if o in _BROKEN_P2P]
    if f2p:
        passing = len(f2p) - len(failing)
        score = passing / len(f2p) if config.partial_credit else float(not failing)
    else:
        score = 1.0
    if broken:
        score = 0.0 if config.require_all_pass_to_pass else score * (1 - len(broken) / len(p2p))
    if problem is None:
        problem = _tampered(run, results)
    if problem is not None:
        score = 0.0
    hidden_ids = sorted(i for i in (*f2p, *p2p) if i.split("::", 1)[0] in hidden)
    details: dict[str, Any] = {
        "fail_to_pass": {i: o.value for i, o in f2p.items()},
        "pass_to_pass": {i: o.value for i, o in p2p.items()},
        "hidden": hidden_ids,
        "flaky": sorted(i for i in (*f2p, *p2p) if i in results and results[i].flaky),
        "restored": files.restored,
        "tests_from": workspace.rubric,
        "changed_on_base": files.changed_on_base,
        "reports_tests": sum(r.outcome is not Outcome.MISSING for r in results.values()),
    }
    if run is not None:
        details["command"] = {
            "command": run.command,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "duration": round(run.duration, 3),
            "output_tail": OUTPUT_NOT_SHOWN if hidden else run.tail(40),
            "output_cut_bytes": run.stdout_cut + run.stderr_cut,
        }
    shown = _shown(results, hidden)
    messages = _messages(
        f2p, p2p, failing, broken, results, set(hidden_ids), problem, run, hidden_ran=bool(hidden)
    )
    messages += _test_hints.missing_hints(f2p, p2p, results, shown, hidden, run)
    passed = problem is None and not failing and not broken
    stale: list[Finding] = []
    if not passed and (files.changed_on_base or hidden_changed):
        advice = _up_to_date(workspace, files.changed_on_base, hidden_changed)
        messages.append(advice)
        stale.append(Finding(title="out of date", message=advice, level="warning"))
    kinds = {"fail_to_pass": (f2p, failing), "pass_to_pass": (p2p, broken)}
    found = _test_findings.findings(workspace, kinds, results, set(hidden_ids), problem, run)
    found = (*stale, *found)
    return GradeComponent(
        name="tests",
        role=workspace.task.tests_role,
        score=score,
        passed=passed,
        details=details,
        messages=messages,
        findings=found + _test_findings.warnings(messages),
    )


def _up_to_date(workspace: Workspace, changed: list[str], hidden: bool) -> str:
    """What to do when the tests the base changed since the fork point may be what
    failed (issue 19): the rubric is the base tip's, whatever the fork point, so an
    out-of-date pull request is brought up to date rather than graded by older tests.
    Hidden tests are not named, nor counted: only that they changed."""
    named = [escape_controls(p) for p in changed[:MAX_NAMED]]
    if len(changed) > MAX_NAMED:
        named.append(f"{len(changed) - MAX_NAMED} more")
    if hidden:
        named.append("the hidden tests")
    return (
        f"the tests changed on {workspace.base_ref} since this change's merge base "
        f"{workspace.base[:12]} ({', '.join(named)}); they ran as they are at {workspace.base_ref} "
        f"({workspace.rubric[:12]}): if they fail for want of its newer code, "
        f"bring the pull request up to date with {workspace.base_ref} (merge or rebase)"
    )


def _outcome(results: dict[str, TestResult], test_id: str) -> Outcome:
    found = results.get(test_id)
    return found.outcome if found else Outcome.MISSING


def _tampered(run: CommandResult | None, results: dict[str, TestResult]) -> str | None:
    """Why the report cannot be this run's, if it cannot: the runner said that tests
    failed, and the report has no failure (issue 9). A coverage threshold that fails
    (pytest-cov, jest) exits with the same code: it belongs outside the test command."""
    if run is None or run.exit_code != TESTS_FAILED or not results:
        return None
    if any(r.outcome in _FAILURES for r in results.values()):
        return None
    return (
        f"the test command exited with code {run.exit_code} (tests failed) but the report "
        "has no failure: the report was altered, or it is not this run's"
    )


def _shown(results: dict[str, TestResult], hidden: set[str]) -> list[str]:
    """The ids of the report that messages may name: not those of hidden tests, nor,
    when hidden tests ran, an id that names no file (Node 20, Go): it may be one of
    theirs. An id that was not counted is no id of the report."""
    return [
        i
        for i, result in results.items()
        if result.outcome is not Outcome.MISSING
        and i.split("::", 1)[0] not in hidden
        and (not hidden or file_of(i) is not None)
    ]


def _messages(
    f2p: dict[str, Outcome],
    p2p: dict[str, Outcome],
    failing: list[str],
    broken: list[str],
    results: dict[str, TestResult],
    hidden: set[str],
    problem: str | None,
    run: CommandResult | None,
    *,
    hidden_ran: bool,
) -> list[str]:
    messages = []
    if problem is not None:
        messages.append(f"score 0: {problem}")
        if run is not None and run.tail():
            messages.append(OUTPUT_NOT_SHOWN if hidden_ran else "output tail:\n" + run.tail())
        return messages
    if f2p:
        messages.append(f"fail_to_pass: {len(f2p) - len(failing)} of {len(f2p)} passed")
        messages += _name_ids("fail_to_pass", failing, f2p, results, hidden)
    if p2p:
        messages.append(f"pass_to_pass: {len(broken)} of {len(p2p)} broken")
        messages += _name_ids("pass_to_pass", broken, p2p, results, hidden)
    if run is not None:
        all_passed = bool(results) and all(r.outcome is Outcome.PASSED for r in results.values())
        any_failed = any(r.outcome in _FAILURES for r in results.values())
        if run.exit_code not in (0, None) and all_passed:
            messages.append(
                f"warning: the test command exited with code {run.exit_code} although every "
                "test in the report passed"
            )
        elif run.exit_code == 0 and any_failed:
            messages.append(
                "warning: the test command exited with code 0 although the report has failures"
            )
    return messages


def _name_ids(
    kind: str,
    ids: list[str],
    outcomes: dict[str, Outcome],
    results: dict[str, TestResult],
    hidden: set[str],
) -> list[str]:
    public = [i for i in ids if i not in hidden]
    lines = []
    for test_id in public[:MAX_NAMED]:
        detail = results[test_id].message if test_id in results else ""
        suffix = f": {escape_controls(detail.splitlines()[0])}" if detail.strip() else ""
        lines.append(f"{kind} {outcomes[test_id].value}: {escape_controls(test_id)}{suffix}")
    if len(public) > MAX_NAMED:
        lines.append(f"{kind}: {len(public) - MAX_NAMED} more not listed")
    hidden_count = len(ids) - len(public)
    if hidden_count:
        lines.append(f"{kind}: {counted(hidden_count, 'hidden test')} not passing")
    return lines
