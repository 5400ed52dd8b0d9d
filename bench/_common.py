"""What the benchmarks share: interleaved timing and a git identity free of user config.

Each benchmark runs as ``python bench/NAME.py``, which puts this directory on sys.path.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

# Commits in generated repositories, made the same way whatever the machine's git config.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def expect(condition: bool, problem: str) -> None:
    """Stop the benchmark when a sanity check fails: a fast wrong answer proves nothing."""
    if not condition:
        raise SystemExit(f"sanity check failed: {problem}")


def median(values: list[float]) -> float:
    """The median, or NaN for no values (a phase that never ran)."""
    return statistics.median(values) if values else float("nan")


def half_load() -> None:
    """Keep a core busy half the time, forever: 50 ms of spinning, 50 ms of sleep (a
    noisy neighbour for the perf grader's trials)."""
    while True:
        until = time.monotonic() + 0.05
        while time.monotonic() < until:
            pass
        time.sleep(0.05)


def best_of(rounds: int, sides: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The minimum wall time of each side over interleaved rounds (order alternating)."""
    best = dict.fromkeys(sides, float("inf"))
    names = list(sides)
    for n in range(rounds):
        for name in names if n % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            sides[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    return best
