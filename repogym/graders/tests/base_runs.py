"""The base's own runs of the tests (issue 22): what passes before the submission.

With ``pass_to_pass: baseline`` every test that passes at the base is a regression test,
and with ``fail_to_pass: added`` a test the submission adds is one the base does not
have: both need the base's run of the tests. It is a run of the base tip (its code and
its tests: :data:`BASE`), the commit the task was read at, made in the same kind of copy
and environment as the submission's. Not of the merge base: its author picks it by
choosing where to branch from, and a test that fails on an old fork's code would not be
a regression test, nor would a fix the base already has be the pull request's.

**Two runs** with ``baseline``, one ``setup`` then the command twice, each with a report
of its own: a test whose outcome differs between them, or that the runner reran, is
flaky and no regression test (the report lists it). Two is the fewest that can show a
difference; each more costs a whole run of the suite on every new base, and a test that
fails one run in ten still slips through three. ``added`` alone needs the ids, not the
outcomes: one run.

**Once per machine** for a given base tip, task, hidden tests and environment where no
command runs as the grader's user (:mod:`repogym.graders.tests.machine_cache`), else once
per process (:mod:`repogym.tree.baselines`): RepoEnv's episodes and a batch's grades of
one base, on any of its workers, reuse it. Runs that came to no results
(a timeout, a failed setup) are not kept: the next grade runs the base again.

**Before the submission's runs, never beside them**: the submission's code must not be
running while the base's tests run (it could hold the port a test binds, fill ``/tmp``),
or they would find fewer regression tests, and keep that for every later grade.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from repogym.graders.tests.machine_cache import node_shared
from repogym.graders.tests.run import Hidden, TestRun, run_tests
from repogym.graders.tests.runfiles import Sides, dependencies_state
from repogym.junit import Outcome
from repogym.run.protocol import CommandRunner
from repogym.task import TestsConfig
from repogym.tree import baselines as _baselines
from repogym.workspace import Workspace

BASE = Sides(code="base", tests="base")
HEADS_TESTS = Sides(code="head", tests="head")  # the submission's tests on its own code
ON_BASE_CODE = Sides(code="base", tests="head")  # the submission's tests without its code
FLAKY_RUNS = 2  # the base's runs with `baseline`: the fewest that show a flaky test


@dataclass(frozen=True, slots=True)
class BaseRuns:
    """The base's runs of one task, in order."""

    runs: tuple[TestRun, ...]

    @property
    def problem(self) -> str | None:
        """Why the base has no results to compare with, if it has none."""
        return next((r.problem for r in self.runs if r.problem is not None), None)

    @property
    def ids(self) -> frozenset[str]:
        """Every id some run of the base has a record of."""
        return frozenset().union(*(run.ids for run in self.runs))

    @property
    def flaky(self) -> frozenset[str]:
        """The ids whose outcome differs between the runs, or that a runner reran."""
        changed = {i for i in self.ids if len({run.outcome(i) for run in self.runs}) > 1}
        rerun = {i for run in self.runs for i, r in run.results.items() if r.flaky}
        return frozenset(changed | rerun)

    @property
    def passing(self) -> frozenset[str]:
        """The ids that passed in every run and are not flaky."""
        flaky = self.flaky
        return frozenset(
            i
            for i in self.ids
            if i not in flaky and all(run.outcome(i) is Outcome.PASSED for run in self.runs)
        )


def base_runs(
    workspace: Workspace, config: TestsConfig, runner: CommandRunner, hidden: Hidden
) -> BaseRuns:
    """The base's runs for this grade, made once per process (see the module)."""
    times = FLAKY_RUNS if config.baseline else 1
    key = _baselines.Key(
        kind="base-tests",
        commit=workspace.rubric,
        depends_on=(
            workspace.task.digest,
            _hidden_digest(hidden),
            _environment(runner),
            str(times),
            # The dependency directories a run links from the work tree: an earlier
            # grade's must not decide this one's (in a container, the image's are used).
            dependencies_state(workspace.root) if runner.links_dependencies else "",
        ),
    )

    def make() -> BaseRuns:
        return BaseRuns(run_tests(workspace, config, runner, hidden, BASE, times=times))

    if not workspace.shared:
        return make()
    runs = node_shared(
        key,
        make,
        keep=lambda made: made.problem is None,
        # Out of every command's reach only when none runs as this process's user.
        safe=runner.switches_user(),
    )
    if runs.problem is not None:
        _baselines.drop(key)  # perhaps the machine's passing trouble: try again next time
    return runs


def _hidden_digest(hidden: Hidden) -> str:
    """The hidden tests' identity: their paths and contents."""
    root, files = hidden
    digest = hashlib.sha256()
    for path in files:
        assert root is not None
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256((root / path).read_bytes()).digest())
    return digest.hexdigest()


def _environment(runner: CommandRunner) -> str:
    """Where the commands run and with what variables: the image, or the host."""
    variables = sorted(runner.environment().items())
    return hashlib.sha256(repr((runner.where, variables)).encode()).hexdigest()
