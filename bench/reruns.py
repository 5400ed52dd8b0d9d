"""Benchmark: what running failing tests again costs (issue 47), measured in this run.

On examples/bugfix with its solution, two grades are timed in turns, in processes of their
own, each with ``tests.reruns: 2`` and with ``reruns: 0``:

1. **Every test passes**: nothing is run again, so the two cost the same (target: the
   ratio at most 1.05, the noise of a shared machine).
2. **One regression test fails one run in two** (the solution's ``slugify`` gets
   ``"Plain Title 2"`` wrong the first time it runs in a copy of the tree): the reruns'
   extra time against what the reruns themselves take, timed alone in the same run (the
   failing id run twice at the head, where it passes on the second, and twice at
   the base, where it always passes, each side in a copy with its ``setup``): target, at
   most their own time plus 0.2 s.

The machine is shared and noisy: each figure is the median over the rounds.
Run ``python bench/reruns.py [--rounds N]``; exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import json
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
from repogym.graders.tests.base_runs import BASE  # noqa: E402
from repogym.graders.tests.run import GRADED, run_tests  # noqa: E402
from repogym.workspace import Workspace  # noqa: E402

ASCII = "tests/test_slugify.py::test_ascii"
# Wrong for "Plain Title 2" the first time it runs in a copy: the mark it leaves is kept.
FLAKY = """

import os as _os

_slugify = slugify


def slugify(text, *args, **kwargs):  # noqa: F811
    if text == "Plain Title 2" and not _os.path.exists(".ran"):
        open(".ran", "w").close()
        return "wrong"
    return _slugify(text, *args, **kwargs)
"""


def _grade(repo: Path, reruns: int) -> tuple[float, dict[str, object]]:
    """Seconds of one ``repogym grade`` with ``reruns``, and its tests' details."""
    # The task is read from the base, not the work tree: the variant is a file of its own.
    text = (repo / ".repogym.yml").read_text()
    task = repo.parent / f"task-{reruns}.yml"
    task.write_text(text.replace("  timeout: 120\n", f"  timeout: 120\n  reruns: {reruns}\n"))
    out = repo.parent / "report.json"
    command = [sys.executable, "-m", "repogym", "grade", "--base", "main", "--task", str(task)]
    began = time.monotonic()
    done = subprocess.run(
        [*command, "--json", str(out)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seconds = time.monotonic() - began
    expect(done.returncode in (0, 1), f"the grade failed: {done.stderr[-500:]}")
    report = json.loads(out.read_text())
    tests = next(c for c in report["components"] if c["name"] == "tests")
    return seconds, tests["details"]


def _reruns_alone(repo: Path) -> float:
    """What the reruns of the flaky grade take by themselves: its failing id twice at the
    head and twice at the base, each side in a fresh copy."""
    workspace = Workspace.open(repo, base="main")
    config = workspace.task.tests
    assert config is not None
    runner = workspace.command_runner()
    began = time.monotonic()
    for sides in (GRADED, BASE):
        run_tests(workspace, config, runner, sides=sides, times=2, select=(ASCII,))
    return time.monotonic() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repogym-bench-") as temp:
        repo = build_example_repo("bugfix", Path(temp, "repo"))
        passing = []
        for _ in range(args.rounds):
            on, _ = _grade(repo, 2)
            off, _ = _grade(repo, 0)
            passing.append(on / off)
        core = repo / "src/slugify/core.py"
        core.write_text(core.read_text() + FLAKY)
        extra, alone = [], []
        for _ in range(args.rounds):
            on, details = _grade(repo, 2)
            off, off_details = _grade(repo, 0)
            said = json.dumps(details.get("reruns"))
            expect('"made_flaky"' in said, f"not made flaky: {said}")
            expect("reruns" not in off_details, "reruns: 0 ran tests again")
            extra.append(on - off)
            alone.append(_reruns_alone(repo))
    ratio, more, own = median(passing), median(extra), median(alone)
    print(f"every test passing, reruns 2 over reruns 0 (median of {args.rounds}): {ratio:.3f}x")
    print(f"one test flaky: reruns add {more:.2f} s; the reruns alone take {own:.2f} s")
    met = ratio <= 1.05 and more <= own + 0.2
    print(
        f"targets: at most 1.05x, and at most their own time + 0.2 s: {'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
