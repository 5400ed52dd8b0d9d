"""Benchmark: what a task's environment costs (issue 20), next to the uid sandbox in the same run.

Needs a Docker engine and the local base ``repogym-base:bookworm`` (``.ci/base-image``);
without an engine it says so in one line and exits 0. It builds ``IMAGE`` on the base
once (Debian's pytest; through the host's network, as the tests' images are built).

1. **Per command**: ``true`` and the bugfix example's test command (its JUnit directory
   collected, as the tests grader runs it), on ``examples/bugfix/repo`` and on that tree
   with 20,000 files more, both in /dev/shm where the grader makes its copies, through
   ``Runner()`` (as root: a uid of its own) and a ``ContainerRunner``, rounds interleaved.
   The extra is the time around the command (wall less the command's own duration) in a
   container less that in the uid sandbox: the two run different Pythons and pytests,
   whose own speed is not the environment's. A runner's first command includes the
   tree's copy-in and what of the keeper's start it waits for (the keeper starts beside
   it, in a thread: its phases are shown as ``beside``); each phase is timed by wrapping
   the calls of repogym.run.container.runner and repogym.run.container.command.
   Targets: at most 0.5 s extra per command on the example, 1.5 s on the large tree,
   for the first command and for later ones. The large tree's copy-in is also timed
   alone both ways: tar in a container of the image (the runner's way from
   ``UNPACK_FROM`` entries on) and the engine's put_archive.
2. **Once per grade**: ``prepare`` of a ``dockerfile:`` task whose image is built already
   (``how: reused``) on both trees, and of ``image:`` (``local``); a whole grade calls
   ``prepare`` once. Target: one ``prepare`` per grade.
3. **Whole grade**: ``repogym.grade()`` of the bugfix example's solution without and with
   ``environment: {image: IMAGE}`` (committed on ``main``): median wall, their ratio, and
   each grade less its commands' own time.
4. **Perf false credit**: PerfGrader on identical code (the perf example, submission ==
   baseline) ``--trials`` times with and without the environment, alternating, in a worker
   while another process loads a core half the time, as bench/perf_noise.py does. Target:
   no more trials scoring above 0 in the environment than without.

Run ``python bench/environment.py [--rounds N] [--trials K]``; exits 1 when a target is missed.
Part 1 is in bench/env_commands.py; parts 2 to 4 and the summary are here.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import GIT_ENV, expect, half_load, median
from env_commands import TARGETS, make_trees, per_command

import repogym
from repogym import grading
from repogym._demo import EXAMPLES, build_example_repo
from repogym.errors import EngineError
from repogym.graders.perf.grader import PerfGrader
from repogym.run.container import command as _command
from repogym.run.container.engine import connect
from repogym.run.container.runner import ContainerRunner
from repogym.run.host import Runner
from repogym.run.image import prepare
from repogym.task import parse_task
from repogym.tree.store import copies_dir
from repogym.workspace import Workspace

BASE = "repogym-base:bookworm"
IMAGE = "repogym-bench-env:pytest"
DOCKERFILE = f"""\
FROM {BASE}
RUN apt-get update && apt-get install -y --no-install-recommends python3-pytest \\
    python-is-python3 && rm -rf /var/lib/apt/lists/*
"""
ENVIRONMENT = f"environment:\n  image: {IMAGE}\n"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, env={**os.environ, **GIT_ENV})


def bench_image(client: Any) -> str:
    """IMAGE's id, built on BASE the first time."""
    docker = _command.docker_module()
    try:
        return str(client.images.get(IMAGE).id)
    except docker.errors.ImageNotFound:
        pass
    image, _ = client.images.build(
        fileobj=io.BytesIO(DOCKERFILE.encode()), tag=IMAGE, network_mode="host", pull=False
    )
    return str(image.id)


# -- 2. once per grade -----------------------------------------------------------------------


def reuse(scratch: Path, trees: dict[str, Path], rounds: int) -> dict[str, float]:
    """Seconds of ``prepare`` finding the image a ``dockerfile:`` built before, by tree."""
    nonce = uuid.uuid4().hex[:12]  # a build of this run's, not a reuse of an earlier run's
    dockerfile = f"FROM {IMAGE}\nLABEL repogym.bench={nonce}\n"
    task = parse_task(
        (EXAMPLES / "bugfix/repo/.repogym.yml").read_text()
        + "environment:\n  dockerfile: Dockerfile\n"
    )
    seconds: dict[str, float] = {}
    built: set[str] = set()
    for name, tree in trees.items():
        repo = scratch / f"reuse-{name}"
        shutil.copytree(tree, repo)
        (repo / "Dockerfile").write_text(dockerfile)
        git("init", "-q", "-b", "main", cwd=repo)
        git("add", "-A", cwd=repo)
        git("commit", "-qm", "base", cwd=repo)
        rubric = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        had = prepare(task, repo, rubric)
        built.add(had.id)
        times = []
        for _ in range(rounds):
            again = prepare(task, repo, rubric)
            expect(again.how == "reused", f"prepare of a built Dockerfile said {again.how}")
            times.append(again.seconds)
        seconds[name] = median(times)
        print(
            f"prepare, `dockerfile:` on {name}: first {had.how} in {had.seconds:.2f} s; "
            f"reused in {seconds[name]:.3f} s (median of {rounds})"
        )
    client = connect()
    for image_id in built:
        client.images.remove(image_id, force=True)
    return seconds


# -- 3. whole grade --------------------------------------------------------------------------


@dataclass(slots=True)
class Counted:
    prepares: int = 0
    commands: float = 0.0  # seconds of the commands' own


def count(counted: Counted) -> None:
    """Count grade()'s prepares and add up the commands' own seconds."""
    real_prepare = grading.prepare

    def counting_prepare(*args: Any, **kwargs: Any) -> Any:
        counted.prepares += 1
        return real_prepare(*args, **kwargs)

    grading.prepare = counting_prepare  # type: ignore[assignment]
    for cls in (Runner, ContainerRunner):
        real_run = cls.run

        def adding_run(self: Any, *args: Any, _run: Any = real_run, **kwargs: Any) -> Any:
            result = _run(self, *args, **kwargs)
            counted.commands += result.duration
            return result

        cls.run = adding_run  # type: ignore[method-assign]


def whole_grade(scratch: Path, rounds: int) -> dict[str, Any]:
    repos = {}
    for side in ("uid", "container"):
        repo = build_example_repo("bugfix", scratch / f"grade-{side}")
        if side == "container":
            git("checkout", "-q", "main", cwd=repo)
            with (repo / ".repogym.yml").open("a") as task:
                task.write(ENVIRONMENT)
            git("commit", "-qam", "environment", cwd=repo)
            git("checkout", "-q", "submission", cwd=repo)
        repos[side] = repo
    counted = Counted()
    count(counted)
    walls: dict[str, list[float]] = defaultdict(list)
    rest: dict[str, list[float]] = defaultdict(list)
    prepares, record = [], None
    for n in range(rounds):
        for side in list(repos) if n % 2 == 0 else list(repos)[::-1]:
            counted.prepares, counted.commands = 0, 0.0
            start = time.perf_counter()
            graded = repogym.grade(repos[side], base="main")
            wall = time.perf_counter() - start
            expect(graded.passed, f"the solution did not pass ({side}): {graded.summary()}")
            walls[side].append(wall)
            rest[side].append(wall - counted.commands)
            if side == "container":
                prepares.append(counted.prepares)
                record = graded.environment
    assert record is not None
    ratio = median(walls["container"]) / median(walls["uid"])
    extra = median(rest["container"]) - median(rest["uid"])
    print(
        f"\ngrade() of examples/bugfix: {median(walls['uid']):.2f} s without an environment, "
        f"{median(walls['container']):.2f} s with one (x{ratio:.2f}); less the commands' own "
        f"time: {median(rest['uid']):.2f} s and {median(rest['container']):.2f} s "
        f"({extra:+.2f} s); prepare called {sorted(set(prepares))} time(s) per grade "
        f"(how: {record['how']}, {record['seconds']:.3f} s)"
    )
    return {"ratio": ratio, "extra": extra, "prepares": prepares, "prepare": record["seconds"]}


# -- 4. perf false credit --------------------------------------------------------------------


def perf_worker(trials: int, scratch: Path) -> None:
    """Grade the perf example's identical code ``trials`` times each way; JSON lines."""
    repo = build_example_repo("perf", scratch / "perf", solution=False)
    text = (EXAMPLES / "perf/repo/.repogym.yml").read_text()
    tasks = {"uid": parse_task(text), "container": parse_task(text + ENVIRONMENT)}
    for trial in range(trials):
        for side in list(tasks) if trial % 2 == 0 else list(tasks)[::-1]:
            workspace = Workspace.open(repo, base="main", task=tasks[side])
            start = time.perf_counter()
            if side == "container":
                workspace.runner = prepare(tasks[side], repo, workspace.rubric).runner(tasks[side])
            try:
                component = PerfGrader().grade(workspace)
            finally:
                workspace.command_runner().close()
            details = component.details
            print(
                json.dumps(
                    {
                        "side": side,
                        "score": component.score,
                        "speedup": details.get("speedup"),
                        "baseline_min": details.get("baseline_min"),
                        "seconds": time.perf_counter() - start,
                        "messages": list(component.messages[:1]),
                    }
                ),
                flush=True,
            )


def perf_false_credit(trials: int, load: bool) -> dict[str, float]:
    me = [sys.executable, __file__]
    loader = subprocess.Popen([*me, "--load"]) if load else None
    try:
        worker = subprocess.Popen(
            [*me, "--perf-worker", "--trials", str(trials)], stdout=subprocess.PIPE, text=True
        )
        assert worker.stdout is not None
        records = [json.loads(line) for line in worker.stdout]
        expect(worker.wait() == 0, "the perf worker failed")
    finally:
        if loader is not None:
            loader.kill()
            loader.wait()
    false: dict[str, float] = {}
    print(f"\nperf on identical code, {trials} grades each ({'half load' if load else 'no load'}):")
    for side in ("uid", "container"):
        group = [r for r in records if r["side"] == side]
        expect(all(r["speedup"] for r in group), f"a {side} grade had no speed-up: {group}")
        false[side] = sum(float(r["score"]) > 0 for r in group)
        false[f"{side} max"] = max(float(r["speedup"]) for r in group)
        speedups = " ".join(f"{r['speedup']:.3f}" for r in group)
        print(
            f"  {side:>9}: speed-ups {speedups}; {false[side]} of {len(group)} scored above 0; "
            f"fastest baseline run median {median([r['baseline_min'] for r in group]):.3f} s; "
            f"{median([r['seconds'] for r in group]):.1f} s per grade"
        )
    return false


# -- the summary -----------------------------------------------------------------------------


def summary(per: dict, reused: dict, grade: dict, false: dict[str, float]) -> bool:
    rows = []
    for name, target in TARGETS.items():
        label = "bugfix example" if name == "bugfix" else f"{per[name]['files']:,} files"
        for which in ("first", "later"):
            value = per[name][which]
            parts = f" (keeper {per[name]['keeper']:.2f}, copy-in {per[name]['copy in']:.2f})"
            rows.append(
                (
                    f"extra per command, {label}, {which}",
                    f"{value:+.3f} s" + (parts if which == "first" else ""),
                    f"<= {target} s",
                    value <= target,
                )
            )
    once = set(grade["prepares"]) == {1}
    rows.append(
        (
            "image prepared once per grade",
            f"{sorted(set(grade['prepares']))} x {grade['prepare']:.3f} s",
            "1",
            once,
        )
    )
    rows.append(
        (
            "perf false credit, identical code",
            f"{false['container']} with, {false['uid']} without (max x{false['container max']:.2f}"
            f" / x{false['uid max']:.2f})",
            "with <= without",
            false["container"] <= false["uid"],
        )
    )
    print("\nsummary (medians; extra: time around a command, container less uid sandbox)")
    for what, measured, goal, ok in rows:
        print(f"  {what:<42} {measured:<38} {goal:<15} {'PASS' if ok else 'MISS'}")
    print(
        f"  (not targets: grade() x{grade['ratio']:.2f} with an environment, "
        f"{grade['extra']:+.2f} s beside the commands; `dockerfile:` reuse lookup "
        + ", ".join(f"{k} {v:.3f} s" for k, v in reused.items())
        + f"; runner close {per['bugfix']['close']:.3f} s)"
    )
    return all(row[3] for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--no-load", action="store_true", help="perf trials without the load")
    parser.add_argument("--perf-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        half_load()
    if args.perf_worker:
        with tempfile.TemporaryDirectory(prefix="repogym-bench-env-", dir=copies_dir(0)) as d:
            perf_worker(args.trials, Path(d))
        return 0
    try:
        client = connect()
    except EngineError as error:
        print(f"skipped: {error}")
        return 0
    started = time.perf_counter()
    print("load average at the start: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    image = bench_image(client)
    with tempfile.TemporaryDirectory(prefix="repogym-bench-env-", dir=copies_dir(0)) as d:
        scratch = Path(d)
        scratch.chmod(0o711)  # the sandbox user goes through to its tree
        trees = make_trees(scratch, args.files)
        per = per_command(client, image, trees, args.rounds)
        print()
        reused = reuse(scratch, trees, args.rounds)
        grade = whole_grade(scratch, max(3, args.rounds // 2 + 1))
    false = perf_false_credit(args.trials, not args.no_load)
    ok = summary(per, reused, grade, false)
    print(
        f"({time.perf_counter() - started:.0f} s in all; load average at the end: "
        "{:.1f} {:.1f} {:.1f})".format(*os.getloadavg())
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
