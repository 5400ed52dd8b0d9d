"""The perf grader's component: score, messages, findings and details, from its runs."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Literal

from repogym.graders.perf.stats import Interval, far_runs, interval, slow_first
from repogym.models import CommandResult, Finding, GradeComponent
from repogym.task import PerfConfig

Side = Literal["baseline", "candidate"]
SIDES: tuple[Side, Side] = ("baseline", "candidate")
SHORT_RUN = 0.5  # seconds: below this, interpreter start-up dominates (spec)
NAME = "perf"


class PerfFailure(Exception):
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
class Runs:
    """Every counted figure of each side in run order, the order of each pair, which
    counter counted instructions, and why ``runs: auto`` stopped where it did."""

    times: dict[Side, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    order: list[tuple[Side, Side]] = field(default_factory=list)
    counter: str | None = None
    cap: str | None = None  # max_runs or max_seconds: the cap auto stopped at, if any
    floor: int | None = None  # the least peak the host's measurer can see, in bytes

    @property
    def pairs(self) -> int:
        return len(self.times["candidate"])

    def interval(self) -> Interval:
        return interval(self.times["baseline"], self.times["candidate"])

    def fastest(self) -> dict[Side, float]:
        """Each side's fastest run (least figure): the spec's figure of the side."""
        return {side: min(self.times[side]) for side in SIDES}

    def speedup(self) -> float:
        """The spec's figure: the fastest baseline run over the fastest candidate run."""
        fastest = self.fastest()
        return fastest["baseline"] / fastest["candidate"]

    def undecided(self, config: PerfConfig) -> list[str]:
        """The decision points the runs so far leave open (``undecided``)."""
        return undecided(config, self.interval(), self.speedup())


def undecided(config: PerfConfig, found: Interval, speedup: float) -> list[str]:
    """The decision points (``noise_floor``, ``min_speedup``) still open: those ``found``
    spans, and those the scored ``speedup`` (the spec's, from the fastest runs) falls on
    the other side of from the interval (a lucky or forced fast run)."""
    points = {"noise_floor": config.noise_floor, "min_speedup": config.min_speedup}
    return [
        key
        for key, point in points.items()
        if found.around(point) or (speedup >= point) != (found.low > point)
    ]


def perf_score(speedup: float, noise_floor: float, min_speedup: float) -> float:
    """The spec's log-scaled score of ``speedup`` (0 below ``noise_floor``, 1 from
    ``min_speedup`` on)."""
    if speedup < noise_floor:
        return 0.0
    return min(1.0, math.log(speedup / noise_floor) / math.log(min_speedup / noise_floor))


def shown(config: PerfConfig, figure: float) -> str:
    """One run's figure with its unit: ``1.234 s``, ``12.3 M instructions``, ``45.6 MiB``."""
    if config.measure == "peak_memory":
        return f"{figure / 2**20:.1f} MiB"
    if config.timing == "instructions":
        return f"{figure / 1e6:.1f} M instructions"
    return f"{figure:.3f} s"


def ratio_word(config: PerfConfig) -> str:
    return "memory reduction" if config.measure == "peak_memory" else "speed-up"


def component(config: PerfConfig, runs: Runs, failure: PerfFailure | None) -> GradeComponent:
    details: dict[str, Any] = {
        "command": config.command,
        "timing": config.timing,
        "measure": config.measure,
        "runs": config.runs,
        "warmup": config.warmup,
        "noise_floor": config.noise_floor,
        "min_speedup": config.min_speedup,
        "baseline_times": list(runs.times["baseline"]),
        "candidate_times": list(runs.times["candidate"]),
        "order": [list(pair) for pair in runs.order],
        "counter": runs.counter,
    }
    if failure is not None:
        messages = [f"score 0: {failure.problem}"]
        if failure.run is not None and failure.run.tail():
            messages.append("output tail:\n" + failure.run.tail())
        return GradeComponent(
            name=NAME,
            score=0.0,
            passed=False,
            details=details,
            messages=messages,
            findings=[Finding(title=failure.key, message=f"score 0: {failure.problem}")],
        )
    fastest = runs.fastest()
    speedup = runs.speedup()
    found = runs.interval()
    still = undecided(config, found, speedup)
    far = {side: far_runs(runs.times[side]) for side in SIDES}
    details.update(
        baseline_min=fastest["baseline"],
        candidate_min=fastest["candidate"],
        speedup=speedup,
        interval=found.as_details(),
        far=far,
        cap=runs.cap,
        undecided=still,
    )
    passed = speedup >= config.min_speedup
    messages = _messages(config, runs, fastest, speedup, found, still)
    return GradeComponent(
        name=NAME,
        score=perf_score(speedup, config.noise_floor, config.min_speedup),
        passed=passed,
        details=details,
        messages=messages,
        findings=_findings(config, speedup, messages),
    )


