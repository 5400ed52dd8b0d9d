"""Benchmark: what a grade of examples/bugfix costs with this checkout's code against a
reference commit's, both measured in this run (issue 44: pytest started with the base's
configuration and its guard plugin, ``setup`` checked; target at most 1.05x).

The reference is checked out into a temporary worktree (default ``fc9e220``, main before
issue 44's runner start); each round runs ``repogym grade`` of the example with its
solution once with each code, in turns, in processes of their own. The machine is shared
and noisy: the figure is the median of the per-round ratios.
Run ``python bench/grade_cost.py [--reference COMMIT] [--rounds N]``; exits 1 on a miss.
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

TARGET = 1.05


def _grade(code: Path, repo: Path) -> float:
    """Seconds of one ``repogym grade`` of ``repo`` with the package at ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "from repogym.cli import main; raise SystemExit(main())", "grade"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - began
    expect(done.returncode == 0, f"the solution did not pass with {code}: {done.stdout[-500:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default="fc9e220")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repogym-bench-") as temp:
        old = Path(temp, "reference")
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.reference],
            check=True,
            capture_output=True,
        )
        try:
            repo = build_example_repo("bugfix", Path(temp, "repo"))
            ratios, news, olds = [], [], []
            for _ in range(args.rounds):
                news.append(_grade(ROOT, repo))
                olds.append(_grade(old, repo))
                ratios.append(news[-1] / olds[-1])
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )
    ratio = median(ratios)
    here, there = median(news), median(olds)
    print(f"grade of examples/bugfix: {here:.2f} s here, {there:.2f} s at the reference")
    print(f"ratio, this code over {args.reference} (median of {args.rounds} pairs): {ratio:.3f}x")
    print(f"target: at most {TARGET:.2f}x: {'met' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
