"""Benchmark: many small grades at once (issue 23), by each executor of ``grade_many``.

200 jobs of one tiny repository (``examples/bugfix``: a few pytest tests, a bugfix task
with lists of ids), each a patch at the base: the reference fix, a wrong fix and the empty
patch in turn. The same jobs go through ``Local(1)`` (one after another in this process),
``Local(2)`` (two worker processes) and ``Ray()`` on a local Ray of 2 CPUs bound to
127.0.0.1 (started before the clock starts: a cluster is up before a batch comes). For
each: the wall time from the first job handed over to the last line read, and jobs per
second. Then, from the lines themselves:

- **engine per job**: a job's ``timings.total`` less the commands it ran (their
  ``duration``): the clone, the patch, the snapshot, the graders' own work, the report.
  Taken from ``Local(1)``'s lines, where nothing else runs beside a job.
- **executor per job**: what a worker slot spends on a job beyond grading it,
  ``(wall x slots - sum of the jobs' totals) / jobs``: handing the job over, pickling
  its line, starting workers.

Every executor's lines must equal ``Local(1)``'s (timings aside), and the fix must pass
and the others fail, or the run stops: a fast wrong answer proves nothing.

Targets on this 2-core machine: ``Local(2)`` at least 1.7x the throughput of ``Local(1)``;
Ray within 15 % of ``Local(2)``; the engine at most 0.1 s a job. Run
``python bench/batch.py [--jobs N] [--no-ray]``; it exits 1 when a target is missed.

As root, the commands run as the sandbox user (as in CI); ``REPOGYM_SANDBOX=off`` runs
them as root instead.

On this machine (2 cores, as root, issue 23), one run:

| executor | wall | jobs/s | vs Local(1) | executor per job |
| --- | --: | --: | --: | --: |
| Local(1) | 69.3 s | 2.88 | 1.00x | 0 ms |
| Local(2) | 35.4 s | 5.65 | 1.96x | 5 ms |
| Ray, 2 CPUs | 35.2 s | 5.69 | 1.97x | 6 ms |

A job spends 0.275 s in its commands (one pytest run: a task with lists of ids needs no
runs at the base) and 0.071 s in the engine (the clone sharing the repository's objects,
the patch, the snapshot, the graders, the report): Local(2) is
1.96x Local(1), Ray 1.01x Local(2), the engine 0.071 s a job (targets 1.7x, 0.85x,
0.1 s).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from _common import GIT_ENV, expect

import repogym
from repogym._demo import build_example_repo
from repogym.batch import Local, Ray

TARGET_TWO = 1.7  # Local(2) over Local(1), in jobs per second
TARGET_RAY = 0.85  # Ray over Local(2)
TARGET_ENGINE = 0.1  # seconds a job, commands aside
VARYING = ("timings", "duration", "seconds", "output_tail", "command")


def make_jobs(root: Path, count: int) -> list[dict[str, Any]]:
    repo = build_example_repo("bugfix", root / "bugfix")
    fix = subprocess.run(
        ["git", "diff", "main", "submission"],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    patches = {
        "fix": fix,
        "wrong": fix.replace("unicodedata", "unicodedatum"),  # fails to import: all fail
        "empty": "",
    }
    for name, text in patches.items():
        (root / f"{name}.patch").write_text(text)
    kinds = list(patches)
    return [
        {
            "id": f"{n}-{kinds[n % 3]}",
            "repo": "bugfix",
            "base": "main",
            "patch": f"{kinds[n % 3]}.patch",
        }
        for n in range(count)
    ]


def command_seconds(line: dict[str, Any]) -> float:
    """The time the job's commands took, as the report records each one."""
    total = 0.0
    for component in line.get("components", []):
        for value in _walk(component.get("details", {})):
            if isinstance(value, dict) and "exit_code" in value and "duration" in value:
                total += float(value["duration"] or 0)
    return total


def _walk(value: Any) -> Iterable[Any]:
    yield value
    if isinstance(value, dict):
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child)


def comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def run(name: str, jobs: list[dict[str, Any]], executor: Local | Ray, root: Path) -> dict[str, Any]:
    start = time.perf_counter()
    lines = {line["id"]: line for line in repogym.grade_many(jobs, executor=executor, root=root)}
    wall = time.perf_counter() - start
    expect(len(lines) == len(jobs), f"{name}: {len(lines)} lines for {len(jobs)} jobs")
    for job_id, line in lines.items():
        expect("error" not in line, f"{name}: {job_id}: {line.get('error')}")
        expect(
            line["passed"] is job_id.endswith("-fix"), f"{name}: {job_id} passed={line['passed']}"
        )
    return {"name": name, "wall": wall, "lines": lines}


def executor_cost(result: dict[str, Any], slots: int) -> float:
    totals = sum(line["timings"]["total"] for line in result["lines"].values())
    return (result["wall"] * slots - totals) / len(result["lines"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="how many jobs (default 200)")
    parser.add_argument("--no-ray", action="store_true", help="leave Ray out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repogym-bench-batch-") as holder:
        root = Path(holder)
        jobs = make_jobs(root, args.jobs)
        one = run("Local(1)", jobs, Local(1), root)
        two = run("Local(2)", jobs, Local(2), root)
        results = [(one, 1), (two, 2)]
        if not args.no_ray:
            import ray

            ray.init(
                num_cpus=2,
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                log_to_driver=False,
            )
            try:
                results.append((run("Ray, 2 CPUs", jobs, Ray(), root), 2))
            finally:
                ray.shutdown()
    reference = {i: comparable(line) for i, line in one["lines"].items()}
    for result, _ in results[1:]:
        same = {i: comparable(line) for i, line in result["lines"].items()} == reference
        expect(same, f"{result['name']}: its lines differ from Local(1)'s")
    engine = [line["timings"]["total"] - command_seconds(line) for line in one["lines"].values()]
    engine_mean = sum(engine) / len(engine)
    print(f"{args.jobs} jobs of examples/bugfix (a fix, a wrong fix, the empty patch in turn)\n")
    print("| executor | wall | jobs/s | vs Local(1) | executor per job |")
    print("| --- | --: | --: | --: | --: |")
    for result, slots in results:
        rate = len(result["lines"]) / result["wall"]
        print(
            f"| {result['name']} | {result['wall']:.1f} s | {rate:.2f} | "
            f"{one['wall'] / result['wall']:.2f}x | {executor_cost(result, slots) * 1000:.0f} ms |"
        )
    commands = sum(command_seconds(line) for line in one["lines"].values()) / len(engine)
    print(
        f"\nper job in Local(1): {commands:.3f} s of commands, {engine_mean:.3f} s of engine "
        f"(median {sorted(engine)[len(engine) // 2]:.3f} s)"
    )
    missed = []
    if one["wall"] / two["wall"] < TARGET_TWO:
        missed.append(f"Local(2) {one['wall'] / two['wall']:.2f}x Local(1), target {TARGET_TWO}x")
    if len(results) == 3 and two["wall"] / results[2][0]["wall"] < TARGET_RAY:
        ratio = two["wall"] / results[2][0]["wall"]
        missed.append(f"Ray {ratio:.2f}x Local(2)'s throughput, target {TARGET_RAY}x")
    if engine_mean > TARGET_ENGINE:
        missed.append(f"engine {engine_mean:.3f} s a job, target {TARGET_ENGINE} s")
    for problem in missed:
        print(f"MISSED: {problem}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
