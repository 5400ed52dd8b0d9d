"""A flaky test is not a regression (issue 47): every test that fails or errors at the head
is run again, alone with the other failing ids, up to ``tests.reruns`` times at the head,
and at the base, and is then one of:

- **broken** by the change: fails at the head every run, passes at the base every run;
- **made flaky** by the change: passes and fails at the head, passes at the base every run;
- **flaky** before the change: passes and fails at the base too;
- **already broken**: fails at the base every run.

A target is a target: it must pass at the head, on its first run or on a rerun; one that
passes only on a rerun *passed on rerun*, and is shown as flaky. What each class costs:
broken always counts, made flaky unless ``tests.flaky.made`` is ``ignore``, flaky before
only when ``tests.flaky.before`` is ``fail``; already broken counts as it did (a listed
``pass_to_pass`` must pass: ``repogym validate`` names one that fails at the base, and
with ``baseline`` a test failing at the base is no regression test in the first place).
Only the failing ids run again, never the suite: the runs cost nothing when every test
passes.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from repogym.graders.tests.base_runs import BASE, HEADS_TESTS, BaseRuns
from repogym.graders.tests.run import Hidden, TestRun, can_select, run_tests
from repogym.graders.tests.runfiles import GRADED, Sides
from repogym.graders.tests.tamper import tampered
from repogym.junit import Outcome
from repogym.run.protocol import CommandRunner
from repogym.shown import counted
from repogym.task import TestsConfig
from repogym.workspace import Workspace

BROKEN = "broken"
MADE_FLAKY = "made_flaky"
FLAKY = "flaky"
ALREADY_BROKEN = "already_broken"
PASSED_ON_RERUN = "passed_on_rerun"
FAILING = "failing"  # a target that failed on every run
RERUN = frozenset({Outcome.FAILED, Outcome.ERROR})  # what is run again
SEEN_BOTH = frozenset({MADE_FLAKY, FLAKY, PASSED_ON_RERUN})  # both passed and failed
# How a message says each class, in the order messages list them.
SAID = {
    BROKEN: "broken by the change",
    MADE_FLAKY: "made flaky by the change",
    FLAKY: "flaky before the change",
    ALREADY_BROKEN: "already broken at the base",
    PASSED_ON_RERUN: "passed only when run again",
    FAILING: "failed every run",
}


@dataclass(frozen=True, slots=True)
class Rerun:
    """One failing test's runs: ``head`` its first outcome, then its reruns' at the head;
    ``base`` the base's runs of it and its reruns there (none for a target)."""

    target: bool
    head: tuple[Outcome, ...]
    base: tuple[Outcome, ...]

    @property
    def kind(self) -> str:
        """Its class. At the base only a pass or a failure is evidence: a run that did not
        record the test (not selected, skipped, no report) says nothing, so that a test the
        rerun could not reach stays as its first run had it, never forgiven."""
        passed_at_head = Outcome.PASSED in self.head
        if self.target:
            return PASSED_ON_RERUN if passed_at_head else FAILING
        seen = [o for o in self.base if o is Outcome.PASSED or o in RERUN]
        if seen and all(o in RERUN for o in seen):
            return ALREADY_BROKEN
        if _both_seen(tuple(seen)):
            return FLAKY
        return MADE_FLAKY if passed_at_head else BROKEN

    def said(self) -> str:
        """``head 1/3 passed, base 3/3``."""
        head = f"head {self.head.count(Outcome.PASSED)}/{len(self.head)} passed"
        if not self.base:
            return head
        return f"{head}, base {self.base.count(Outcome.PASSED)}/{len(self.base)}"


@dataclass(frozen=True, slots=True)
class Reruns:
    """What running the failing tests again found, by id."""

    tests: Mapping[str, Rerun]

    def counts(self, config: TestsConfig, kind: str) -> bool:
        """Whether a test of ``kind`` counts against the score."""
        flaky = config.flaky
        return kind in (BROKEN, FAILING, ALREADY_BROKEN) or (
            (kind == MADE_FLAKY and flaky.made == "fail")
            or (kind == FLAKY and flaky.before == "fail")
        )

    def forgiven(self, config: TestsConfig) -> frozenset[str]:
        """The ids whose failure does not count, after their reruns."""
        return frozenset(i for i, r in self.tests.items() if not self.counts(config, r.kind))

    def details(self, hidden: frozenset[str]) -> dict[str, Any]:
        """The report's ``reruns``: each public id's class and runs; hidden ones counted."""
        shown = {
            i: {"class": r.kind, "runs": r.said()} for i, r in self.tests.items() if i not in hidden
        }
        kinds = Counter(r.kind for i, r in self.tests.items() if i in hidden)
        return {"tests": shown, "hidden": dict(kinds)}

    def message(self) -> str | None:
        """One line counting each class, for the component's messages."""
        kinds = [r.kind for r in self.tests.values()]
        parts = [f"{kinds.count(k)} {SAID[k]}" for k in SAID if k in kinds]
        if not parts:
            return None
        runs = counted(len(kinds), "failing test")
        return f"run again: {runs}: " + ", ".join(parts)


