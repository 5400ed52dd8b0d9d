"""TestGrader: runs the task's tests and scores them by the spec's table.

The four steps, exactly as the spec lists them (spec: "TestGrader", issue 3):

1. restore to the baseline every file a test id names, and every ``conftest.py`` on the
   way from the root to those files (a new one is removed), so a submission cannot rewrite
   the tests or their outcomes;
2. inject the hidden tests at the same relative paths;
3. run ``tests.command`` with ``{junit}`` pointing into a fresh directory outside the tree;
4. parse the JUnit XML, then remove the hidden tests again.

Afterwards the tree holds the submission's files again, byte for byte.
"""

from __future__ import annotations

import difflib
import os
import shlex
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from repogym.errors import JUnitError
from repogym.graders import _test_findings
from repogym.graders.base import Grader
from repogym.graders.swap import TreeSwap
from repogym.junit import Outcome, iter_cases
from repogym.models import GradeComponent, Role
from repogym.runner import CommandResult, Runner
from repogym.task import TestsConfig
from repogym.testids import TestResult, collect
from repogym.workspace import Workspace, files_under

_FAILING_F2P = frozenset(Outcome) - {Outcome.PASSED}
_BROKEN_P2P = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.MISSING})
MAX_NAMED = 20  # failing ids named in messages; the rest are counted


class TestGrader(Grader):
    """Scores ``tests.fail_to_pass`` and ``tests.pass_to_pass`` (an objective when there
    are targets, a gate otherwise). ``hidden`` overrides ``tests.hidden`` with a
    directory from elsewhere; ``runner`` runs the commands."""

    name = "tests"
    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        *,
        role: Role | str | None = None,
        hidden: str | os.PathLike[str] | None = None,
        runner: Runner | None = None,
    ) -> None:
        super().__init__(role=role)
        self.hidden = None if hidden is None else Path(hidden)
        self.runner = runner

    def default_role(self, workspace: Workspace) -> Role:
        return workspace.task.tests_role

    def grade(self, workspace: Workspace) -> GradeComponent:
        config = workspace.task.tests
        if config is None:
            raise ValueError("the task has no `tests` section")
        runner = self.runner or Runner(pass_env=workspace.task.pass_env, set_env=workspace.task.env)
        hidden_root = self._hidden_root(workspace, config)
        hidden_files = files_under(hidden_root) if hidden_root else []
        with TreeSwap(workspace.root) as swap:
            restored = swap.restore_from_baseline(workspace, _guarded_paths(config))
            swap.inject(hidden_root, hidden_files)
            run, results, problem = _run_and_parse(workspace, config, runner)
        return _score(
            workspace,
            config,
            run=run,
            results=results,
            problem=problem,
            hidden=set(hidden_files),
            restored=restored,
        )

    def _hidden_root(self, workspace: Workspace, config: TestsConfig) -> Path | None:
        if self.hidden is not None:
            return self.hidden
        if config.hidden is None:
            return None
        return workspace.baseline / config.hidden


def _guarded_paths(config: TestsConfig) -> list[str]:
    """The test files the ids name, and every conftest.py from the root down to them."""
    paths: set[str] = set()
    for test_file in config.test_files():
        paths.add(test_file)
        parents = PurePosixPath(test_file).parents
        for directory in parents:
            name = "conftest.py" if str(directory) == "." else f"{directory}/conftest.py"
            paths.add(name)
    return sorted(paths)


