"""Part 1 of bench/environment.py: what a command costs in a task's environment, next to
the uid sandbox, with the time around it split into the container runner's phases.

``true`` and the bugfix example's test command, on the example and on a large tree,
through ``Runner()`` and a ``ContainerRunner``, rounds interleaved; each phase is timed by
wrapping the calls of repogym.run.container.runner and repogym.run.container.command (see the
docstring of bench/environment.py for what is measured and the targets).
"""

from __future__ import annotations

import shlex
import shutil
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import expect, median

from repogym._demo import EXAMPLES
from repogym.models import CommandResult
from repogym.run.container import command as _command
from repogym.run.container import runner as _container
from repogym.run.container.runner import ContainerRunner
from repogym.run.host import Runner

TESTS = "python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}"
TARGETS = {"bugfix": 0.5, "large": 1.5}  # seconds extra per command
LATER = ("true", "tests", "true", "tests")  # a runner's commands after its first (tests)
PHASES = ("keeper", "copy in", "create", "attach", "start", "keeper wait", "wait", "inspect")
PHASES += ("copy out", "remove")


class Phases:
    """Seconds spent in the wrapped calls, by their nesting ("keeper/create"); those of
    a thread other than the main one under "beside/" (they overlap the main's)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.inverted = 0  # commands whose engine record ended before it began
        self._local = threading.local()

    def wrap(self, owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = self._stack
            stack.append(label)
            path = "/".join(stack)
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[path] += time.perf_counter() - start
                stack.pop()

        setattr(owner, name, timed)

    @property
    def _stack(self) -> list[str]:
        if not hasattr(self._local, "stack"):
            main = threading.current_thread() is threading.main_thread()
            self._local.stack = [] if main else ["beside"]
        return self._local.stack  # type: ignore[no-any-return]

    def take(self) -> dict[str, float]:
        """The phases since the last take, nested ones included."""
        taken = dict(self.seconds)
        self.seconds.clear()
        return taken

    def watch_duration(self) -> None:
        """Keep what ``_command.duration`` said of the last command. The engine stamps
        a start once the start call is done: a command that exits sooner (``true``) has
        an exit stamped before its start, and the runner falls back on the grader's clock
        around the whole container, which is not the command's own time."""
        inner = _command.duration

        def duration(state: Any) -> float | None:
            said = inner(state)
            self.inverted += said is None
            return said

        self.inverted = 0
        _command.duration = duration


def instrument(client: Any) -> Phases:
    phases = Phases()
    phases.watch_duration()
    phases.wrap(_container, "start_keeper", "keeper")
    phases.wrap(ContainerRunner, "_hold", "keeper wait")  # the first command's
    phases.wrap(_container, "unpack", "copy in")  # a large tree's, through tar in a container
    phases.wrap(_container, "copy_in", "copy in")
    phases.wrap(_command, "tar", "copy in")  # the first command's tree, on its stdin
    phases.wrap(_command, "copy_out", "copy out")
    phases.wrap(_command, "wait_exit", "wait")
    for name, label in (
        ("create_container", "create"),
        ("attach_socket", "attach"),
        ("start", "start"),
        ("inspect_container", "inspect"),
        ("remove_container", "remove"),
        ("create_volume", "volume"),
    ):
        phases.wrap(client.api, name, label)
    return phases


@dataclass(slots=True)
class Record:
    side: str  # uid or container
    kind: str  # true or tests
    first: bool
    wall: float
    duration: float
    phases: dict[str, float] = field(default_factory=dict)
    inverted: bool = False  # the engine's record ended before it began

    @property
    def top(self) -> dict[str, float]:
        return {k: v for k, v in self.phases.items() if "/" not in k}

    @property
    def around(self) -> float:
        """The time that is not the command's own."""
        return self.wall - self.duration


def make_trees(scratch: Path, files: int) -> dict[str, Path]:
    trees = {}
    for name in TARGETS:
        holder = scratch / name
        holder.mkdir(mode=0o711)
        tree = holder / "tree"
        shutil.copytree(EXAMPLES / "bugfix" / "repo", tree)
        trees[name] = tree
    for n in range(files):
        sub = trees["large"] / "lib" / f"d{n // 200:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{n:05d}.py").write_text(f"X = {n}\n")
    return trees


def run_one(runner: Any, kind: str, tree: Path) -> tuple[float, CommandResult]:
    reports = tree.parent / "junit"
    reports.mkdir(exist_ok=True)
    junit = reports / "junit.xml"
    junit.unlink(missing_ok=True)
    start = time.perf_counter()
    if kind == "true":
        result = runner.run("true", tree, timeout=120, writable=[tree])
    else:
        command = TESTS.replace("{junit}", shlex.quote(str(junit)))
        result = runner.run(command, tree, timeout=120, writable=[tree, reports], collect=[reports])
    wall = time.perf_counter() - start
    if kind == "true":
        expect(result.exit_code == 0, f"`true` exited {result.exit_code}: {result.tail()}")
    else:  # the example's baseline fails its two fail_to_pass tests
        expect(result.exit_code == 1, f"the tests exited {result.exit_code}: {result.tail()}")
        expect(junit.is_file(), "the tests' JUnit report did not come back")
    return wall, result


