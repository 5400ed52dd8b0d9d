"""PerfGrader: times the task's benchmark on the baseline and the submission (spec:
"PerfGrader").

- The baseline is its own checkout of the base commit, made once per (repository, base
  sha, task sha256) per process and kept, with the task's ``setup`` run there once, when
  it is made. It is not ``workspace.baseline``: other graders read that as a pristine
  tree, and a benchmark or a setup may write into the tree it runs in.
- The candidate is a fresh copy of the submission (repogym.tree.snapshot), made for each
  grade; ``setup`` runs there once.
- ``perf.warmup`` rounds (baseline, then candidate) are run and not counted; then
  ``perf.runs`` pairs, baseline and candidate alternating, with the side that goes first
  flipping from pair to pair, so that drift of the machine hits both sides alike. The
  fastest run of each side is kept: noise only ever adds time.
- ``timing: wall`` times the whole process from outside with a monotonic clock (the
  runner's ``CommandResult.duration``); ``timing: reported`` trusts the benchmark's own
  ``{"seconds": x}``, the last line of its stdout that is such a JSON object.

Score::

    speedup = baseline / candidate
    score   = 0                                                 if speedup < noise_floor
            = min(1, log(speedup / noise_floor) / log(min_speedup / noise_floor))
    passed  = speedup ≥ min_speedup

A failed setup or run, a timeout, a missing or malformed report, or a time that is not a
finite positive number scores 0 with a message naming the side. ``details`` then lacks
``speedup`` and the two minima.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from repogym.container.runner import AnyRunner, ContainerRunner
from repogym.errors import CommandNotFound
from repogym.graders.base import BuiltinGrader
from repogym.models import Finding, GradeComponent
from repogym.runner import CommandResult
from repogym.sandbox import notfound as _notfound
from repogym.task import PerfConfig
from repogym.tree import baselines as _baselines
from repogym.tree.store import copies_dir
from repogym.workspace import Workspace, export_tree

Side = Literal["baseline", "candidate"]
SIDES: tuple[Side, Side] = ("baseline", "candidate")
SHORT_RUN = 0.5  # seconds: below this, interpreter start-up dominates (spec)
_PYCACHE = "PYTHONPYCACHEPREFIX"


def perf_score(speedup: float, noise_floor: float, min_speedup: float) -> float:
    """The spec's log-scaled score of ``speedup`` (0 below ``noise_floor``, 1 from
    ``min_speedup`` on)."""
    if speedup < noise_floor:
        return 0.0
    return min(1.0, math.log(speedup / noise_floor) / math.log(min_speedup / noise_floor))


class PerfGrader(BuiltinGrader):
    """Scores how much faster the submission runs ``perf.command`` than the baseline (an
    objective); ``runner`` runs the commands."""

    name = "perf"

    def grade(self, workspace: Workspace) -> GradeComponent:
        config = workspace.task.perf
        if config is None:
            raise ValueError("the task has no `perf` section")
        runner = self.runner or workspace.command_runner()
        timings = _Timings()
        try:
            copies = copies_dir(workspace.snapshot().size)
            with tempfile.TemporaryDirectory(prefix="repogym-perf-", dir=copies) as scratch:
                Path(scratch).chmod(0o711)  # the sandbox user goes through to its copy
                candidate = workspace.copy(Path(scratch) / "candidate")
                trees: dict[Side, Path] = {
                    "baseline": perf_baseline(workspace, runner),
                    "candidate": _set_up(runner, workspace, candidate, "candidate"),
                }
                caches = _bytecode_caches(runner, Path(scratch) / "pycache")
                _measure(_Bench(runner, config, trees, caches), config, timings)
        except _Failure as failure:
            return _component(config, timings, failure)
        finally:
            if isinstance(runner, ContainerRunner):
                _baselines.forget(runner.scope)
        return _component(config, timings, None)


# -- the baseline, once per process ----------------------------------------------------


def perf_baseline(workspace: Workspace, runner: AnyRunner) -> Path:
    """The benchmark's private baseline tree: checked out, and set up, once per
    (repository, base sha, task sha256) per process.

    A setup that fails is not kept, so the next grade tries again with a fresh tree.
    """
    # A container runner holds what setup made in its own volumes, for its grade only.
    key = _baselines.Key(
        kind="perf",
        commit=workspace.base,
        depends_on=(workspace.task.digest,),
        scope=runner.scope if isinstance(runner, ContainerRunner) else "",
    )
    if not workspace.shared:
        return _make_baseline(workspace, runner)
    return _baselines.shared(key, lambda: _make_baseline(workspace, runner))


def _make_baseline(workspace: Workspace, runner: AnyRunner) -> Path:
    # On the same file system as the candidate's copy (copies_dir): a benchmark that
    # reads its files must not be faster on one side for where they are.
    where = copies_dir(workspace.snapshot().size)
    tree = export_tree(workspace.root, workspace.base, prefix="repogym-perf-baseline-", where=where)
    tree.parent.chmod(0o711)
    try:
        _set_up(runner, workspace, tree, "baseline")
    except (_Failure, CommandNotFound):
        shutil.rmtree(tree.parent, ignore_errors=True)
        raise
    # From here on the baseline is the grader's and read-only to every command: the
    # candidate's benchmark must not be able to slow it down (issue 9).
    runner.lock(tree)
    return tree


def _set_up(runner: AnyRunner, workspace: Workspace, tree: Path, side: Side) -> Path:
    """Run the task's ``setup`` in ``tree`` (within ``perf.timeout``); returns the tree."""
    setup, perf = workspace.task.setup, workspace.task.perf
    if setup and perf is not None:
        result = runner.run(setup, tree, timeout=perf.timeout, writable=[tree], network=True)
        # A program the shell did not find is the machine's to install (issue 20).
        _notfound.check_run(runner, result, "setup")
        if not result.ok:
            raise _Failure(f"setup failed in the {side} ({result.describe()})", result, "setup")
    return tree