def _run_and_parse(
    workspace: Workspace, config: TestsConfig, runner: Runner
) -> tuple[CommandResult | None, dict[str, TestResult], str | None]:
    """Run setup and the tests; the results by id, or the reason there are none."""
    if workspace.task.setup:
        setup = runner.run(workspace.task.setup, workspace.root, timeout=config.timeout)
        if not setup.ok:
            return setup, {}, f"setup command failed ({setup.describe()})"
    with tempfile.TemporaryDirectory(prefix="repogym-junit-") as scratch:
        junit = Path(scratch) / "junit.xml"
        command = config.command.replace("{junit}", shlex.quote(str(junit)))
        run = runner.run(command, workspace.root, timeout=config.timeout)
        if run.timed_out:
            return run, {}, f"the test command {run.describe()}"
        known = config.fail_to_pass + config.pass_to_pass
        try:
            return run, collect(iter_cases(junit), tree=workspace.root, known_ids=known), None
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
    restored: list[str],
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
    if problem is not None:
        score = 0.0
    hidden_ids = sorted(i for i in (*f2p, *p2p) if i.split("::", 1)[0] in hidden)
    details: dict[str, Any] = {
        "fail_to_pass": {i: o.value for i, o in f2p.items()},
        "pass_to_pass": {i: o.value for i, o in p2p.items()},
        "hidden": hidden_ids,
        "flaky": sorted(i for i in (*f2p, *p2p) if i in results and results[i].flaky),
        "restored": restored,
        "reports_tests": len(results),
    }
    if run is not None:
        details["command"] = {
            "command": run.command,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "duration": round(run.duration, 3),
            "output_tail": run.tail(40),
            "output_cut_bytes": run.stdout_cut + run.stderr_cut,
        }
    # Ids of the report that may be shown: not those of hidden tests.
    shown = [i for i in results if i.split("::", 1)[0] not in hidden]
    messages = _messages(f2p, p2p, failing, broken, results, set(hidden_ids), problem, run)
    messages += _missing_hints(f2p, p2p, results, shown, hidden)
    kinds = {"fail_to_pass": (f2p, failing), "pass_to_pass": (p2p, broken)}
    found = _test_findings.findings(workspace, kinds, results, set(hidden_ids), problem, run)
    return GradeComponent(
        name="tests",
        role=workspace.task.tests_role,
        score=score,
        passed=problem is None and not failing and not broken,
        details=details,
        messages=messages,
        findings=found + _test_findings.warnings(messages),
    )


def _outcome(results: dict[str, TestResult], test_id: str) -> Outcome:
    found = results.get(test_id)
    return found.outcome if found else Outcome.MISSING


def _messages(
    f2p: dict[str, Outcome],
    p2p: dict[str, Outcome],
    failing: list[str],
    broken: list[str],
    results: dict[str, TestResult],
    hidden: set[str],
    problem: str | None,
    run: CommandResult | None,
) -> list[str]:
    messages = []
    if problem is not None:
        messages.append(f"score 0: {problem}")
        if run is not None and run.tail():
            messages.append("output tail:\n" + run.tail())
        return messages
    if f2p:
        messages.append(f"fail_to_pass: {len(f2p) - len(failing)} of {len(f2p)} passed")
        messages += _name_ids("fail_to_pass", failing, f2p, results, hidden)
    if p2p:
        messages.append(f"pass_to_pass: {len(broken)} of {len(p2p)} broken")
        messages += _name_ids("pass_to_pass", broken, p2p, results, hidden)
    if run is not None:
        all_passed = bool(results) and all(r.outcome is Outcome.PASSED for r in results.values())
        any_failed = any(r.outcome in (Outcome.FAILED, Outcome.ERROR) for r in results.values())
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


def _missing_hints(
    f2p: dict[str, Outcome],
    p2p: dict[str, Outcome],
    results: dict[str, TestResult],
    shown: list[str],
    hidden: set[str],
) -> list[str]:
    """Why task ids may be missing: the closest ids the report has, and what else failed
    (a collection error takes a whole file's tests with it). Hidden tests stay unnamed."""
    missing = [
        i
        for i, o in {**f2p, **p2p}.items()
        if o is Outcome.MISSING and i.split("::", 1)[0] not in hidden
    ]
    if not missing:
        return []
    hints = []
    # A file-level record (a collection error) is no candidate: it is listed below.
    candidates = [i for i in shown if "::" in i and i not in f2p and i not in p2p]
    for test_id in missing[:3]:
        close = difflib.get_close_matches(test_id, candidates, n=1, cutoff=0.6)
        if close:
            hints.append(f"{test_id} is not in the report; the closest id there is {close[0]}")
    others = [
        i
        for i in shown
        if i not in f2p and i not in p2p and results[i].outcome in (Outcome.FAILED, Outcome.ERROR)
    ]
    for test_id in others[:3]:
        first = results[test_id].message.splitlines()[0] if results[test_id].message else ""
        hints.append(f"the report also has {test_id}: {results[test_id].outcome.value} {first}")
    if not results:
        hints.append("the report has no testcase at all")
    return hints


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
        suffix = f": {detail.splitlines()[0]}" if detail.strip() else ""
        lines.append(f"{kind} {outcomes[test_id].value}: {test_id}{suffix}")
    if len(public) > MAX_NAMED:
        lines.append(f"{kind}: {len(public) - MAX_NAMED} more not listed")
    hidden_count = len(ids) - len(public)
    if hidden_count:
        plural = "s" if hidden_count != 1 else ""
        lines.append(f"{kind}: {hidden_count} hidden test{plural} not passing")
    return lines
