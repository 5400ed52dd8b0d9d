"""A run of a task's tests in a fresh copy of one side's tree (issue 22).

A run is the spec's steps 1 to 4 ("TestGrader"): the copy written from the snapshot with
what must be the base's in it (:mod:`repogym.graders.tests.runfiles`, for the :class:`Sides`
asked for), ``setup`` run in it (and checked not to have written what must be the
grader's: issue 44), the hidden tests put in, ``tests.command`` run with ``{junit}``
pointing outside the copy (pytest started with the base's configuration:
:mod:`repogym.graders.tests.pytest_start`), the report read; the copy is then removed.
``times`` runs the command again in the same copy after one ``setup``, each with a report
of its own: how the base's runs tell a flaky test.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from repogym.errors import JUnitError
from repogym.graders.tests import chosen as _chosen
from repogym.graders.tests import pytest_start as _pytest_start
from repogym.graders.tests import python_start as _python_start
from repogym.graders.tests import runfiles as _runfiles
from repogym.graders.tests.runfiles import GRADED, RunFiles, Sides
from repogym.junit import Outcome, iter_cases
from repogym.junit.testids import TestResult, collect
from repogym.models import CommandResult
from repogym.run.protocol import CommandRunner
from repogym.sandbox import scratch
from repogym.shown import counted
from repogym.task import TestsConfig, runs_pytest, runs_unittest
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
    runner: CommandRunner,
    hidden: Hidden = NO_HIDDEN,
    sides: Sides = GRADED,
    *,
    times: int = 1,
    select: tuple[str, ...] = (),
    reselect: Callable[[tuple[TestRun, ...]], tuple[str, ...]] | None = None,
) -> tuple[TestRun, ...]:
    """Run the tests up to ``times`` times in one fresh copy of ``sides`` (one ``setup``);
    ``select``: only these ids (a rerun, issue 47: see :func:`can_select`); ``reselect``,
    told the runs so far, the ids the next run runs: none left ends the runs."""
    hidden_root, hidden_files = hidden
    copies = copies_dir(workspace.snapshot().size)
    with scratch.held("repogym-tests-", copies, commands=True) as holder:
        tree = Path(holder) / "tree"
        links = runner.links_dependencies
        files = _runfiles.build(workspace, config, tree, links=links, sides=sides)
        problem = _set_up(workspace, config, runner, tree, files)
        if problem is not None:
            failed = (TestRun(files, *problem),)
            if reselect is not None:
                reselect(failed)
            return failed
        # The hidden tests go in after `setup`, which is the submission's code (issue 44);
        # in place of what is there, a link on the way included: root copies them, and a
        # committed `tests/hidden -> /elsewhere` sent them outside the copy; read without
        # following a link of the hidden directory either, which would bring into the
        # copy what it names (issue 19).
        for path in hidden_files:
            assert hidden_root is not None
            place(tree, path, from_tree=hidden_root)
        runner.add(tree, hidden_files)
        files = _with_hidden(files, hidden)
        runs: list[TestRun] = []
        for n in range(times):
            runs.append(_run_once(config, runner, tree, files, n, select))
            if reselect is not None:
                select = reselect(tuple(runs))
                if not select:
                    break
        return tuple(runs)


def _with_hidden(files: RunFiles, hidden: Hidden) -> RunFiles:
    """``files`` with the hidden tests among the files written (their blob ids)."""
    root, paths = hidden
    if not paths:
        return files
    assert root is not None
    written = dict(files.written)
    for path in paths:
        data = (root / path).read_bytes()
        header = b"blob %d\0" % len(data)
        written[path] = hashlib.new(files.object_format, header + data).hexdigest()
    return replace(files, written=written)


def _set_up(
    workspace: Workspace, config: TestsConfig, runner: CommandRunner, tree: Path, files: RunFiles
) -> tuple[CommandResult, dict[str, TestResult], str] | None:
    """Run ``setup`` in ``tree``; what the run came to when it failed or wrote one of the
    files that must be the grader's. A program the shell did not find is the machine's
    or the environment's to install (issue 20).

    Where the commands see the tree itself, the files are checked; in a container, the
    grader's are copied in again over whatever setup made of them (the pytest guard
    checks those pytest reads)."""
    if not workspace.task.setup:
        return None
    setup = runner.run(
        workspace.task.setup, tree, timeout=config.timeout, writable=[tree], network=True
    )
    runner.found(setup, "setup")
    if not setup.ok:
        return setup, {}, f"setup command failed ({setup.describe()})"
    if not runner.writes_in_place:  # what setup wrote is in the copy: put ours back
        runner.add(tree, [p for p, blob in files.guarded.items() if blob is not None])
        return None
    wrote = _runfiles.setup_wrote(tree, files)
    if wrote:
        shown = ", ".join(wrote[:5]) + (f" and {len(wrote) - 5} more" if len(wrote) > 5 else "")
        return (
            setup,
            {},
            (
                f"setup wrote {shown}, which must be the grader's (the task's tests and the "
                "runner's configuration): a setup command may not write them"
            ),
        )
    return None


def can_select(config: TestsConfig) -> bool:
    """Whether a run can be made of chosen ids: the task says how (``rerun_command``), the
    runner is pytest or unittest, which the grader's start-up cuts to them, or one whose
    command the grader knows how to filter (:mod:`repogym.graders.tests.chosen`)."""
    command = config.command
    if config.rerun_command is not None or runs_pytest(command) or runs_unittest(command):
        return True
    return _chosen.rule(command) is not None


def _narrowed(config: TestsConfig, select: tuple[str, ...], junit: str) -> tuple[str, str]:
    """The command a run runs (with ``select``, narrowed to those ids: the task's
    ``rerun_command``, or the runner's filter by name) and the one the log and the report
    show: the task's own, with the number of ids a rerun chose but not their names, which
    may be hidden tests' (issue 47). ``{junit}`` is put in first, so that an id that
    holds it stays an id."""
    template = config.command.replace("{junit}", junit)
    if not select:
        return template, template
    note = f"  # run again: {counted(len(select), 'chosen test')}"
    if config.rerun_command is not None:
        rerun = config.rerun_command.replace("{junit}", junit)
        return rerun.replace("{ids}", " ".join(shlex.quote(i) for i in select)), rerun + note
    filtered = None
    if not (runs_pytest(template) or runs_unittest(template)):
        filtered = _chosen.rule(template)
    return (template if filtered is None else filtered(template, select)), template + note


def _run_once(
    config: TestsConfig,
    runner: CommandRunner,
    tree: Path,
    files: RunFiles,
    index: int,
    select: tuple[str, ...] = (),
) -> TestRun:
    """The test command in ``tree``, its report in a directory of its own; with
    ``select``, the rerun command or the guard told to keep those ids."""
    # Next to the copy, in the grader's own directory: the sandbox user's clean-up
    # removes what that user owns at the top of /tmp.
    reports = tree.parent / f"junit-{index}"
    reports.mkdir()
    junit = reports / "junit.xml"
    template, shown = _narrowed(config, select, shlex.quote(str(junit)))
    command, start = template, []
    if runs_pytest(template):
        site, command = _pytest_start.prepare(
            template,
            tree,
            reports,
            files.written,
            config=files.pytest.path,
            plugins=files.pytest.plugins,
            object_format=files.object_format,
            select=select,
        )
        start = [site]
    elif runs_unittest(template):
        site, command = _python_start.prepare(template, tree, reports, "unittest", select)
        start = [site]
    run = runner.run(
        command,
        tree,
        timeout=config.timeout,
        writable=[tree, reports],
        collect=[reports],
        shown=shown,
        readable=start,
    )
    runner.found(run, "tests.command")
    refused = _pytest_start.refusal(reports)
    if refused is not None:
        return TestRun(files, run, {}, refused)
    if run.timed_out:
        return TestRun(files, run, {}, f"the test command {run.describe()}")
    try:
        results = collect(iter_cases(junit), tree=tree, known_ids=config.listed_ids)
    except JUnitError as error:
        return TestRun(files, run, {}, str(error))
    return TestRun(files, run, results, None)
