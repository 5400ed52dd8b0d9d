"""What the base's runs make of the submission's (issue 22): the regression tests and how
each came out, the tests the submission adds and whether they fail without it.

- **Regressions** (``pass_to_pass: baseline``): every test that passed in each of the
  base's runs, not flaky, and not a target, is a regression test; at the head it is
  *broken* (failed or errored), *removed* (no record of it) or *newly skipped*, all three
  counted as a broken ``pass_to_pass`` is. The head's run for them is the graded one:
  the submission's code with the base's test files.
- **Added tests** (``fail_to_pass: added``): the ids of the run of the submission's own
  test files (``tests.paths``) on its code that the base's run does not have, in the test
  files it changed. Each is run on the base tip's code too, with the same test files: one
  that fails there, or errors, or whose file fails to load there (its import of what the
  change adds) is a target, and must pass at the head; one that passes there proves
  nothing, one skipped or not collected there neither, and none of these counts.
- **New tests**: the ids of the head's tests that the base does not have, counted,
  passing or not: information.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from repogym.graders.tests.base_runs import BaseRuns
from repogym.graders.tests.run import TestRun
from repogym.junit import Outcome
from repogym.junit.testids import TestResult, escape_controls, file_of
from repogym.models import MAX_NAMED
from repogym.shown import counted
from repogym.task import TestsConfig
from repogym.tree.globs import compile_globs

# How a regression test came out at the head, in the words of the report (details keys).
REGRESSION_KINDS = {
    Outcome.FAILED: "broken",
    Outcome.ERROR: "broken",
    Outcome.MISSING: "removed",
    Outcome.SKIPPED: "newly_skipped",
}
_PROVEN = frozenset({Outcome.FAILED, Outcome.ERROR})  # at the base


@dataclass(frozen=True, slots=True, kw_only=True)
class AgainstBase:
    """The submission's runs read against the base's."""

    base: BaseRuns
    regressions: Mapping[str, Outcome]  # each regression test's outcome at the head
    new: Mapping[str, Outcome]  # the head's tests the base does not have, at the head
    added: bool  # whether the targets are the added tests
    targets: Mapping[str, Outcome]  # the added tests that fail at the base, at the head
    passes_at_base: tuple[str, ...]  # added tests that pass without the change
    skipped_at_base: tuple[str, ...]
    head_results: Mapping[str, TestResult]  # the head's tests' records of the targets
    test_files: tuple[str, ...]  # the test files the submission changed

    @classmethod
    def of(
        cls,
        config: TestsConfig,
        base: BaseRuns,
        graded: TestRun,
        heads: TestRun | None,
        without: TestRun | None,
        test_files: tuple[str, ...],
    ) -> AgainstBase:
        """``graded``: the submission's code with the base's tests; ``heads``: with its
        own tests (None: it changed none); ``without``: its tests on the base's code."""
        at_head = heads if heads is not None else graded
        new = _new_ids(config, base, at_head)
        added = _added(config, new, heads, test_files)
        on_base = {i: _on_base(without, i) for i in added}
        targets = {i: at_head.outcome(i) for i in added if on_base[i] in _PROVEN}
        return cls(
            base=base,
            regressions=_regressions(config, base, graded, excluded={*added}),
            new={i: at_head.outcome(i) for i in new},
            added=config.added,
            targets=targets,
            passes_at_base=_at_base(on_base, Outcome.PASSED),
            skipped_at_base=_at_base(on_base, Outcome.SKIPPED, Outcome.MISSING),
            head_results={i: at_head.results[i] for i in targets if i in at_head.results},
            test_files=test_files,
        )

    def regressions_as(self, kind: str) -> tuple[str, ...]:
        """The regression tests that came out as ``kind`` (a value of REGRESSION_KINDS)."""
        return tuple(i for i, o in self.regressions.items() if REGRESSION_KINDS.get(o) == kind)

    def details(self, named: bool) -> dict[str, Any]:
        """The report's ``baseline`` details: counts, and the ids when ``named`` (no
        hidden test ran: their ids are never shown)."""
        kinds = ("broken", "removed", "newly_skipped")
        found = {kind: self.regressions_as(kind) for kind in kinds}
        flaky = sorted(self.base.flaky)
        lists: dict[str, Any] = {
            **found,
            "flaky": flaky,
            "new": sorted(self.new),
            "passes_at_base": list(self.passes_at_base),
            "skipped_at_base": list(self.skipped_at_base),
        }
        counts = {key: len(ids) for key, ids in lists.items()}
        counts["new_passing"] = sum(o is Outcome.PASSED for o in self.new.values())
        counts["regression_tests"] = len(self.regressions)
        counts["targets"] = len(self.targets)
        return {
            "runs": len(self.base.runs),
            "counts": counts,
            "named": named,
            **({key: list(ids) for key, ids in lists.items()} if named else {}),
            "test_files_changed": list(self.test_files),
        }

    def messages(self, named: bool) -> list[str]:
        """What the comment says of the comparison: regressions by kind, the added tests
        that prove nothing, flaky tests left out, new tests counted."""
        lines = []
        if self.regressions:
            lines.append(self._regression_line())
        if self.added:
            lines += self._added_lines(named)
        flaky = sorted(self.base.flaky)
        if flaky:
            lines.append(
                f"flaky at the base (outcomes differ over {counted(len(self.base.runs), 'run')}"
                f", or rerun), not regression tests: {_listed(flaky, named)}"
            )
        if self.new:
            passing = sum(o is Outcome.PASSED for o in self.new.values())
            lines.append(
                f"new tests at the head: {len(self.new)} ({passing} passing)"
                + (f": {_listed(sorted(self.new), named)}" if named else "")
            )
        return lines

    def _regression_line(self) -> str:
        counts = [
            f"{len(self.regressions_as(k))} {k.replace('_', ' ')}"
            for k in ("broken", "removed", "newly_skipped")
        ]
        total = len(self.regressions)
        return (
            f"regressions: {', '.join(counts)} of {counted(total, 'test')} that pass at the "
            f"base ({counted(len(self.base.runs), 'run')})"
        )

    def _added_lines(self, named: bool) -> list[str]:
        lines = []
        if not self.targets:
            lines.append(self._no_target())
        for ids, why in (
            (self.passes_at_base, "pass without the change"),
            (self.skipped_at_base, "are skipped or not collected without the change"),
        ):
            if ids:
                lines.append(
                    f"added tests that {why}, so prove nothing (not counted): "
                    f"{_listed(list(ids), named)}"
                )
        return lines

    def _no_target(self) -> str:
        if not self.test_files:
            return (
                "the change adds no test (no test file under tests.paths changed): a bugfix "
                "comes with a test that fails without it"
            )
        if not self.passes_at_base and not self.skipped_at_base:
            return (
                f"the change adds no test ({counted(len(self.test_files), 'test file')} "
                "changed, no test id the base does not have): a bugfix comes with a test "
                "that fails without it"
            )
        return "none of the added tests fails without the change: none shows what it fixes"


