"""How PerfGrader's defaults stand up to a noisy machine.

Run as ``python bench/perf_noise.py [--trials N]``. Two real git repositories hold the
same CPU-bound Python benchmark (a loop of about 0.3 s, sized by ``n.txt``):

- *identical*: the submission does not change it, so no trial should score above 0;
- *half work*: the submission halves ``n.txt``, so every trial should find a speed-up
  of at least 1.7×.

Each trial is one real ``PerfGrader().grade()`` with the default ``runs`` (5) and
``warmup`` (1) and ``timing: wall``, while another process loads a core half the time
(50 ms busy, 50 ms idle). The grading happens in a worker process, a sibling of the load:
the runner kills every child of the grading process that is not the command it runs.
The process exits with status 1 when either goal is missed.
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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import GIT_ENV, half_load

from repogym.graders.perf import PerfGrader
from repogym.task import parse_task
from repogym.workspace import Workspace

WORK_SECONDS = 0.3
DETECT = 1.7
LOOP = """\
def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
"""
BENCH = LOOP + '\nfrom pathlib import Path\n\nprint(spin(int(Path("n.txt").read_text())) % 7)\n'
# The benchmark runs with this interpreter, not whichever `python` PATH finds first: its
# start-up is part of every run and so sets how far under 2x half the work can be.
COMMAND = json.dumps(f"{shlex.quote(sys.executable)} bench.py")  # JSON is YAML
TASK = f"version: 1\ntype: perf\nperf:\n  command: {COMMAND}\n  min_speedup: 4\n"


def loop_iterations(seconds: float) -> int:
    """Iterations of the benchmark's own loop that take about ``seconds`` here."""
    namespace: dict[str, Any] = {}
    exec(LOOP, namespace)
    n = 200_000
    fastest = min(_timed(namespace["spin"], n) for _ in range(5))
    return int(n * seconds / fastest)


def _timed(spin: Callable[[int], int], n: int) -> float:
    start = time.perf_counter()
    spin(n)
    return time.perf_counter() - start


def make_repo(root: Path, base_n: int, candidate_n: int) -> Path:
    root.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    for path, text in {".repogym.yml": TASK, "bench.py": BENCH, "n.txt": f"{base_n}\n"}.items():
        (root / path).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    (root / "n.txt").write_text(f"{candidate_n}\n")
    return root


def work(trials: int, n: int, scratch: Path) -> None:
    """The worker: grade each scenario ``trials`` times; one JSON line per trial."""
    task = parse_task(TASK)
    scenarios = {"identical": n, "half": n // 2}
    for name, candidate_n in scenarios.items():
        root = make_repo(scratch / name, n, candidate_n)
        workspace = Workspace.open(root, base="main", task=task)
        for trial in range(trials):
            start = time.monotonic()
            component = PerfGrader().grade(workspace)
            record = {
                "scenario": name,
                "trial": trial,
                "score": component.score,
                "speedup": component.details.get("speedup"),
                "baseline_min": component.details.get("baseline_min"),
                "candidate_min": component.details.get("candidate_min"),
                "executions": 2 * component.details["warmup"]
                + len(component.details["baseline_times"])
                + len(component.details["candidate_times"]),
                "seconds": time.monotonic() - start,
                "messages": list(component.messages[:1]),
            }
            print(json.dumps(record), flush=True)


def report(records: list[dict[str, Any]], trials: int) -> bool:
    identical = [r for r in records if r["scenario"] == "identical"]
    half = [r for r in records if r["scenario"] == "half"]
    false_alarms = sum(float(r["score"]) > 0 for r in identical)
    detected = sum(float(r["speedup"] or 0) >= DETECT for r in half)
    for name, group in (("identical", identical), ("half work", half)):
        speedups = sorted(float(r["speedup"] or 0) for r in group)
        mins = [float(r["baseline_min"] or 0) for r in group]
        print(
            f"{name:>9}: speed-up min {speedups[0]:.3f}, median {statistics.median(speedups):.3f}, "
            f"max {speedups[-1]:.3f}; baseline fastest run median {statistics.median(mins):.3f} s"
        )
    executions = {r["executions"] for r in records}
    seconds = statistics.mean(float(r["seconds"]) for r in records)
    print(f"identical: {false_alarms} of {trials} trials scored above 0 (goal: 0)")
    print(f"half work: {detected} of {trials} trials found >= {DETECT}x (goal: {trials})")
    print(f"benchmark executions per trial: {sorted(executions)}; {seconds:.1f} s per trial")
    return false_alarms == 0 and detected == trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--no-load", action="store_true", help="run without the half load")
    parser.add_argument("--worker", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        half_load()
    if args.worker is not None:
        with tempfile.TemporaryDirectory(prefix="repogym-perf-noise-") as scratch:
            work(args.trials, args.worker, Path(scratch))
        return 0
    n = loop_iterations(WORK_SECONDS)
    print(f"loop of {n} iterations (~{WORK_SECONDS} s); {args.trials} trials per scenario")
    me = [sys.executable, __file__]
    loader = None if args.no_load else subprocess.Popen([*me, "--load"])
    try:
        worker = subprocess.Popen(
            [*me, "--worker", str(n), "--trials", str(args.trials)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        records = []
        for line in worker.stdout:
            records.append(json.loads(line))
            print(line.rstrip(), flush=True)
        if worker.wait() != 0:
            return 2
    finally:
        if loader is not None:
            loader.kill()
            loader.wait()
    return 0 if report(records, args.trials) else 1


if __name__ == "__main__":
    sys.exit(main())
