"""``repogym validate --repeat N`` on a perf task: how far each timing spreads on it.

Besides the task's own timing (its N grades of the solution), the solution's benchmark is
graded N times with each other timing — ``wall``, ``cpu`` and ``instructions`` — so a
task author can see which mode lets the task keep a low noise floor (issue 24). Only the
perf grader runs for those: the tests already ran N times with the task's own grades.
``instructions`` makes one pair after one warm-up round (a count does not vary, and under
Valgrind each run is slow); the others keep the task's ``runs`` and ``warmup``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from repogym.errors import RepogymError
from repogym.grading import grade
from repogym.models import GradeResult
from repogym.task import Task

MODES = ("wall", "cpu", "instructions")


def spread_line(mode: str, speedups: Sequence[float], counter: str | None = None) -> str:
    """``perf, cpu: speed-up over 3 runs: min 2.10x, max 2.15x (spread 2.4%)``; the
    memory reduction's, for ``peak_memory``."""
    low, high = min(speedups), max(speedups)
    runs = f"{len(speedups)} run" + ("" if len(speedups) == 1 else "s")
    by = f", counted by {counter}" if counter else ""
    word = "memory reduction" if mode == "peak_memory" else "speed-up"
    return (
        f"perf, {mode}: {word} over {runs}: min {low:.2f}x, max {high:.2f}x "
        f"(spread {high / low - 1:.1%}{by})"
    )


def check_modes(
    ok: Callable[[str], None],
    tree: Path,
    base: str,
    task: Task,
    repeat: int,
    own: Sequence[float],
) -> None:
    """Report the spread of each timing over ``repeat`` grades of the solution in
    ``tree``; ``own`` holds the speed-ups of the task's own grades."""
    perf = task.perf
    if perf is None or repeat < 2:
        return
    if own:
        ok(spread_line("peak_memory" if perf.measure == "peak_memory" else perf.timing, own))
    if perf.measure != "time":
        return  # the memory peak has no other mode
    steadiest: list[tuple[float, str]] = []
    if own:
        steadiest.append((max(own) / min(own), perf.timing))
    for mode in MODES:
        if mode == perf.timing:
            continue
        update: dict[str, object] = {"timing": mode}
        if mode == "instructions":
            update.update(runs=1, warmup=1)
        variant = task.model_copy(update={"perf": perf.model_copy(update=update), "tests": None})
        speedups, counter, failed = _grades(partial(_perf_alone, tree, base, variant), repeat)
        if failed is not None:
            ok(f"perf, {mode}: not measured here: {failed}")
            continue
        ok(spread_line(mode, speedups, counter))
        steadiest.append((max(speedups) / min(speedups), mode))
    if len(steadiest) > 1:
        spread, mode = min(steadiest)
        ok(f"perf: the steadiest timing on this task is `{mode}` (spread {spread - 1:.1%})")


def _perf_alone(tree: Path, base: str, task: Task) -> GradeResult:
    return grade(tree, base=base, task=task).result


def _grades(
    grade_once: Callable[[], GradeResult], repeat: int
) -> tuple[list[float], str | None, str | None]:
    """The speed-ups of ``repeat`` grades, the counter, or why there is none."""
    speedups: list[float] = []
    counter = None
    for _ in range(repeat):
        try:
            graded = grade_once()
        except RepogymError as error:
            return speedups, None, str(error).splitlines()[0]
        (component,) = [c for c in graded.components if c.name == "perf"]
        if "speedup" not in component.details:
            return speedups, None, component.messages[0].removeprefix("score 0: ")
        speedups.append(float(component.details["speedup"]))
        counter = component.details.get("counter") or counter
    return speedups, counter, None
