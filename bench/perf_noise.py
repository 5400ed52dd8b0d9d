"""How far each of the perf grader's timings can be trusted on a noisy machine (issue 24).

Run as ``python bench/perf_noise.py [--trials N] [--modes wall,cpu,instructions]
[--loads idle,loaded] [--runs N|auto]``, or ``--from FILE...`` to make the table again
from the trials earlier runs wrote to stderr (one JSON line each), filtered by
``--modes``. Two real git repositories per scenario hold the same CPU-bound Python
benchmark (a loop sized by ``n.txt``); the submission changes ``n.txt`` only:

- *identical*: the same work, so a trial that scores above 0 is false credit;
- *1.10×, 1.25×, 2×*: the candidate does that much less loop work; a trial that scores
  above 0 detected it.

Each trial is one real ``PerfGrader().grade()``: ``wall`` and ``cpu`` with ``--runs``
pairs (default 5, the spec's; ``auto`` adds pairs until the interval decides) after one
warm-up round, ``instructions`` with one pair after one warm-up round (a count does not
vary: one pair is what it needs). Each trial records the speed-up and the pairs made;
the score at noise floors 1.05 and 1.15 follows from the speed-up (above 0 exactly when
it is above the floor). *loaded* runs the trials beside two processes that keep both
CPUs busy all the time; *idle* beside nothing.

The true speed-up of a scenario is known from the work: every mode's figure is ``a + b·n``
(``a`` the interpreter's start, ``b`` one iteration), so with ``a`` and ``b`` measured
before the trials (the median of three runs of ``n = 0`` and of the full ``n``), a
candidate doing ``n / s`` has the true ratio ``(a + b·n) / (a + b·n / s)``. The table
gives each measured ratio over the true one.

The targets (exit status 1 when one is missed): ``instructions`` spreads at most 1 %
across trials, loaded or not; ``cpu`` with ``runs: auto`` under load credits identical
code in 0 trials at a noise floor of 1.05 and detects 1.25× in all but at most one in 20.
A fixed number of pairs cannot promise that on a machine whose speed drifts (the fastest
of 5 runs of one side can fall in a fast spell the other side missed): its lines are
printed as figures.
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

from repogym.graders.perf import measure as perf_measure
from repogym.graders.perf.grader import PerfGrader
from repogym.run.host import Runner
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


def task_text(mode: str, runs: str = "5") -> str:
    runs, warmup = ("1", 1) if mode == "instructions" else (runs, 1)
    return (
        f"version: 1\ntype: perf\nperf:\n  command: {json.dumps(COMMAND)}\n  timing: {mode}\n"
        f"  runs: {runs}\n  warmup: {warmup}\n  noise_floor: {FLOORS[0]}\n  min_speedup: 4\n"
    )


def make_repo(root: Path, base_n: int, candidate_n: int, mode: str, runs: str) -> Path:
    root.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    files = {".repogym.yml": task_text(mode, runs), "bench.py": BENCH, "n.txt": f"{base_n}\n"}
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
    command = COMMAND if mode == "wall" else runner.measured(COMMAND, mode)
    result = runner.run(command, tree, timeout=600)
    assert result.ok, result.stdout + result.stderr
    if mode == "wall":
        return result.duration
    figures = perf_measure.taken(result)[1]
    assert figures is not None, result.stdout + result.stderr
    value = figures.cpu_ns if mode == "cpu" else figures.instructions
    assert value, figures
    return value / 1e9 if mode == "cpu" else float(value)


def true_ratio(a: float, full: float, speedup: float) -> float:
    """The ratio of ``a + b·n`` to ``a + b·n / speedup``, given ``a`` and ``a + b·n``."""
    return full / (a + (full - a) / speedup)


def work(trials: int, modes: list[str], runs: str, scratch: Path) -> None:
    """The worker: calibrate each mode, then grade each scenario ``trials`` times; one
    JSON line per trial."""
    for mode in modes:
        n = ITERATIONS[mode]
        one_figure(mode, 0, scratch)  # the interpreter's caches, warm
        start = statistics.median(one_figure(mode, 0, scratch) for _ in range(3))
        full = statistics.median(one_figure(mode, n, scratch) for _ in range(3))
        for name, speedup in SCENARIOS.items():
            root = make_repo(scratch / mode / name, n, round(n / speedup), mode, runs)
            task = parse_task(task_text(mode, runs))
            workspace = Workspace.open(root, base="main", task=task)
            truth = true_ratio(start, full, speedup)
            for trial in range(trials):
                component = PerfGrader().grade(workspace)
                record = {
                    "mode": mode,
                    "runs": "1" if mode == "instructions" else runs,
                    "scenario": name,
                    "trial": trial,
                    "true": truth,
                    "speedup": component.details.get("speedup"),
                    "baseline": component.details.get("baseline_times"),
                    "candidate": component.details.get("candidate_times"),
                    "interval": component.details.get("interval"),
                    "messages": list(component.messages[:1]),
                }
                print(json.dumps(record), flush=True)


def spin_forever() -> None:
    while True:
        pass


def run_load(load: str, trials: int, modes: list[str], runs: str) -> list[dict[str, Any]]:
    """Every trial of ``modes`` under ``load``, graded in a worker process beside it."""
    me = [sys.executable, __file__]
    spinners = [subprocess.Popen([*me, "--spin"]) for _ in range(2 if load == "loaded" else 0)]
    records = []
    try:
        worker = subprocess.Popen(
            [*me, "--worker", "--trials", str(trials), "--modes", ",".join(modes), "--runs", runs],
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


def table(records: list[dict[str, Any]]) -> list[str]:
    """The Markdown table of the trials: false credit, detection, the ratio's spread and
    the pairs made (``runs: auto`` makes as many as the verdict needs)."""
    lines = [
        "| mode | runs | load | scenario (true ratio) | > 0 at floor 1.05 | > 0 at floor 1.15 "
        "| measured / true: min, median, max | pairs: median, max | interval misses the truth |",
        "| --- | --- | --- | --- | --: | --: | --- | --- | --: |",
    ]
    keys = sorted(
        {(r["mode"], r["runs"]) for r in records}, key=lambda k: (MODES.index(k[0]), k[1])
    )
    for mode, runs in keys:
        for load in LOADS:
            for name in SCENARIOS:
                group = [
                    r
                    for r in records
                    if (r["mode"], r["runs"], r["load"], r["scenario"]) == (mode, runs, load, name)
                ]
                if not group:
                    continue
                speedups = [float(r["speedup"] or 0) for r in group]
                credit = [sum(s > floor for s in speedups) for floor in FLOORS]
                off = sorted(s / r["true"] for s, r in zip(speedups, group, strict=True))
                pairs = [r["interval"]["pairs"] for r in group if r["interval"]]
                bounded = [r for r in group if r["interval"] and r["interval"]["pairs"] > 1]
                missed = sum(
                    not r["interval"]["low"] <= r["true"] <= r["interval"]["high"] for r in bounded
                )
                misses = f"{missed}/{len(bounded)}" if bounded else "none (1 pair)"
                lines.append(
                    f"| {mode} | {runs} | {load} | {name} ({group[0]['true']:.3f}) "
                    f"| {credit[0]}/{len(group)} | {credit[1]}/{len(group)} "
                    f"| {off[0]:.3f}, {statistics.median(off):.3f}, {off[-1]:.3f} "
                    f"| {statistics.median(pairs):g}, {max(pairs)} | {misses} |"
                )
    return lines


def targets(records: list[dict[str, Any]]) -> list[str]:
    """Each target and whether it was met (a line each; ``MISSED`` when not)."""
    said = []

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
    for runs in sorted({r["runs"] for r in records if r["mode"] == "cpu"}):
        said += cpu_targets(records, runs)
    return said


def cpu_targets(records: list[dict[str, Any]], runs: str) -> list[str]:
    """The ``cpu`` targets, under load, for the trials made with ``runs``. They are held
    against ``runs: auto`` (the setting docs/task.md names for a floor as close as 1.05);
    with a fixed number of pairs the lines are figures, not targets."""

    def speedups(name: str) -> list[float]:
        return [
            float(r["speedup"] or 0)
            for r in records
            if (r["mode"], r["runs"], r["load"], r["scenario"]) == ("cpu", runs, "loaded", name)
        ]

    said = []
    held = runs == "auto"
    identical, faster = speedups("identical"), speedups("1.25x")
    if identical:
        credited = sum(s > FLOORS[0] for s in identical)
        ok = ("met" if credited == 0 else "MISSED") if held else "a figure, no target"
        said.append(
            f"cpu, runs {runs}, loaded: identical code credited {credited}/{len(identical)} "
            f"(target 0 with runs auto): {ok}"
        )
    if faster:
        found = sum(s > FLOORS[0] for s in faster)
        enough = found >= len(faster) - len(faster) // 20
        ok = ("met" if enough else "MISSED") if held else "a figure, no target"
        said.append(
            f"cpu, runs {runs}, loaded: 1.25x detected {found}/{len(faster)} "
            f"(target 19/20 with runs auto): {ok}"
        )
    return said


def saved(paths: list[str]) -> list[dict[str, Any]]:
    """The trials of earlier runs: the JSON lines this bench writes to stderr."""
    records = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            record.setdefault("runs", "1" if record["mode"] == "instructions" else "5")
            records.append(record)
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--loads", default=",".join(LOADS))
    parser.add_argument("--runs", default="5", help="perf.runs for wall and cpu: N or auto")
    parser.add_argument(
        "--from",
        dest="saved",
        nargs="+",
        metavar="FILE",
        help="make the table from the trials earlier runs wrote to stderr, running none",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spin", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if args.spin:
        spin_forever()
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="repogym-perf-noise-") as scratch:
            Path(scratch).chmod(0o711)  # the sandbox user runs the calibration in it
            work(args.trials, modes, args.runs, Path(scratch))
        return 0
    records = [r for r in saved(args.saved) if r["mode"] in modes] if args.saved else []
    for load in [x for x in args.loads.split(",") if x and not args.saved]:
        records += run_load(load, args.trials, modes, args.runs)
    print("\n".join(table(records)))
    said = targets(records)
    print("\n".join(said))
    return 1 if any("MISSED" in line for line in said) else 0


if __name__ == "__main__":
    sys.exit(main())