def _new_ids(config: TestsConfig, base: BaseRuns, at_head: TestRun) -> list[str]:
    """The ids of the head's tests that the base does not have, in files under
    ``tests.paths`` (or naming no file)."""
    paths = compile_globs(config.paths)
    fresh = at_head.ids - base.ids
    return sorted(i for i in fresh if (f := file_of(i)) is None or paths.match_file(f))


def _added(
    config: TestsConfig, new: list[str], heads: TestRun | None, test_files: tuple[str, ...]
) -> list[str]:
    """The tests the submission adds: new ids of its own tests, in the test files it
    changed (an id that names no file, in any). A new case of an old test whose cases
    come from the code is no test it wrote."""
    if not config.added or heads is None:
        return []
    files = set(test_files)
    return [i for i in new if (f := file_of(i)) is None or f in files]


def _on_base(without: TestRun | None, test_id: str) -> Outcome:
    """How an added test came out on the base's code. With no record of it there, it
    counts as erroring only when its file's record says the file failed to load (its
    import of what the change adds): a test the base's code merely does not collect
    proves nothing."""
    if without is None:
        return Outcome.SKIPPED
    outcome = without.outcome(test_id)
    if outcome is not Outcome.MISSING:
        return outcome
    path = file_of(test_id)
    loaded = without.results.get(path) if path is not None else None
    if loaded is not None and loaded.outcome in (Outcome.FAILED, Outcome.ERROR):
        return Outcome.ERROR
    return Outcome.MISSING


def _regressions(
    config: TestsConfig, base: BaseRuns, graded: TestRun, *, excluded: set[str]
) -> dict[str, Outcome]:
    """With ``baseline``, each regression test's outcome in the graded run: the tests
    that pass at the base, but for the targets (listed, or ``excluded``: added)."""
    if not config.baseline:
        return {}
    kept = base.passing - set(config.target_ids) - excluded
    return {i: graded.outcome(i) for i in sorted(kept)}


def _at_base(on_base: Mapping[str, Outcome], *outcomes: Outcome) -> tuple[str, ...]:
    return tuple(i for i, o in on_base.items() if o in outcomes)


def _listed(ids: list[str], named: bool) -> str:
    if not named:
        return counted(len(ids), "test")
    shown = [escape_controls(i) for i in ids[:MAX_NAMED]]
    if len(ids) > MAX_NAMED:
        shown.append(f"{len(ids) - MAX_NAMED} more")
    return ", ".join(shown)