def a_round(
    side: str, make: Callable[[], Any], tree: Path, phases: Phases, once: dict[str, list[float]]
) -> list[Record]:
    """A fresh runner's commands on ``tree``: the tests first, then LATER; its close."""
    records = []
    start = time.perf_counter()
    runner = make()
    once[f"{side} open"].append(time.perf_counter() - start)
    phases.take()
    for n, kind in enumerate(("tests", *LATER)):
        inverted = phases.inverted
        wall, result = run_one(runner, kind, tree)
        # Its own time was under the engine's stamps' reach: call it 0 (`true` takes ms).
        flipped = phases.inverted > inverted
        own = 0.0 if flipped else result.duration
        records.append(Record(side, kind, n == 0, wall, own, phases.take(), flipped))
    start = time.perf_counter()
    runner.close()
    once[f"{side} close"].append(time.perf_counter() - start)
    return records


def per_command(client: Any, image: str, trees: dict[str, Path], rounds: int) -> dict:
    phases = instrument(client)
    found: dict[str, Any] = {}
    for name, tree in trees.items():
        records: list[Record] = []
        once: dict[str, list[float]] = defaultdict(list)
        sides = {
            "uid": lambda: Runner(),
            "container": lambda: ContainerRunner(client, image),
        }
        for n in range(rounds):
            for side in list(sides) if n % 2 == 0 else list(sides)[::-1]:
                records += a_round(side, sides[side], tree, phases, once)
        found[name] = summarise_tree(name, tree, records, once)
        if name == "large":
            copy_in_ways(client, image, tree, rounds)
    return found


def copy_in_ways(client: Any, image: str, tree: Path, rounds: int) -> None:
    """A large tree's copy-in through tar in a container (the runner's way from
    ``UNPACK_FROM`` entries on) and through the engine's put_archive, alternating."""
    chosen = _container.UNPACK_FROM
    ways = {"tar in a container": chosen, "put_archive": sys.maxsize}
    seconds: dict[str, list[float]] = defaultdict(list)
    try:
        for n in range(rounds):
            for way in list(ways) if n % 2 == 0 else list(ways)[::-1]:
                _container.UNPACK_FROM = ways[way]
                with ContainerRunner(client, image) as runner:
                    runner._new_keeper()
                    start = time.perf_counter()
                    runner._volume_for(tree)
                    seconds[way].append(time.perf_counter() - start)
    finally:
        _container.UNPACK_FROM = chosen
    print(
        "  copy-in alone (median s): "
        + ", ".join(f"{way} {median(seconds[way]):.3f}" for way in ways)
    )


def summarise_tree(name: str, tree: Path, records: list[Record], once: dict) -> dict:
    def pick(side: str, kind: str | None, first: bool) -> list[Record]:
        return [
            r
            for r in records
            if r.side == side and r.first == first and (kind is None or r.kind == kind)
        ]

    def extra(kind: str | None, first: bool) -> float:
        uid = median([r.around for r in pick("uid", kind, first)])
        return median([r.around for r in pick("container", kind, first)]) - uid

    def phase_line(chosen: list[Record], within: str = "") -> str:
        parts = []
        for phase in PHASES:
            values = [r.phases.get(within + phase, 0.0) for r in chosen]
            if phase == "wait" and not within:
                values = [r.phases.get("wait", 0.0) - r.duration for r in chosen]
                phase = "wait less the command"
            if not any(values):
                continue
            parts.append(f"{phase} {median(values):.3f}")
            start = f"{within}{phase}/"
            inner = sorted({k for r in chosen for k in r.phases if k.startswith(start)})
            if inner:
                medians = [median([r.phases.get(k, 0.0) for r in chosen]) for k in inner]
                nested = [f"{k[len(start) :]} {m:.3f}" for k, m in zip(inner, medians, strict=True)]
                parts[-1] += f" ({', '.join(nested)})"
        if within:
            return ", ".join(parts)
        other = [r.wall - sum(r.top.values()) for r in chosen]
        parts.append(f"rest {median(other):.3f}")
        beside = phase_line(chosen, "beside/")
        return ", ".join(parts) + (f"; beside it: {beside}" if beside else "")

    files = sum(1 for p in tree.rglob("*") if p.is_file())
    print(f"\n{name} ({files:,} files in {tree.parent.parent}):")
    for kind in ("true", "tests"):
        for side in ("uid", "container"):
            chosen = [r for r in records if r.side == side and r.kind == kind]
            print(
                f"  {side:>9} {kind:>5}: wall {median([r.wall for r in chosen]):.3f} s, "
                f"its own {median([r.duration for r in chosen]):.3f} s, "
                f"around it {median([r.around for r in chosen]):.3f} s (median of {len(chosen)})"
            )
    flipped = [r.kind for r in records if r.inverted]
    if flipped:
        print(
            f"  the engine stamped an exit before the start of {len(flipped)} of "
            f"{sum(r.side == 'container' for r in records)} container commands "
            f"({', '.join(sorted(set(flipped)))}): their own time is taken as 0 here"
        )
    first, later = extra("tests", True), extra(None, False)
    print(f"  extra per command, first (tests; keeper + copy-in): {first:+.3f} s")
    print(f"    phases (median s): {phase_line(pick('container', 'tests', True))}")
    for kind in ("true", "tests"):
        print(f"  extra per command, later {kind}: {extra(kind, False):+.3f} s")
        print(f"    phases (median s): {phase_line(pick('container', kind, False))}")
    print(
        f"  once per container runner: open (sweep, info) {median(once['container open']):.3f} s, "
        f"close {median(once['container close']):.3f} s"
    )
    firsts = pick("container", "tests", True)
    return {
        "files": files,
        "first": first,
        "later": later,
        "keeper": median([r.phases.get("keeper", 0.0) for r in firsts]),
        "copy in": median([r.phases.get("copy in", 0.0) for r in firsts]),
        "close": median(once["container close"]),
    }
