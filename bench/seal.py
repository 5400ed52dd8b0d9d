"""Benchmark: what sealing a command costs (issue 43), against the same command unsealed,
both measured in this run.

1. **A command**: ``true`` run by the host runner as a sandbox uid, sealed
   (bubblewrap's namespaces and view, the task's limits as a cgroup) and unsealed
   (``REPOGYM_SEAL=off``: the uid and its clean-up only), alternating. Target: the seal
   adds at most 0.05 s a command.
2. **A grade**: ``repogym grade`` of ``examples/bugfix`` with its solution, in a process of
   its own, sealed and unsealed, alternating. Target: at most 1.10x.

Root only (a sandbox uid needs it), with ``bwrap`` installed. The machine is shared and
noisy: each figure is the median of interleaved rounds, and the ratio is what counts.
Run ``python bench/seal.py [--rounds N]``; it exits 1 when a figure misses its target.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import expect, median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repogym._demo import build_example_repo  # noqa: E402
from repogym.runner import Runner  # noqa: E402
from repogym.sandbox import seal  # noqa: E402
from repogym.sandbox.cgroup import Caps  # noqa: E402

COMMAND_TARGET = 0.05  # seconds the seal may add to a command
GRADE_TARGET = 1.10  # ratio of a whole grade, sealed over unsealed


def _sealed(on: bool) -> None:
    if on:
        os.environ.pop(seal.SWITCH, None)
    else:
        os.environ[seal.SWITCH] = "off"


def command_cost(rounds: int) -> dict[str, float]:
    """Median seconds of one ``true``, sealed and unsealed."""
    # Inside a directory of the grader's: the uid's clean-up removes what it owns at the
    # top of /tmp.
    holder = Path(tempfile.mkdtemp(prefix="repogym-bench-seal-"))
    holder.chmod(0o711)
    tree = holder / "tree"
    tree.mkdir()
    runner = Runner(limits=Caps(memory=4 << 30, pids=1024, cpus=2.0))
    times: dict[str, list[float]] = {"sealed": [], "unsealed": []}
    for n in range(rounds):
        for side in ("sealed", "unsealed") if n % 2 == 0 else ("unsealed", "sealed"):
            _sealed(side == "sealed")
            start = time.perf_counter()
            result = runner.run("true", tree, timeout=60, writable=[tree])
            times[side].append(time.perf_counter() - start)
            expect(result.ok, f"`true` failed {side}: {result.tail()}")
    _sealed(True)
    return {side: median(values) for side, values in times.items()}


def grade_cost(rounds: int) -> dict[str, float]:
    """Median seconds of ``repogym grade`` of the bugfix example's solution."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-bench-seal-"))
    repo = build_example_repo("bugfix", holder / "bugfix", solution=True)
    times: dict[str, list[float]] = {"sealed": [], "unsealed": []}
    for n in range(rounds):
        for side in ("sealed", "unsealed") if n % 2 == 0 else ("unsealed", "sealed"):
            env = dict(os.environ)
            if side == "unsealed":
                env[seal.SWITCH] = "off"
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "repogym", "grade", "--base", "main"],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            times[side].append(time.perf_counter() - start)
            expect(done.returncode == 0, f"the grade failed {side}: {done.stdout[-400:]}")
            expect(("unsealed" in done.stderr) == (side == "unsealed"), "the seal's notice")
    return {side: median(values) for side, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds of a command")
    parser.add_argument("--grades", type=int, default=6, help="rounds of a grade")
    args = parser.parse_args()
    why = seal.unavailable()
    if why is not None:
        print(f"cannot measure the seal here: {why}", file=sys.stderr)
        return 2
    command = command_cost(args.rounds)
    added = command["sealed"] - command["unsealed"]
    print(
        f"a command: sealed {command['sealed']:.3f} s, unsealed {command['unsealed']:.3f} s "
        f"(median of {args.rounds}): +{added:.3f} s (target +{COMMAND_TARGET} s)"
    )
    grade = grade_cost(args.grades)
    ratio = grade["sealed"] / grade["unsealed"]
    print(
        f"the bugfix grade: sealed {grade['sealed']:.2f} s, unsealed {grade['unsealed']:.2f} s "
        f"(median of {args.grades}): {ratio:.3f}x (target {GRADE_TARGET}x)"
    )
    return 0 if added <= COMMAND_TARGET and ratio <= GRADE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
