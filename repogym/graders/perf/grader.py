"""PerfGrader: times the task's benchmark on the baseline and the submission (spec:
"PerfGrader").

- The baseline is its own checkout of the base commit, made once per (repository, base
  sha, task sha256) per process and kept, with the task's ``setup`` run there once, when
  it is made. It is not ``workspace.baseline``: other graders read that as a pristine
  tree, and a benchmark or a setup may write into the tree it runs in.
- The candidate is a fresh copy of the submission (repogym.tree.snapshot), made for each
  grade; ``setup`` runs there once. Then both trees are read-only to the benchmark (no
  bytecode is written into them either), and each run has (sealed, or in a container) a
  ``/tmp`` and ``/dev/shm`` of its own: nothing one run writes reaches the next (issue 43).
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
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import CommandNotFound
from repogym.graders.base import BuiltinGrader
from repogym.graders.perf import measure as perf_measure
from repogym.graders.perf.report import SIDES, Runs, Side, component, perf_score
from repogym.graders.perf.report import PerfFailure as _Failure
from repogym.models import PERF, CommandResult, GradeComponent
from repogym.run.protocol import CommandRunner
from repogym.sandbox import scratch as _scratch
from repogym.task import PerfConfig
from repogym.tree import baselines as _baselines
from repogym.tree.store import copies_dir
from repogym.workspace import Workspace, export_tree

__all__ = ["PerfGrader", "perf_baseline", "perf_score"]

# A variable of random length in each run's environment, which moves the stack: a
# layout that happens to suit one side's code must not pass for a speed-up (hyperfine).
PAD = "REPOGYM_PERF_PAD"
PAD_MAX = 4096
# What would make one run's work differ from the next where the code is the same, pinned
# unless the task sets it (`env`, `pass_env`): Python's hash seed orders every set and
# dict of strings, and so the work of code that walks them (issue 45: 410.4 to 436.8 M
# instructions for one benchmark, 410,553,160 each time with the seed fixed).
PINNED = {"PYTHONHASHSEED": "0"}


class PerfGrader(BuiltinGrader):
    """Scores how much faster the submission runs ``perf.command`` than the baseline (an
    objective); ``runner`` runs the commands."""

    name = PERF

    def grade(self, workspace: Workspace) -> GradeComponent:
        config = workspace.task.perf
        if config is None:
            raise ValueError("the task has no `perf` section")
        runner = self.runner or workspace.command_runner()
        timings = Runs()
        try:
            copies = copies_dir(workspace.snapshot().size)
            with _scratch.held("repogym-perf-", copies, commands=True) as scratch:
                candidate = workspace.copy(Path(scratch) / "candidate")
                trees: dict[Side, Path] = {
                    "baseline": perf_baseline(workspace, runner),
                    "candidate": _set_up(runner, workspace, candidate, "candidate"),
                }
                # Read-only to the benchmark from here on, as the baseline is: nothing one
                # run writes into its tree reaches the next (a warm-up that caches its
                # answer there: 11.35x; issue 43).
                runner.lock(candidate)
                _measure(_Bench(runner, config, trees, timings), config, timings)
        except _Failure as failure:
            return component(config, timings, failure)
        finally:
            if runner.scope:  # its trees go with it
                _baselines.forget(runner.scope)
        return component(config, timings, None)


# -- the baseline, once per process ----------------------------------------------------


def perf_baseline(workspace: Workspace, runner: CommandRunner) -> Path:
    """The benchmark's private baseline tree: checked out, and set up, once per
    (repository, base sha, task sha256) per process.

    A setup that fails is not kept, so the next grade tries again with a fresh tree.
    """
    # A container runner holds what setup made in its own volumes, for its grade only.
    key = _baselines.Key(
        kind="perf",
        commit=workspace.base,
        depends_on=(workspace.task.digest,),
        scope=runner.scope,
    )
    if not workspace.shared:
        return _make_baseline(workspace, runner)
    return _baselines.shared(key, lambda: _make_baseline(workspace, runner))


def _make_baseline(workspace: Workspace, runner: CommandRunner) -> Path:
    # On the same file system as the candidate's copy (copies_dir): a benchmark that
    # reads its files must not be faster on one side for where they are.
    where = copies_dir(workspace.snapshot().size)
    tree = export_tree(
        workspace.root, workspace.base, prefix="repogym-perf-baseline-", where=where, commands=True
    )
    try:
        _set_up(runner, workspace, tree, "baseline")
    except (_Failure, CommandNotFound):
        shutil.rmtree(tree.parent, ignore_errors=True)
        raise
    # From here on the baseline is the grader's and read-only to every command: the
    # candidate's benchmark must not be able to slow it down (issue 9).
    runner.lock(tree)
    return tree


def _set_up(runner: CommandRunner, workspace: Workspace, tree: Path, side: Side) -> Path:
    """Run the task's ``setup`` in ``tree`` (within ``perf.timeout``); returns the tree."""
    setup, perf = workspace.task.setup, workspace.task.perf
    if setup and perf is not None:
        result = runner.run(setup, tree, timeout=perf.timeout, writable=[tree], network=True)
        # A program the shell did not find is the machine's to install (issue 20).
        runner.found(result, "setup")
        if not result.ok:
            raise _Failure(f"setup failed in the {side} ({result.describe()})", result, "setup")
    return tree