def _bytecode_caches(runner: AnyRunner, root: Path) -> dict[Side, dict[str, str]]:
    """One bytecode cache per side for this grade, unless the task sets its own.

    The baseline is read-only to the commands, so Python could not write its bytecode
    there and would compile the baseline's modules on every run: start-up time, and a
    noisy one, on one side only. Within one grade neither tree changes, so the warm-up
    compiles once into these and the timed runs measure the program.
    """
    if _PYCACHE in runner.environment():
        return {side: {} for side in SIDES}
    for side in SIDES:
        (root / side).mkdir(parents=True)
    return {side: {_PYCACHE: str(root / side)} for side in SIDES}


# -- timing ------------------------------------------------------------------------------


class _Failure(Exception):
    """Why there is no speed-up to score, the run that shows it, and the task key of the
    command that failed (a finding's title)."""

    def __init__(
        self, problem: str, run: CommandResult | None = None, key: str = "command"
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.run = run
        self.key = key


@dataclass(slots=True)
class _Timings:
    """Every counted time of each side in run order, and the order of each pair."""

    times: dict[Side, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    order: list[tuple[Side, Side]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Bench:
    runner: AnyRunner
    config: PerfConfig
    trees: dict[Side, Path]
    env: dict[Side, dict[str, str]]

    def time(self, side: Side, which: str) -> float:
        """Run the benchmark once on ``side``: its time in seconds, or a ``_Failure``."""
        # The candidate's copy is its own to write; the baseline is read-only to it.
        writable = [Path(p) for p in self.env[side].values()]
        if side == "candidate":
            writable.append(self.trees[side])
        result = self.runner.run(
            self.config.command,
            self.trees[side],
            timeout=self.config.timeout,
            env=self.env[side],
            writable=writable,
        )
        _notfound.check_run(self.runner, result, "perf.command")
        where = f"the {side} benchmark ({which})"
        if result.timed_out:
            raise _Failure(f"{where} timed out after {self.config.timeout:g} s", result)
        if result.exit_code != 0:
            raise _Failure(f"{where} exited with code {result.exit_code}", result)
        if self.config.timing == "wall":
            seconds = result.duration
        else:
            seconds = _reported_seconds(result, where)
        if not math.isfinite(seconds):
            raise _Failure(f"{where} took a non-finite time ({seconds!r})", result)
        if seconds <= 0:
            raise _Failure(f"{where} took a non-positive time ({seconds!r} s)", result)
        return seconds


def _measure(bench: _Bench, config: PerfConfig, timings: _Timings) -> None:
    """Warm-up rounds, then ``runs`` interleaved pairs, recorded into ``timings``."""
    for index in range(config.warmup):
        for side in SIDES:
            bench.time(side, f"warm-up run {index + 1} of {config.warmup}")
    for index in range(config.runs):
        order = SIDES if index % 2 == 0 else (SIDES[1], SIDES[0])
        timings.order.append(order)
        for side in order:
            timings.times[side].append(bench.time(side, f"pair {index + 1} of {config.runs}"))


def _reported_seconds(result: CommandResult, where: str) -> float:
    """``x`` of the last stdout line that is a JSON object ``{"seconds": x}``."""
    broken = None
    for line in reversed(result.stdout.splitlines()):
        text = line.strip()
        if not text.startswith("{"):
            continue
        try:
            value = json.loads(text)
        except ValueError:
            if '"seconds"' in text and broken is None:
                broken = text
            continue
        if not isinstance(value, dict) or "seconds" not in value:
            continue
        seconds = value["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise _Failure(
                f'{where} reported malformed output: "seconds" is {json.dumps(seconds)}, '
                "not a number",
                result,
            )
        try:
            return float(seconds)
        except OverflowError:  # an integer too large for a float
            return math.inf
    if broken is not None:
        raise _Failure(f"{where} reported malformed output: {broken[:80]!r} is not JSON", result)
    raise _Failure(
        f'{where} reported no time: no line of its stdout is a {{"seconds": x}} JSON object',
        result,
    )


# -- the component -----------------------------------------------------------------------


def _component(config: PerfConfig, timings: _Timings, failure: _Failure | None) -> GradeComponent:
    details: dict[str, Any] = {
        "command": config.command,
        "timing": config.timing,
        "runs": config.runs,
        "warmup": config.warmup,
        "noise_floor": config.noise_floor,
        "min_speedup": config.min_speedup,
        "baseline_times": list(timings.times["baseline"]),
        "candidate_times": list(timings.times["candidate"]),
        "order": [list(pair) for pair in timings.order],
    }
    if failure is not None:
        messages = [f"score 0: {failure.problem}"]
        if failure.run is not None and failure.run.tail():
            messages.append("output tail:\n" + failure.run.tail())
        return GradeComponent(
            name=PerfGrader.name,
            score=0.0,
            passed=False,
            details=details,
            messages=messages,
            findings=[Finding(title=failure.key, message=f"score 0: {failure.problem}")],
        )
    fastest = {side: min(timings.times[side]) for side in SIDES}
    speedup = fastest["baseline"] / fastest["candidate"]
    details.update(
        baseline_min=fastest["baseline"], candidate_min=fastest["candidate"], speedup=speedup
    )
    score = perf_score(speedup, config.noise_floor, config.min_speedup)
    passed = speedup >= config.min_speedup
    messages = _messages(config, fastest, speedup, passed)
    return GradeComponent(
        name=PerfGrader.name,
        score=score,
        passed=passed,
        details=details,
        messages=messages,
        findings=_findings(config, speedup, messages),
    )


def _findings(config: PerfConfig, speedup: float, messages: list[str]) -> list[Finding]:
    """A speed-up short of passing as one finding titled with the key it falls short of;
    a benchmark too short to measure well as a warning."""
    findings = []
    # Truncated, not rounded: 1.149× below a floor of 1.15 must not read as 1.15×.
    shown = f"speed-up {math.floor(speedup * 100) / 100:.2f}×"
    if speedup < config.noise_floor:
        message = f"{shown} is below the noise floor of {config.noise_floor:g}×: score 0"
        findings.append(Finding(title="noise_floor", message=message))
    elif speedup < config.min_speedup:
        message = f"{shown}; {config.min_speedup:g}× needed to pass"
        findings.append(Finding(title="min_speedup", message=message))
    findings += [
        Finding(title="command", level="warning", message=m.removeprefix("warning: "))
        for m in messages
        if m.startswith("warning: ")
    ]
    return findings


def _messages(
    config: PerfConfig, fastest: dict[Side, float], speedup: float, passed: bool
) -> list[str]:
    messages = [
        f"speed-up {speedup:.2f}× (fastest of {config.runs}, {config.timing} time: "
        f"baseline {fastest['baseline']:.3f} s, candidate {fastest['candidate']:.3f} s)"
    ]
    if speedup < config.noise_floor:
        messages.append(f"below the noise floor of {config.noise_floor:g}×: score 0")
    elif not passed:
        messages.append(f"{config.min_speedup:g}× needed to pass")
    for side in SIDES:
        if fastest[side] < SHORT_RUN:
            messages.append(
                f"warning: the {side} benchmark's fastest run took {fastest[side]:.3f} s, under "
                "half a second, so start-up dominates the figure: make the benchmark run longer"
            )
    return messages
