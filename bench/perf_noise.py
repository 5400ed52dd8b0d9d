"""How far each of the perf grader's timings can be trusted on a noisy machine (issue 24).

Run as ``python bench/perf_noise.py [--trials N] [--modes wall,cpu,instructions]
[--loads idle,loaded]``. Two real git repositories per scenario hold the same CPU-bound
Python benchmark (a loop sized by ``n.txt``); the submission changes ``n.txt`` only:

- *identical*: the same work, so a trial that scores above 0 is false credit;
- *1.10×, 1.25×, 2×*: the candidate does that much less loop work; a trial that scores
  above 0 detected it.

Each trial is one real ``PerfGrader().grade()``: ``wall`` and ``cpu`` with the default
``runs`` (5) and ``warmup`` (1), ``instructions`` with one pair after one warm-up round
(a count does not vary: one pair is what it needs). Each trial records the speed-up; the
score at noise floors 1.05 and 1.15 follows from it (above 0 exactly when the speed-up
is above the floor). *loaded* runs the trials beside two processes that keep both CPUs
busy all the time; *idle* beside nothing.

The true speed-up of a scenario is known from the work: every mode's figure is ``a + b·n``
(``a`` the interpreter's start, ``b`` one iteration), so with ``a`` and ``b`` measured
idle before the trials (the median of three runs of ``n = 0`` and of the full ``n``), a
candidate doing ``n / s`` has the true ratio ``(a + b·n) / (a + b·n / s)``. The table
gives each measured ratio over the true one.

The targets (exit status 1 when one is missed): ``instructions`` spreads at most 1 %
across trials, loaded or not; ``cpu`` under load credits identical code in 0 trials at a
noise floor of 1.05 and detects 1.25× in all but at most one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import GIT_ENV

from repogym.graders import perf_measure
from repogym.graders.perf import PerfGrader
from repogym.runner import Runner
from repogym.task import parse_task
from repogym.workspace import Workspace

SCENARIOS = {"identical": 1.0, "1.10x": 1.10, "1.25x": 1.25, "2x": 2.0}
FLOORS = (1.05, 1.15)
MODES = ("wall", "cpu", "instructions")
LOADS = ("idle", "loaded")
# Loop iterations: about 0.3 s of work for the clocks, about 0.03 s for Callgrind (which
# runs it some fifty times slower).
ITERATIONS = {"wall": 8_500_000, "cpu": 8_500_000, "instructions": 500_000}
BENCH = """\
from pathlib import Path


def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


