"""The perf grader's modes on the host (issue 24), end to end: real repositories, a real
benchmark doing a known amount of work (tests/support/perfmodes.py), real grades.

- ``cpu`` counts the whole process tree (forked workers, an orphan nobody waits for) and
  is not fooled by a candidate that idles less; ``wall`` is;
- ``instructions`` (Callgrind here: this machine's CPU has no counters) is the same from
  run to run within 1 %, counts forked children once, and fails a run whose process was
  killed before it was counted;
- ``peak_memory`` grades a smaller peak like a faster run, the peak of a forked child too;
- ``runs: auto`` stops as soon as the interval has decided, and says so when a cap stops
  it first.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import struct
from pathlib import Path
from typing import Any

import pytest

from repogym.graders.perf import grader as perf
from repogym.graders.perf import measure as perf_measure
from repogym.graders.perf.report import PerfFailure
from repogym.models import CommandResult
from repogym.sandbox import measure_tree as _measure_tree
from tests.support.perfmodes import perf_component, perf_repo

WORK = 4_000_000  # iterations of the loop: about 0.25 s of CPU here
SMALL = 300_000  # under Callgrind, a run of this is about two seconds
# The bound of a same-work ratio in CPU time: three pairs on a busy machine have given
# 1.18x for the same work, and CI's busiest run 1.50x (a worker killed by its parent); a
# child left uncounted gives about 9x (the candidate's run is then a Python start alone).
SAME_WORK = 2.5


def graded(tmp_path: Path, baseline: dict[str, Any], candidate: dict[str, Any], **perf: Any) -> Any:
    settings = {"runs": 3, "warmup": 1, "min_speedup": 2, **perf}
    return perf_component(perf_repo(tmp_path / "repo", baseline, candidate, settings))


@pytest.mark.parametrize("timing", ["wall", "cpu"])
def test_a_candidate_that_idles_less_fools_wall_time_only(tmp_path: Path, timing: str) -> None:
    # The same work; the baseline also sleeps 1.2 s, the candidate does not: about 4x or
    # more in wall time (a run takes 0.3 to 0.5 s), 1x in CPU time. The floor sits between.
    component = graded(
        tmp_path,
        {"work": WORK, "sleep": 1.2},
        {"work": WORK},
        timing=timing,
        noise_floor=SAME_WORK,
        min_speedup=8,
    )
    speedup = component.details["speedup"]
    if timing == "wall":
        assert speedup > SAME_WORK and component.score > 0, component.messages
    else:
        assert speedup < SAME_WORK and component.score == 0, component.messages
        assert component.messages[0].startswith(f"speed-up {speedup:.2f}× (fastest of 3, CPU")


@pytest.mark.parametrize(
    "how",
    [{"workers": 2}, {"workers": 2, "hide": True}, {"orphan": True}],
    ids=["workers", "workers-ignoring-SIGCHLD", "orphan"],
)
def test_cpu_counts_the_whole_process_tree(tmp_path: Path, how: dict[str, Any]) -> None:
    # The candidate does the same work in forked workers, or in an orphan: on two cores
    # the workers take half the wall time, but the CPU time is the same.
    component = graded(
        tmp_path,
        {"work": WORK},
        {"work": WORK, **how},
        timing="cpu",
        noise_floor=SAME_WORK,
        min_speedup=4,
    )
    # Uncounted children would make the candidate many times faster; forking costs a little.
    assert 0.6 < component.details["speedup"] < SAME_WORK, component.messages
    assert component.score == 0


def test_cpu_detects_less_work(tmp_path: Path) -> None:
    component = graded(tmp_path, {"work": 3 * WORK}, {"work": WORK}, timing="cpu")
    assert component.details["speedup"] > 2 and component.passed, component.messages
    interval = component.details["interval"]
    assert interval["low"] <= interval["estimate"] <= interval["high"]
    assert interval["pairs"] == 3
    # The kernel's task clock where perf_event_open gives one, else the reaped children's
    # accounting (no counter).
    assert component.details["counter"] in ("task-clock", None)


def test_instructions_are_the_same_from_run_to_run(tmp_path: Path) -> None:
    component = graded(
        tmp_path, {"work": SMALL}, {"work": SMALL}, timing="instructions", runs=2, warmup=1
    )
    assert component.details["counter"] == "valgrind"
    figures = component.details["baseline_times"] + component.details["candidate_times"]
    assert max(figures) / min(figures) < 1.01, figures
    assert statistics.median(figures) > 1e8  # a Python start and the loop: real counts
    assert component.score == 0
    assert "M instructions" in component.messages[0] and "valgrind" in component.messages[0]


def test_instructions_are_the_same_where_the_work_follows_the_hash_seed(tmp_path: Path) -> None:
    # Without a pinned PYTHONHASHSEED each process orders the set its own way, and the
    # search passes anywhere from none to all of its 2000 keys (issue 45: 1.10 to 1.25x
    # "speed-ups" of the same code).
    component = graded(
        tmp_path, {"search": 2000}, {"search": 2000}, timing="instructions", runs=2, warmup=1
    )
    figures = component.details["baseline_times"] + component.details["candidate_times"]
    assert max(figures) / min(figures) < 1.01, figures
    assert component.score == 0


@pytest.mark.parametrize("seed", [None, "random"])
def test_the_hash_seed_is_pinned_unless_the_task_sets_it(tmp_path: Path, seed: str | None) -> None:
    # The benchmark reports where in its set it found the key: one place for every run
    # under the pinned seed; with the task's own `PYTHONHASHSEED: random`, many.
    settings = {"timing": "reported", "runs": 5, "warmup": 0, "min_speedup": 4}
    run = {"search": 2000, "report_place": True}
    env = {"PYTHONHASHSEED": seed} if seed else None
    component = perf_component(perf_repo(tmp_path / "repo", run, run, settings, env=env))
    places = component.details["baseline_times"] + component.details["candidate_times"]
    if seed is None:
        assert len(set(places)) == 1, places
    else:  # ten draws of 2000 places all alike: about 1 in 10^30
        assert len(set(places)) > 1, places


def _hardware_counters() -> bool:
    """Whether this machine gives a process a counter of its instructions."""
    libc = ctypes.CDLL(None, use_errno=True)
    return _measure_tree._counter(libc, 0, _measure_tree.INSTRUCTIONS) is not None


@pytest.mark.skipif(
    not _hardware_counters(),
    reason="perf_event_open gives no instruction counter here (a virtual CPU without "
    "counters): the Valgrind path is what these tests run",
)
def test_instructions_by_the_hardware_counter(tmp_path: Path) -> None:
    component = graded(
        tmp_path, {"work": 4 * WORK}, {"work": WORK, "workers": 2}, timing="instructions"
    )
    assert component.details["counter"] == "perf_event"
    assert component.details["speedup"] > 2, component.messages
    figures = component.details["baseline_times"]
    assert max(figures) / min(figures) < 1.01, figures


@pytest.mark.parametrize("mode", ["instructions", "cpu"])
def test_a_count_the_counter_did_not_take_throughout_fails_the_run(mode: str) -> None:
    # A pinned hardware counter that another event took (here, no CPU has counters to
    # take): the kernel's times say it ran for less of the benchmark than it was enabled.
    # The measurer's reading, its line and the grader's check, as a real run chains them.
    def line(value: int, enabled: int, running: int) -> str:
        read, write = os.pipe()
        os.write(write, struct.pack("QQQ", value, enabled, running))
        os.close(write)
        figures = _measure_tree._read(read, mode)
        os.close(read)
        return _measure_tree.MARK + json.dumps(figures)

    def result(stdout: str) -> CommandResult:
        return CommandResult(
            command="bench", exit_code=0, timed_out=False, duration=0.1, stdout=stdout, stderr=""
        )

    whole = perf_measure.taken(result(line(1000, 50, 50)))[1]
    assert whole is not None and (whole.cpu_ns or whole.instructions) == 1000
    perf._measurer_error(whole, result(""))  # no failure
    cut = perf_measure.taken(result(line(1000, 50, 49)))[1]
    assert cut is not None and cut.error == "counter-lost"
    with pytest.raises(PerfFailure, match="did not run for the whole benchmark") as failed:
        perf._measurer_error(cut, result(""))
    assert failed.value.key == "timing"


def test_instructions_count_forked_children_once(tmp_path: Path) -> None:
    # Without --dump-before=fork each child would count its parent's start-up again.
    component = graded(
        tmp_path,
        {"work": 2 * SMALL},
        {"work": 2 * SMALL, "workers": 2},
        timing="instructions",
        runs=1,
        warmup=0,
    )
    assert 0.97 < component.details["speedup"] < 1.03, component.messages


def test_instructions_detect_less_work(tmp_path: Path) -> None:
    # After a warm-up round: a first run in a fresh bytecode cache also counts compiling
    # the modules it imports (about 1 G instructions under Callgrind, on both sides).
    component = graded(
        tmp_path, {"work": 4 * SMALL}, {"work": SMALL}, timing="instructions", runs=1, warmup=1
    )
    assert component.details["speedup"] > 1.5, component.messages


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ({"killed": True}, "1 of its processes ended before Valgrind counted it (killed)"),
        ({"daemon": True}, "left 1 process(es) running, killed uncounted"),
    ],
    ids=["killed", "daemon"],
)
def test_instructions_fail_a_run_with_an_uncounted_process(
    tmp_path: Path, how: dict[str, Any], said: str
) -> None:
    # A worker killed by its parent once it has reported never gets its count written,
    # and one left running would be killed uncounted: the run fails, naming why.
    component = graded(
        tmp_path, {"work": SMALL}, {"work": SMALL, **how}, timing="instructions", runs=1, warmup=0
    )
    assert component.score == 0 and not component.passed
    assert said in component.messages[0], component.messages


def test_cpu_counts_a_worker_killed_by_its_parent(tmp_path: Path) -> None:
    component = graded(tmp_path, {"work": WORK}, {"work": WORK, "killed": True}, timing="cpu")
    assert 0.6 < component.details["speedup"] < SAME_WORK, component.messages


@pytest.mark.parametrize("where", ["benchmark", "worker"])
def test_peak_memory_grades_a_smaller_peak(tmp_path: Path, where: str) -> None:
    component = graded(
        tmp_path,
        {"megabytes": 200, "memory_in": where},
        {"megabytes": 40, "memory_in": where},
        measure="peak_memory",
        runs=2,
        warmup=0,
        min_speedup=3,
    )
    assert component.details["speedup"] > 3 and component.passed, component.messages
    assert component.messages[0].startswith("memory reduction")
    assert "MiB" in component.messages[0]


def reported(tmp_path: Path, baseline: list[float], candidate: list[float], **perf: Any) -> Any:
    settings = {"timing": "reported", "runs": "auto", "warmup": 0, "min_speedup": 4, **perf}
    log = {"PERF_LOG": str(tmp_path / "runs.log")}
    repo = perf_repo(
        tmp_path / "repo", {"seconds": baseline}, {"seconds": candidate}, settings, env=log
    )
    return perf_component(repo)


def test_auto_stops_once_the_interval_has_decided(tmp_path: Path) -> None:
    # Every pair says 2×: between the noise floor and min_speedup from the first pairs on.
    component = reported(tmp_path, [1.0], [0.5])
    assert component.details["interval"]["pairs"] == 5  # AUTO_FIRST, then no more
    assert component.details["undecided"] == [] and component.details["cap"] is None
    assert component.details["speedup"] == 2.0 and 0 < component.score < 1


def test_auto_adds_pairs_until_the_interval_clears_the_noise_floor(tmp_path: Path) -> None:
    # The pairs' ratios go 1.25, 1.25, 1.25, 1.25, 1.05, then 1.25 on: five pairs span
    # the floor of 1.15; the later ones move the interval above it.
    candidate = [0.8] * 4 + [0.95] + [0.8] * 30
    component = reported(tmp_path, [1.0], candidate)
    pairs = component.details["interval"]["pairs"]
    assert 5 < pairs < 30, component.details
    assert component.details["interval"]["low"] > 1.15 and component.details["cap"] is None
    assert component.score > 0


def test_auto_says_when_a_cap_stopped_it_undecided(tmp_path: Path) -> None:
    # Ratios of 1.25 and 1.05 in turn: the interval spans the floor of 1.15 for good.
    component = reported(tmp_path, [1.0], [0.8, 0.95], max_runs=8)
    assert component.details["interval"]["pairs"] == 8
    assert component.details["cap"] == "max_runs"
    assert component.details["undecided"] == ["noise_floor"]
    (warning,) = [m for m in component.messages if m.startswith("warning: stopped at")]
    assert "`max_runs`" in warning and "across `noise_floor` (1.15×)" in warning
    assert any(f.level == "warning" and "stopped at" in f.message for f in component.findings)


def test_a_slow_first_run_hints_at_warmup_and_a_far_run_is_reported(tmp_path: Path) -> None:
    baseline = [3.0, 1.0, 1.01, 0.99, 1.0, 1.0, 1.02, 1.0]
    component = reported(tmp_path, baseline, [0.5], runs=8)
    assert component.details["far"] == {"baseline": [0], "candidate": []}
    messages = "\n".join(component.messages)
    assert "the baseline's run 1 (3.000 s) is far from its median (1.000 s)" in messages
    assert "raise `perf.warmup` (now 0)" in messages
    # Reported, not dropped: the spec's figure is still the fastest of every run.
    assert component.details["baseline_times"][0] == 3.0


def test_auto_goes_on_while_the_fastest_runs_disagree_with_the_interval(tmp_path: Path) -> None:
    # Every pair's ratio is 1.25 but the baseline's first run, 0.85 (1.06 with the
    # candidate's): the interval clears the noise floor of 1.15, the spec's figure, from
    # the fastest runs, does not. Stopping there would score 0 with no word of why.
    component = reported(tmp_path, [0.85] + [1.0] * 40, [0.8], max_runs=7)
    assert component.details["interval"]["low"] > 1.15
    assert component.details["speedup"] < 1.15 and component.score == 0
    assert component.details["cap"] == "max_runs"
    assert component.details["undecided"] == ["noise_floor"]
    (warning,) = [m for m in component.messages if m.startswith("warning: stopped at")]
    assert "the fastest runs' 1.06× on either side of `noise_floor` (1.15×)" in warning


def test_each_run_gets_an_environment_of_random_size(tmp_path: Path) -> None:
    # The benchmark reports the length of its padding variable as its time.
    settings = {"timing": "reported", "runs": 6, "warmup": 0, "min_speedup": 4}
    repo = perf_repo(tmp_path / "repo", {"pad": True}, {"pad": True}, settings)
    component = perf_component(repo)
    lengths = [
        t - 1 for t in component.details["baseline_times"] + component.details["candidate_times"]
    ]
    assert all(0 <= n < 4096 for n in lengths), lengths
    assert len(set(lengths)) > 1, lengths  # 12 draws of 4096 all alike: about 1 in 10⁴³
