"""Benchmark: what grading costs beyond the test command, now against a former version.

Two figures, each measured in this run against a reference from the same run:

1. **Large repository** (issue 9): a repository of 20,000 files with an ignored
   ``node_modules`` of 100,000 files. ``repogym grade`` of a one-file change, by this
   version and by the version given with ``--before`` (a git revision of this repository,
   default the commit before the integrity work), alternating. Target: this version adds
   at most 1.5 s.
2. **Small task**: ``examples/bugfix`` with its solution, graded in-process by
   :func:`repogym.grade` and by RepoEnv's Submit, against the task's test command run
   alone in a copy of the tree. Target: at most 0.3 s beyond the test command.

Run ``python bench/grade_overhead.py``; it exits 1 when a figure misses its target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import GIT_ENV, expect

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "0b24df0"  # main before the integrity work (issue 9)
TASK = """\
version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit} tests
  fail_to_pass: [tests/test_a.py::test_fixed]
  pass_to_pass: [tests/test_a.py::test_kept]
constraints:
  allowed_files: [pkg/**]
"""
TEST = """\
from pkg.m0000 import value


def test_fixed():
    assert value() == 1


def test_kept():
    assert True
"""


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, env={**os.environ, **GIT_ENV})


def large_repository(root: Path, files: int, ignored: int) -> Path:
    """The base on ``main``, the fix in the work tree, and an ignored node_modules."""
    repo = root / "large"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / ".repogym.yml").write_text(TASK)
    (repo / ".gitignore").write_text("node_modules/\n")
    (repo / "tests/test_a.py").write_text(TEST)
    (repo / "pkg/__init__.py").write_text("")
    for n in range(files - 4):
        sub = repo / "pkg" / f"d{n // 200:03d}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{n:05d}.py").write_text(f"X = {n}\n")
    (repo / "pkg/m0000.py").write_text("def value():\n    return 0\n")
    for n in range(ignored):
        sub = repo / "node_modules" / f"p{n // 500:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{n:06d}.js").write_text("module.exports = 1\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "base", cwd=repo)
    (repo / "pkg/m0000.py").write_text("def value():\n    return 1\n")
    return repo


def export_before(root: Path, revision: str) -> Path:
    """The package as it was at ``revision``, importable from the returned directory."""
    dest = root / "before"
    archive = subprocess.run(
        ["git", "archive", revision, "repogym", "templates", "examples"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    dest.mkdir()
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def time_grade(repo: Path, pythonpath: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--base", "main"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    expect(done.returncode == 0, f"grade failed: {done.stdout[-500:]}{done.stderr[-500:]}")
    return elapsed


def large(rounds: int, files: int, ignored: int, revision: str) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as holder:
        root = Path(holder)
        root.chmod(0o755)  # a checkout others can read, as CI's and the Action's are
        repo = large_repository(root, files, ignored)
        sides = {"now": ROOT, "before": export_before(root, revision)}
        best = dict.fromkeys(sides, float("inf"))
        for n in range(rounds):
            for name in list(sides) if n % 2 == 0 else list(sides)[::-1]:
                best[name] = min(best[name], time_grade(repo, sides[name]))
    added = best["now"] - best["before"]
    print(
        f"large repository ({files} files, {ignored} ignored): grade {best['now']:.2f} s now, "
        f"{best['before']:.2f} s before ({revision}): {added:+.2f} s added (target ≤ 1.5 s)"
    )
    return added


def small(rounds: int) -> tuple[float, float]:
    import repogym
    from repogym.env.actions import RunCommand, Submit
    from repogym.env.episode import RepoEnv

    example = ROOT / "examples" / "bugfix"
    with tempfile.TemporaryDirectory(prefix="bench-small-") as holder:
        repo = Path(holder) / "repo"
        shutil.copytree(example / "repo", repo)
        git("init", "-q", "-b", "main", cwd=repo)
        git("add", "-A", cwd=repo)
        git("commit", "-q", "-m", "base", cwd=repo)
        shutil.copytree(example / "solution", repo, dirs_exist_ok=True)
        task = repogym.grade(repo, base="main").task
        assert task.tests is not None
        alone = Path(holder) / "alone"
        command = task.tests.command.replace("{junit}", str(Path(holder) / "junit.xml"))
        patch = subprocess.run(
            ["git", "diff"], cwd=repo, check=True, capture_output=True, text=True
        ).stdout
        best = {"alone": float("inf"), "grade": float("inf"), "submit": float("inf")}
        for _ in range(rounds):
            shutil.rmtree(alone, ignore_errors=True)
            shutil.copytree(repo, alone, ignore=shutil.ignore_patterns(".git"))
            start = time.perf_counter()
            subprocess.run(command, shell=True, cwd=alone, check=True, capture_output=True)
            best["alone"] = min(best["alone"], time.perf_counter() - start)
            start = time.perf_counter()
            graded = repogym.grade(repo, base="main")
            best["grade"] = min(best["grade"], time.perf_counter() - start)
            expect(graded.passed, f"the solution did not pass: {graded.summary()}")
            with RepoEnv(repo, base="main") as env:
                env.reset()
                env.step(RunCommand(f"git apply <<'EOF'\n{patch}EOF\n"))
                start = time.perf_counter()
                _, reward, *_ = env.step(Submit())
                best["submit"] = min(best["submit"], time.perf_counter() - start)
                expect(reward == 1.0, f"RepoEnv's submit scored {reward}")
    grade_added = best["grade"] - best["alone"]
    submit_added = best["submit"] - best["alone"]
    print(
        f"examples/bugfix: test command alone {best['alone']:.3f} s; grade() "
        f"{best['grade']:.3f} s ({grade_added:+.3f} s), RepoEnv submit {best['submit']:.3f} s "
        f"({submit_added:+.3f} s) (target ≤ 0.3 s beyond the test command)"
    )
    return grade_added, submit_added


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--ignored", type=int, default=100_000)
    parser.add_argument("--before", default=BEFORE, help="the git revision to compare with")
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    ok = True
    grade_added, submit_added = small(args.rounds)
    ok &= grade_added <= 0.3 and submit_added <= 0.3
    if not args.skip_large:
        ok &= large(args.rounds, args.files, args.ignored, args.before) <= 1.5
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