print(spin(int(Path("n.txt").read_text())) % 7)
"""
COMMAND = f"{shlex.quote(sys.executable)} bench.py"


def task_text(mode: str) -> str:
    runs, warmup = (1, 1) if mode == "instructions" else (5, 1)
    return (
        f"version: 1\ntype: perf\nperf:\n  command: {json.dumps(COMMAND)}\n  timing: {mode}\n"
        f"  runs: {runs}\n  warmup: {warmup}\n  noise_floor: {FLOORS[0]}\n  min_speedup: 4\n"
    )


def make_repo(root: Path, base_n: int, candidate_n: int, mode: str) -> Path:
    root.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    files = {".repogym.yml": task_text(mode), "bench.py": BENCH, "n.txt": f"{base_n}\n"}
    for path, text in files.items():
        (root / path).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    (root / "n.txt").write_text(f"{candidate_n}\n")
    return root


def one_figure(mode: str, n: int, scratch: Path) -> float:
    """One run's figure of the benchmark doing ``n`` iterations, measured as the grader
    measures it (for the calibration)."""
    tree = scratch / f"calibrate-{mode}-{n}"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "bench.py").write_text(BENCH)
    (tree / "n.txt").write_text(f"{n}\n")
    runner = Runner()
    command = COMMAND if mode == "wall" else perf_measure.wrapped(COMMAND, mode, in_container=False)
    result = runner.run(command, tree, timeout=600)
    assert result.ok, result.stdout + result.stderr
    if mode == "wall":
        return result.duration
    figures = perf_measure.taken(result)[1]
    assert figures is not None, result.stdout + result.stderr
    value = figures.cpu_ns / 1e9 if mode == "cpu" else figures.instructions
    assert value, figures
    return float(value)


def true_ratio(a: float, full: float, speedup: float) -> float:
    """The ratio of ``a + b·n`` to ``a + b·n / speedup``, given ``a`` and ``a + b·n``."""
    return full / (a + (full - a) / speedup)


def work(trials: int, modes: list[str], scratch: Path) -> None:
    """The worker: calibrate each mode, then grade each scenario ``trials`` times; one
    JSON line per trial."""
    for mode in modes:
        n = ITERATIONS[mode]
        one_figure(mode, 0, scratch)  # the interpreter's caches, warm
        start = statistics.median(one_figure(mode, 0, scratch) for _ in range(3))
        full = statistics.median(one_figure(mode, n, scratch) for _ in range(3))
        for name, speedup in SCENARIOS.items():
            root = make_repo(scratch / mode / name, n, round(n / speedup), mode)
            task = parse_task(task_text(mode))
            workspace = Workspace.open(root, base="main", task=task)
            truth = true_ratio(start, full, speedup)
            for trial in range(trials):
                component = PerfGrader().grade(workspace)
                record = {
                    "mode": mode,
                    "scenario": name,
                    "trial": trial,
                    "true": truth,
                    "speedup": component.details.get("speedup"),
                    "baseline": component.details.get("baseline_times"),
                    "interval": component.details.get("interval"),
                    "messages": list(component.messages[:1]),
                }
                print(json.dumps(record), flush=True)


def spin_forever() -> None:
    while True:
        pass


def run_load(load: str, trials: int, modes: list[str]) -> list[dict[str, Any]]:
    """Every trial of ``modes`` under ``load``, graded in a worker process beside it."""
    me = [sys.executable, __file__]
    spinners = [subprocess.Popen([*me, "--spin"]) for _ in range(2 if load == "loaded" else 0)]
    records = []
    try:
        worker = subprocess.Popen(
            [*me, "--worker", "--trials", str(trials), "--modes", ",".join(modes)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        for line in worker.stdout:
            record = json.loads(line)
            record["load"] = load
            records.append(record)
            print(json.dumps(record), file=sys.stderr, flush=True)
        if worker.wait() != 0:
            raise SystemExit(f"the {load} worker failed")
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return records


def table(records: list[dict[str, Any]], trials: int) -> list[str]:
    """The Markdown table of the trials: false credit, detection and the ratio's spread."""
    lines = [
        "| mode | load | scenario (true ratio) | > 0 at floor 1.05 | > 0 at floor 1.15 "
        "| measured / true: min, median, max |",
        "| --- | --- | --- | --: | --: | --- |",
    ]
    for mode in MODES:
        for load in LOADS:
            for name in SCENARIOS:
                group = [
                    r
                    for r in records
                    if (r["mode"], r["load"], r["scenario"]) == (mode, load, name)
                ]
                if not group:
                    continue
                speedups = [float(r["speedup"] or 0) for r in group]
                credit = [sum(s > floor for s in speedups) for floor in FLOORS]
                off = sorted(s / r["true"] for s, r in zip(speedups, group, strict=True))
                lines.append(
                    f"| {mode} | {load} | {name} ({group[0]['true']:.3f}) "
                    f"| {credit[0]}/{len(group)} | {credit[1]}/{len(group)} "
                    f"| {off[0]:.3f}, {statistics.median(off):.3f}, {off[-1]:.3f} |"
                )
    return lines


def targets(records: list[dict[str, Any]]) -> list[str]:
    """Each target and whether it was met (a line each; ``MISSED`` when not)."""
    said = []

    def group(mode: str, load: str, name: str) -> list[float]:
        return [
            float(r["speedup"] or 0)
            for r in records
            if (r["mode"], r["load"], r["scenario"]) == (mode, load, name)
        ]

    for load in LOADS:
        counts = [
            c
            for r in records
            if (r["mode"], r["load"]) == ("instructions", load)
            for c in r["baseline"]
        ]
        if counts:
            spread = max(counts) / min(counts) - 1
            ok = "met" if spread <= 0.01 else "MISSED"
            said.append(f"instructions, {load}: counts spread {spread:.3%} (target 1 %): {ok}")
    identical, faster = group("cpu", "loaded", "identical"), group("cpu", "loaded", "1.25x")
    if identical:
        credited = sum(s > FLOORS[0] for s in identical)
        ok = "met" if credited == 0 else "MISSED"
        said.append(
            f"cpu, loaded: identical code credited {credited}/{len(identical)} (target 0): {ok}"
        )
    if faster:
        found = sum(s > FLOORS[0] for s in faster)
        ok = "met" if found >= len(faster) - len(faster) // 20 else "MISSED"
        said.append(f"cpu, loaded: 1.25x detected {found}/{len(faster)} (target 19/20): {ok}")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--loads", default=",".join(LOADS))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spin", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.spin:
        spin_forever()
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="repogym-perf-noise-") as scratch:
            Path(scratch).chmod(0o711)  # the sandbox user runs the calibration in it
            work(args.trials, modes, Path(scratch))
        return 0
    records = []
    for load in [x for x in args.loads.split(",") if x]:
        records += run_load(load, args.trials, modes)
    print("\n".join(table(records, args.trials)))
    said = targets(records)
    print("\n".join(said))
    return 1 if any("MISSED" in line for line in said) else 0


if __name__ == "__main__":
    sys.exit(main())
