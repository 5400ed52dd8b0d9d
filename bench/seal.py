"""Benchmark: what sealing a command costs (issue 43), against the same command unsealed,
both measured in this run; and what confining it by Landlock instead costs (the Action's
own container's mode, ``REPOGYM_SEAL=landlock``).

1. **A command**: ``true`` run by the host runner as a sandbox uid, sealed
   (bubblewrap's namespaces and view, the task's limits as a cgroup), confined (a
   Landlock ruleset, the same cgroup) and unsealed (``REPOGYM_SEAL=off``: the uid and its
   clean-up only), in turns. Target: each adds at most 0.05 s a command.
2. **A grade**: ``repogym grade`` of ``examples/bugfix`` with its solution, in a process of
   its own, the three ways in turns. Target: at most 1.10x.

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
from repogym.run.host import Runner  # noqa: E402
from repogym.sandbox import seal  # noqa: E402
from repogym.sandbox.cgroup import Caps  # noqa: E402

COMMAND_TARGET = 0.05  # seconds the seal may add to a command
GRADE_TARGET = 1.10  # ratio of a whole grade, sealed over unsealed


SIDES = ("sealed", "landlock", "unsealed")
SWITCHED = {"sealed": None, "landlock": "landlock", "unsealed": "off"}


def _order(n: int) -> tuple[str, ...]:
    """The sides in turn: each goes first as often as the others."""
    shift = n % len(SIDES)
    return SIDES[shift:] + SIDES[:shift]


def _mode(env: dict[str, str] | os._Environ[str], side: str) -> None:
    switched = SWITCHED[side]
    if switched is None:
        env.pop(seal.SWITCH, None)
    else:
        env[seal.SWITCH] = switched


def command_cost(rounds: int) -> dict[str, float]:
    """Median seconds of one ``true``, sealed and unsealed."""
    # Inside a directory of the grader's: the uid's clean-up removes what it owns at the
    # top of /tmp.
    holder = Path(tempfile.mkdtemp(prefix="repogym-bench-seal-"))
    holder.chmod(0o711)
    tree = holder / "tree"
    tree.mkdir()
    runner = Runner(limits=Caps(memory=4 << 30, pids=1024, cpus=2.0))
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for n in range(rounds):
        for side in _order(n):
            _mode(os.environ, side)
            start = time.perf_counter()
            result = runner.run("true", tree, timeout=60, writable=[tree])
            times[side].append(time.perf_counter() - start)
            expect(result.ok, f"`true` failed {side}: {result.tail()}")
    _mode(os.environ, "sealed")
    return {side: median(values) for side, values in times.items()}


def grade_cost(rounds: int) -> dict[str, float]:
    """Median seconds of ``repogym grade`` of the bugfix example's solution."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-bench-seal-"))
    repo = build_example_repo("bugfix", holder / "bugfix", solution=True)
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for n in range(rounds):
        for side in _order(n):
            env = dict(os.environ)
            _mode(env, side)
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
            expect(("Landlock" in done.stderr) == (side == "landlock"), "Landlock's notice")
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
    met = True
    command = command_cost(args.rounds)
    grade = grade_cost(args.grades)
    for side in ("sealed", "landlock"):
        added = command[side] - command["unsealed"]
        ratio = grade[side] / grade["unsealed"]
        print(
            f"a command: {side} {command[side]:.3f} s, unsealed {command['unsealed']:.3f} s "
            f"(median of {args.rounds}): +{added:.3f} s (target +{COMMAND_TARGET} s)"
        )
        print(
            f"the bugfix grade: {side} {grade[side]:.2f} s, unsealed "
            f"{grade['unsealed']:.2f} s (median of {args.grades}): {ratio:.3f}x "
            f"(target {GRADE_TARGET}x)"
        )
        met = met and added <= COMMAND_TARGET and ratio <= GRADE_TARGET
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