def rerun(
    workspace: Workspace,
    config: TestsConfig,
    runner: CommandRunner,
    hidden: Hidden,
    *,
    targets: Mapping[str, Outcome],
    regressions: Mapping[str, Outcome],
    base: BaseRuns | None,
) -> Reruns | None:
    """The failing ``targets`` and ``regressions`` run again (None when nothing failed,
    reruns are off, or the runner cannot be told which ids to run: see
    :func:`repogym.graders.tests.run.can_select`).

    Each test runs until its class is decided: at the head until it passes once, its
    first run and ``tests.reruns`` more at most; at the base (regressions only) until it
    has both passed and failed there, ``tests.reruns`` runs at most, the base's runs of
    the grade counted among them (with ``baseline``, its two runs are those)."""
    failing_targets = tuple(i for i, o in targets.items() if o in RERUN)
    failing = tuple(i for i, o in regressions.items() if o in RERUN)
    if config.reruns == 0 or not (failing_targets or failing) or not can_select(config):
        return None
    run = functools.partial(_outcomes, workspace, config, runner, hidden)
    first = {**targets, **regressions}
    at_head: dict[str, tuple[Outcome, ...]] = {i: (first[i],) for i in failing_targets + failing}
    head = 1 + config.reruns
    if config.added:  # the added targets ran with the submission's own tests
        run(HEADS_TESTS, at_head, failing_targets, _passed_once, head)
        run(GRADED, at_head, failing, _passed_once, head)
    else:  # one copy for both
        run(GRADED, at_head, failing_targets + failing, _passed_once, head)
    at_base = _at_base(base, failing)
    run(BASE, at_base, failing, _both_seen, config.reruns)
    tests = {i: Rerun(True, at_head[i], ()) for i in failing_targets}
    for i in failing:
        tests[i] = Rerun(False, at_head[i], at_base[i])
    return Reruns(tests)


def _passed_once(outcomes: tuple[Outcome, ...]) -> bool:
    return Outcome.PASSED in outcomes


def _both_seen(outcomes: tuple[Outcome, ...]) -> bool:
    return Outcome.PASSED in outcomes and any(o in RERUN for o in outcomes)


def _at_base(base: BaseRuns | None, ids: tuple[str, ...]) -> dict[str, tuple[Outcome, ...]]:
    """What the base's runs of the grade (with ``added`` or ``baseline``) say of ``ids``;
    nothing where the grade ran no base."""
    return {i: tuple(run.outcome(i) for run in base.runs) if base else () for i in ids}


def _outcomes(
    workspace: Workspace,
    config: TestsConfig,
    runner: CommandRunner,
    hidden: Hidden,
    sides: Sides,
    outcomes: dict[str, tuple[Outcome, ...]],
    ids: tuple[str, ...],
    decided: Callable[[tuple[Outcome, ...]], bool],
    limit: int,
) -> None:
    """Run ``ids`` again in ``sides``, adding each run's outcome of each to ``outcomes``,
    until each is ``decided`` or has ``limit`` outcomes; a run that came to no results
    says nothing of them (each counts as it failed: the test did not pass)."""

    def undecided() -> tuple[str, ...]:
        return tuple(i for i in ids if not decided(outcomes[i]) and len(outcomes[i]) < limit)

    chosen = undecided()
    if not chosen:
        return

    def reselect(runs: tuple[TestRun, ...]) -> tuple[str, ...]:
        nonlocal chosen
        readable = _readable(runs[-1])
        for i in chosen:
            outcomes[i] = (*outcomes[i], runs[-1].outcome(i) if readable else Outcome.MISSING)
        chosen = undecided()
        return chosen

    times = limit - min(len(outcomes[i]) for i in chosen)
    run_tests(
        workspace, config, runner, hidden, sides, times=times, select=chosen, reselect=reselect
    )


def _readable(run: TestRun) -> bool:
    """Whether a rerun's report says anything of its tests: not when it cannot be read or
    cannot be this run's (the runner said tests failed and the report has none failing: a
    report rewritten once the code knew it was a rerun). A test of an unreadable run is
    MISSING: at the head no pass, at the base no evidence."""
    return run.problem is None and tampered(run.run, run.results) is None
