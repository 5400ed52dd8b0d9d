"""A run of a task's tests in a fresh copy of one side's tree (issue 22).

A run is the spec's steps 1 to 4 ("TestGrader"): the copy written from the snapshot with
what must be the base's in it (:mod:`repogym.graders._runfiles`, for the :class:`Sides`
asked for), the hidden tests put in, ``setup`` then ``tests.command`` run with ``{junit}``
pointing outside the copy, the report read; the copy is then removed. ``times`` runs the
command again in the same copy after one ``setup``, each with a report of its own: how
the base's runs tell a flaky test.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from repogym.container.runner import AnyRunner, ContainerRunner
from repogym.errors import JUnitError
from repogym.graders import _runfiles
from repogym.graders._runfiles import GRADED, RunFiles, Sides
from repogym.junit import Outcome, iter_cases
from repogym.junit.testids import TestResult, collect
from repogym.runner import CommandResult
from repogym.sandbox import notfound as _notfound
from repogym.task import TestsConfig
from repogym.tree import scratch
from repogym.tree.links import place
from repogym.tree.store import copies_dir
from repogym.workspace import Workspace

# The hidden tests of a grade: the directory they are read from, and their files in it.
Hidden = tuple[Path | None, list[str]]
NO_HIDDEN: Hidden = (None, [])


@dataclass(frozen=True, slots=True)
class TestRun:
    """What one run of the test command came to."""

    __test__ = False  # not a pytest test class, despite the name

    files: RunFiles
    run: CommandResult | None  # the test command's (setup's when it failed), None: none ran
    results: Mapping[str, TestResult]  # the report's, by id
    problem: str | None  # why there are no results to read: the grade is 0

    @property
    def ids(self) -> frozenset[str]:
        """The ids the report has a record of."""
        return frozenset(i for i, r in self.results.items() if r.outcome is not Outcome.MISSING)

    def outcome(self, test_id: str) -> Outcome:
        found = self.results.get(test_id)
        return found.outcome if found is not None else Outcome.MISSING


def run_tests(
    workspace: Workspace,
    config: TestsConfig,
    runner: AnyRunner,
    hidden: Hidden = NO_HIDDEN,
    sides: Sides = GRADED,
    *,
    times: int = 1,
) -> tuple[TestRun, ...]:
    """Run the tests ``times`` times in one fresh copy of ``sides`` (one ``setup``)."""
    hidden_root, hidden_files = hidden
    copies = copies_dir(workspace.snapshot().size)
    with scratch.held("repogym-tests-", copies, commands=True) as holder:
        tree = Path(holder) / "tree"
        # With network for `setup` only, the hidden tests go in after it (issue 20).
        late = bool(workspace.task.setup and _setup_has_network(runner) and hidden_files)
        given = (hidden_root, [] if late else hidden_files)
        in_container = isinstance(runner, ContainerRunner)
        files = _runfiles.build(workspace, config, tree, given, links=not in_container, sides=sides)
        failed = _set_up(workspace, config, runner, tree)
        if failed is not None:
            return (TestRun(files, failed, {}, f"setup command failed ({failed.describe()})"),)
        if late:
            for path in hidden_files:
                assert hidden_root is not None
                place(tree, path, from_tree=hidden_root)
            runner.add(tree, hidden_files)
        return tuple(_run_once(config, runner, tree, files, n) for n in range(times))


def _setup_has_network(runner: AnyRunner) -> bool:
    return isinstance(runner, ContainerRunner) and runner.network == "setup"


def _set_up(
    workspace: Workspace, config: TestsConfig, runner: AnyRunner, tree: Path
) -> CommandResult | None:
    """Run ``setup`` in ``tree``; its result when it failed. A program the shell did not
    find is the machine's or the environment's to install (issue 20)."""
    if not workspace.task.setup:
        return None
    setup = runner.run(
        workspace.task.setup, tree, timeout=config.timeout, writable=[tree], network=True
    )
    _notfound.check_run(runner, setup, "setup")
    return None if setup.ok else setup


def _run_once(
    config: TestsConfig, runner: AnyRunner, tree: Path, files: RunFiles, index: int
) -> TestRun:
    """The test command in ``tree``, its report in a directory of its own."""
    # Next to the copy, in the grader's own directory: the sandbox user's clean-up
    # removes what that user owns at the top of /tmp.
    reports = tree.parent / f"junit-{index}"
    reports.mkdir()
    junit = reports / "junit.xml"
    command = config.command.replace("{junit}", shlex.quote(str(junit)))
    run = runner.run(
        command, tree, timeout=config.timeout, writable=[tree, reports], collect=[reports]
    )
    _notfound.check_run(runner, run, "tests.command")
    if run.timed_out:
        return TestRun(files, run, {}, f"the test command {run.describe()}")
    try:
        results = collect(iter_cases(junit), tree=tree, known_ids=config.listed_ids)
    except JUnitError as error:
        return TestRun(files, run, {}, str(error))
    return TestRun(files, run, results, None)