# -- timing ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bench:
    runner: CommandRunner
    config: PerfConfig
    trees: dict[Side, Path]
    runs: Runs

    def time(self, side: Side, which: str) -> float:
        """Run the benchmark once on ``side``: its figure (seconds, instructions or bytes),
        or a ``_Failure``. Both trees are read-only to it, so Python writes no bytecode
        into them: each run compiles the tree's own modules, on both sides alike, and a
        bytecode cache cannot carry what a warm-up computed into the timed runs (a
        ``.pyc`` holds any constant; issue 43)."""
        command, what = self.config.command, self.config.wrapped
        if what is not None:
            command = self.runner.measured(command, what)
        pad = "x" * random.randrange(PAD_MAX)
        task = {*self.runner.set_env, *self.runner.pass_env}
        pinned = {k: v for k, v in PINNED.items() if k not in task}
        result = self.runner.run(
            command,
            self.trees[side],
            timeout=self.config.timeout,
            env={**pinned, PAD: pad},
            # The log shows the task's command, not the measurer's script around it.
            shown=None if what is None else self.config.command,
        )
        figures = None
        if what is not None:
            result, figures = perf_measure.taken(result)
            _measurer_error(figures, result)
        self.runner.found(result, "perf.command")
        where = f"the {side} benchmark ({which})"
        if result.timed_out:
            raise _Failure(f"{where} timed out after {self.config.timeout:g} s", result)
        if result.exit_code != 0:
            raise _Failure(f"{where} exited with code {result.exit_code}", result)
        if what is not None:
            figure = self._figure(figures, result, where)
        elif self.config.timing == "wall":
            figure = result.duration
        else:
            figure = _reported_seconds(result, where)
        timed = "time" in self.config.figure
        kind, unit = ("time", " s") if timed else (self.config.figure, "")
        if not math.isfinite(figure):
            raise _Failure(f"{where} took a non-finite {kind} ({figure!r})", result)
        if figure <= 0:
            raise _Failure(f"{where} took a non-positive {kind} ({figure!r}{unit})", result)
        return figure

    def _figure(
        self, figures: perf_measure.Figures | None, result: CommandResult, where: str
    ) -> float:
        """The figure the config asks for, from the measurer's line."""
        if figures is None:
            raise _Failure(
                f"{where} ended without the measurer's figures (its last line of stdout): "
                "the measurer was killed or its output cut",
                result,
            )
        if figures.counter == "valgrind" and (figures.left or figures.uncounted):
            what = (
                f"left {figures.left} process(es) running, killed uncounted"
                if figures.left
                else f"{figures.uncounted} of its processes ended before Valgrind counted "
                "it (killed)"
            )
            raise _Failure(
                f"{where} {what}: with `timing: instructions` every process of the "
                "benchmark must end on its own before the benchmark does",
                result,
            )
        self.runs.counter = figures.counter or self.runs.counter
        if figures.floor_bytes:
            self.runs.floor = max(self.runs.floor or 0, figures.floor_bytes)
        value = {
            "cpu": figures.cpu_ns and figures.cpu_ns / 1e9,
            "instructions": figures.instructions,
            "peak_memory": figures.peak_bytes,
        }[self.config.wrapped or ""]
        if value is None:
            fix = (
                "it needs cgroup v1, or v2 on Linux 5.19 or later (memory.peak): use "
                "`measure: time`"
                if self.config.measure == "peak_memory"
                else "use another `perf.timing`"
            )
            raise _Failure(
                f"{where}: the container's cgroup gave no {self.config.figure}: {fix}", result
            )
        return float(value)


_ERRORS = {
    "no-counter": "`timing: instructions` needs hardware performance counters or Valgrind, "
    "and neither is here: install valgrind (apt-get install valgrind), in the environment's "
    "image when the task names one",
    "counter-lost": "the hardware counter did not run for the whole benchmark (another "
    "event on this machine took it), so its count would be short: grade again, or with "
    "Valgrind where no other profiler runs",
    "not-pid-1": "the measurer is not the container's process 1 (the engine adds an init "
    "process): turn the engine's `init` default off",
}


def _measurer_error(figures: perf_measure.Figures | None, result: CommandResult) -> None:
    if figures is not None and figures.error is not None:
        problem = _ERRORS.get(figures.error, f"the measurer failed ({figures.error})")
        raise _Failure(problem, result, key="timing")


def _measure(bench: _Bench, config: PerfConfig, runs: Runs) -> None:
    """Warm-up rounds, then interleaved pairs, recorded into ``runs``: ``runs`` of them,
    or with ``runs: auto`` from ``AUTO_FIRST`` on until the interval of the pairs' ratio
    has decided every decision point or a cap is reached."""
    for index in range(config.warmup):
        for side in SIDES:
            bench.time(side, f"warm-up run {index + 1} of {config.warmup}")
    start = time.monotonic()
    total = config.max_runs if config.auto else config.first_runs
    for index in range(total):
        if index >= config.first_runs:
            if not runs.undecided(config):
                return
            if time.monotonic() - start >= config.max_seconds:
                runs.cap = "max_seconds"
                return
        order = SIDES if index % 2 == 0 else (SIDES[1], SIDES[0])
        runs.order.append(order)
        which = f"pair {index + 1} of {'at most ' if config.auto else ''}{total}"
        for side in order:
            runs.times[side].append(bench.time(side, which))
    if config.auto and runs.undecided(config):
        runs.cap = "max_runs"


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
