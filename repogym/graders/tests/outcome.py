"""What one run of a task's tests came to, as the TestGrader reads it: each task id's
outcome, those that count against the score, which ids are hidden tests' and which of the
report's a message may name. The grade's score, details, messages and findings are read
from this one value (repogym.graders.tests.grader, _test_hints, _test_findings)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from repogym.graders.tests.reruns import Reruns
from repogym.graders.tests.runfiles import RunFiles
from repogym.graders.tests.tamper import tampered
from repogym.graders.tests.versus_base import AgainstBase
from repogym.junit import Outcome
from repogym.junit.testids import TestResult, file_of
from repogym.models import CommandResult, Role
from repogym.task import TestsConfig
from repogym.workspace import Workspace

_FAILING_F2P = frozenset(Outcome) - {Outcome.PASSED}
# A regression test that the submission makes skip is not kept (issue 9): anything but a
# pass breaks it, as for a target.
_BROKEN_P2P = _FAILING_F2P

# Each kind of task test (``fail_to_pass``, ``pass_to_pass``): its outcomes and its ids
# that count against the score.
Kinds = Mapping[str, tuple[Mapping[str, Outcome], tuple[str, ...]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TestsOutcome:
    """One run of the tests, as :meth:`of` reads it, with what the grade names of the
    workspace (the task's setup and role, the base and the commit whose tests ran)."""

    __test__ = False  # not a pytest test class, despite the name

    fail_to_pass: Mapping[str, Outcome]  # every target's outcome, in the task's order
    pass_to_pass: Mapping[str, Outcome]
    failing: tuple[str, ...]  # the targets that did not pass
    broken: tuple[str, ...]  # the regression tests that did not pass
    results: Mapping[str, TestResult]  # the report's, by id
    run: CommandResult | None  # the test command's (setup's when it failed), None: none ran
    problem: str | None  # why the report is not read or not trusted: the score is 0
    hidden_files: frozenset[str]  # the hidden tests put in the copy
    hidden_ids: frozenset[str]  # the ids of hidden tests among these: never named, only counted
    listed_hidden: frozenset[str]  # those the task lists (its file names them anyway)
    shown: tuple[str, ...]  # the report's ids that messages may name
    files: RunFiles
    hidden_changed: bool  # whether the base changed tests.hidden since the merge base
    partial_credit: bool
    require_all_pass_to_pass: bool
    role: Role
    setup: str | None  # the task's setup command
    base_ref: str
    merge_base: str
    tests_from: str  # the commit whose tests ran: the base tip (issue 19)
    # The base's runs read against the submission's (issue 22), when the task runs them.
    against: AgainstBase | None = None
    # The failing tests run again (issue 47), when any failed and the runner can be told.
    reruns: Reruns | None = None
    quarantined: Mapping[str, str] = field(default_factory=dict)  # id: the entry's reason
    expired: tuple[str, ...] = ()  # the quarantine entries past their date, said

    def settled(
        self, reruns: Reruns | None, config: TestsConfig, today: datetime.date
    ) -> TestsOutcome:
        """This outcome once the failing tests ran again and the quarantine is read (issue
        47): a test whose failure does not count (flaky before the change, already broken,
        a target that passed when run again, one in quarantine) is no longer failing or
        broken; its outcome stays as the first run had it."""
        # The quarantine is the base's: it names the base's tests, never one the pull
        # request adds (with `added`, a failing test it writes under a quarantined glob
        # would otherwise be a target that need not pass).
        owned = (*(() if config.added else self.fail_to_pass), *self.pass_to_pass)
        quarantined = {
            i: entry.reason for i in owned if (entry := config.quarantined(i, today)) is not None
        }
        forgiven = set(quarantined) | (reruns.forgiven(config) if reruns else set())
        against = self.against
        if against is not None:  # with `baseline`: a forgiven test is no regression test
            kept = {i: o for i, o in against.regressions.items() if i not in forgiven}
            against = replace(against, regressions=kept)
        return replace(
            self,
            against=against,
            failing=tuple(i for i in self.failing if i not in forgiven),
            broken=tuple(i for i in self.broken if i not in forgiven),
            reruns=reruns,
            quarantined=quarantined,
            expired=config.expired(today),
        )

    @classmethod
    def of(
        cls,
        workspace: Workspace,
        config: TestsConfig,
        *,
        run: CommandResult | None,
        results: Mapping[str, TestResult],
        problem: str | None,
        hidden: set[str],
        files: RunFiles,
        hidden_changed: bool = False,
        against: AgainstBase | None = None,
    ) -> TestsOutcome:
        """The outcome of a run: ``hidden`` holds the hidden tests' files, ``problem`` why
        there are no results; a report the run's exit code contradicts is one too.
        ``against``: the base's runs, whose targets and regression tests stand for the
        keywords ``added`` and ``baseline``."""
        f2p = {i: _outcome(results, i) for i in config.target_ids}
        p2p = {i: _outcome(results, i) for i in config.regression_ids}
        if against is not None:
            f2p = dict(against.targets) if config.added else f2p
            p2p = dict(against.regressions) if config.baseline else p2p
            results = {**results, **against.head_results}
        hidden_ids = _hidden_ids((*f2p, *p2p), hidden, found=against is not None)
        return cls(
            fail_to_pass=f2p,
            pass_to_pass=p2p,
            failing=tuple(i for i, o in f2p.items() if o in _FAILING_F2P),
            broken=tuple(i for i, o in p2p.items() if o in _BROKEN_P2P),
            results=results,
            run=run,
            problem=tampered(run, results) if problem is None else problem,
            hidden_files=frozenset(hidden),
            hidden_ids=hidden_ids,
            listed_hidden=hidden_ids & set(config.listed_ids),
            shown=_shown(results, hidden),
            files=files,
            hidden_changed=hidden_changed,
            partial_credit=config.partial_credit,
            require_all_pass_to_pass=config.require_all_pass_to_pass,
            role=workspace.task.tests_role,
            setup=workspace.task.setup,
            base_ref=workspace.base_ref,
            merge_base=workspace.base,
            tests_from=workspace.rubric,
            against=against,
        )

    @property
    def hidden_ran(self) -> bool:
        return bool(self.hidden_files)

    @property
    def no_targets(self) -> bool:
        """``fail_to_pass: added`` and no added test fails without the change: nothing
        shows what it fixes, and the objective scores 0 (issue 22)."""
        return self.against is not None and self.against.added and not self.fail_to_pass

    @property
    def passed(self) -> bool:
        return self.problem is None and not self.failing and not self.broken and not self.no_targets

    @property
    def kinds(self) -> Kinds:
        return {
            "fail_to_pass": (self.fail_to_pass, self.failing),
            "pass_to_pass": (self.pass_to_pass, self.broken),
        }

    def is_task_id(self, test_id: str) -> bool:
        return test_id in self.fail_to_pass or test_id in self.pass_to_pass


def _outcome(results: Mapping[str, TestResult], test_id: str) -> Outcome:
    found = results.get(test_id)
    return found.outcome if found else Outcome.MISSING


def _hidden_ids(ids: tuple[str, ...], hidden: set[str], *, found: bool) -> frozenset[str]:
    """The ids of hidden tests, never named. Ids the task lists are known; of ids found
    by a run (``found``: the base's, issue 22), one that names no file may be one of
    theirs too when hidden tests ran (as :func:`_shown` says)."""
    return frozenset(
        i for i in ids if i.split("::", 1)[0] in hidden or (found and hidden and file_of(i) is None)
    )


def _shown(results: Mapping[str, TestResult], hidden: set[str]) -> tuple[str, ...]:
    """The ids of the report that messages may name: not those of hidden tests, nor,
    when hidden tests ran, an id that names no file (Node 20, Go): it may be one of
    theirs. An id that was not counted is no id of the report."""
    return tuple(
        i
        for i, result in results.items()
        if result.outcome is not Outcome.MISSING
        and i.split("::", 1)[0] not in hidden
        and (not hidden or file_of(i) is not None)
    )