def _findings(config: PerfConfig, speedup: float, messages: list[str]) -> list[Finding]:
    """A speed-up short of passing as one finding titled with the key it falls short of;
    a warning for each message that is one."""
    findings = []
    # Truncated, not rounded: 1.149× below a floor of 1.15 must not read as 1.15×.
    figure = f"{ratio_word(config)} {math.floor(speedup * 100) / 100:.2f}×"
    if speedup < config.noise_floor:
        message = f"{figure} is below the noise floor of {config.noise_floor:g}×: score 0"
        findings.append(Finding(title="noise_floor", message=message))
    elif speedup < config.min_speedup:
        message = f"{figure}; {config.min_speedup:g}× needed to pass"
        findings.append(Finding(title="min_speedup", message=message))
    findings += [
        Finding(title="command", level="warning", message=m.removeprefix("warning: "))
        for m in messages
        if m.startswith("warning: ")
    ]
    return findings


def _messages(
    config: PerfConfig,
    runs: Runs,
    fastest: dict[Side, float],
    speedup: float,
    found: Interval,
    still: list[str],
) -> list[str]:
    by = f", {runs.counter}" if runs.counter else ""
    messages = [
        f"{ratio_word(config)} {speedup:.2f}× (fastest of {runs.pairs}, {config.figure}{by}: "
        f"baseline {shown(config, fastest['baseline'])}, "
        f"candidate {shown(config, fastest['candidate'])})",
        f"pairs: {found.shown()} "
        + (
            f"({found.level:.1%} interval of the pairs' ratio)"
            if found.pairs > 1
            else "(one pair gives no interval: raise `perf.runs`)"
        ),
    ]
    if speedup < config.noise_floor:
        messages.append(f"below the noise floor of {config.noise_floor:g}×: score 0")
    elif speedup < config.min_speedup:
        messages.append(f"{config.min_speedup:g}× needed to pass")
    messages += _open(config, runs, found, speedup, still)
    messages += _odd_runs(config, runs)
    if config.measure == "peak_memory" and runs.floor:
        for side in SIDES:
            if fastest[side] <= 1.1 * runs.floor:
                messages.append(
                    f"warning: the {side}'s peak ({shown(config, fastest[side])}) is at the "
                    f"measurer's own ({shown(config, runs.floor)}), below which no peak shows: "
                    "make the benchmark use more memory than that"
                )
    if config.measure == "time" and config.timing != "instructions":
        for side in SIDES:
            if fastest[side] < SHORT_RUN:
                messages.append(
                    f"warning: the {side} benchmark's fastest run took {fastest[side]:.3f} s, "
                    "under half a second, so start-up dominates the figure: make the "
                    "benchmark run longer"
                )
    return messages


def _open(
    config: PerfConfig, runs: Runs, found: Interval, speedup: float, still: list[str]
) -> list[str]:
    """What `runs: auto` left open (``still``), when it stopped at a cap."""
    if not (config.auto and still):
        return []
    points = " and ".join(f"`{key}` ({getattr(config, key):g}×)" for key in still)
    cap = f"`{runs.cap}`" if runs.cap else "the cap"
    where = (
        "across"
        if any(found.around(getattr(config, key)) for key in still)
        else f"and the fastest runs' {speedup:.2f}× on either side of"
    )
    return [
        f"warning: stopped at {cap} with the interval [{found.low:.2f}, {found.high:.2f}] "
        f"{where} {points}: another grade may reach another verdict"
    ]


def _odd_runs(config: PerfConfig, runs: Runs) -> list[str]:
    messages = []
    for side in SIDES:
        times = runs.times[side]
        middle = statistics.median(times)
        for index in far_runs(times):
            messages.append(
                f"the {side}'s run {index + 1} ({shown(config, times[index])}) is far from "
                f"its median ({shown(config, middle)}): counted, reported in details.far"
            )
        if slow_first(times):
            messages.append(
                f"warning: the {side}'s first counted run ({shown(config, times[0])}) was far "
                f"slower than its others (median {shown(config, statistics.median(times[1:]))}):"
                f" raise `perf.warmup` (now {config.warmup})"
            )
    return messages
