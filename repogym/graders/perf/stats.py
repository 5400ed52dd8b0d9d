"""The statistics of a perf grade: an interval for the speed-up, far runs, a slow first run.

**The interval** is the Hodges-Lehmann estimate of the pairs' speed-up with the
distribution-free interval of the Wilcoxon signed-rank test (Hollander & Wolfe), on the
logarithm of each pair's ratio ``baseline / candidate``:

- the pairs are the grade's own design (both sides run back to back, the order flipping),
  so the ratio of a pair cancels the machine's drift, and the logarithm makes 2× faster
  and 2× slower symmetric;
- it assumes only that the log-ratios are independent and symmetric about their centre:
  not normal (noise only ever adds time, so timings are skewed), not many (5 pairs give
  an interval at 93.8 %); a bootstrap needs more pairs than a grade makes to be right in
  its tails, and draws random numbers, so the same runs would not give the same interval;
- exact for up to ``EXACT_PAIRS`` pairs (the signed-rank statistic's distribution by
  counting), the normal approximation beyond.

The score stays the spec's (the fastest run of each side); the interval says how sure
that verdict is and, with ``runs: auto``, when to stop adding pairs.

**Far runs**: a run whose distance from its side's median is more than ``FAR`` times the
side's scaled median absolute deviation (Iglewicz & Hoaglin's modified z-score) is
reported; it is still counted.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

LEVEL = 0.95  # the interval's nominal confidence
EXACT_PAIRS = 60
FAR = 3.5  # modified z-score beyond which a run is far from its side's others
MAD_SCALE = 0.6745  # the normal distribution's MAD in standard deviations
SLOW_FIRST = 1.1  # a first run this much slower than its side's median (and far) is slow


@dataclass(frozen=True, slots=True)
class Interval:
    """The pairs' speed-up (``estimate``) within ``[low, high]``, at ``level``."""

    estimate: float
    low: float
    high: float
    level: float  # the interval's confidence; 0 with a single pair
    pairs: int

    def around(self, point: float) -> bool:
        """Whether ``point`` lies within the interval (a decision still open)."""
        return self.low <= point <= self.high

    def shown(self) -> str:
        """``1.31× [1.27, 1.35] over 9 pairs``."""
        pairs = "1 pair" if self.pairs == 1 else f"{self.pairs} pairs"
        return f"{self.estimate:.2f}× [{self.low:.2f}, {self.high:.2f}] over {pairs}"

    def as_details(self) -> dict[str, float | int]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "pairs": self.pairs,
        }


def interval(baseline: Sequence[float], candidate: Sequence[float]) -> Interval:
    """The interval of the speed-up ``baseline / candidate`` over the pairs (run i of
    each side is pair i); the figures must be positive."""
    logs = [math.log(b / c) for b, c in zip(baseline, candidate, strict=True)]
    n = len(logs)
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(n) for j in range(i, n))
    k = _rank_cut(n)
    level = 1 - 2 * _below(n, k + 1) if n <= EXACT_PAIRS else LEVEL
    return Interval(
        estimate=math.exp(statistics.median(walsh)),
        low=math.exp(walsh[k]),
        high=math.exp(walsh[-k - 1]),
        level=level,
        pairs=n,
    )


def _rank_cut(n: int) -> int:
    """How many Walsh averages to drop at each end: the largest ``k`` with P(T ≤ k) at
    most (1 - LEVEL) / 2 for the signed-rank statistic T (fewer than ``k + 1`` averages
    below the true centre); 0 when even the whole range falls short of the level (5
    pairs or fewer), whose confidence is then 1 - 2 / 2ⁿ."""
    alpha = (1 - LEVEL) / 2
    if n > EXACT_PAIRS:
        mean = n * (n + 1) / 4
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(0, math.floor(mean - 1.959964 * sd))
    k = 0
    while _below(n, k + 2) <= alpha:
        k += 1
    return k


@cache
def _counts(n: int) -> tuple[int, ...]:
    """How many of the 2ⁿ sign patterns give each value of the signed-rank statistic."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for value, ways in enumerate(counts):
            grown[value + rank] += ways
        counts = grown
    return tuple(counts)


def _below(n: int, k: int) -> float:
    """P(T < k) for the signed-rank statistic T of ``n`` pairs, under no difference."""
    if n > EXACT_PAIRS:
        raise ValueError("exact probabilities are counted up to EXACT_PAIRS pairs")
    counts = _counts(n)
    return sum(counts[:k]) / (1 << n)


def far_runs(times: Sequence[float]) -> list[int]:
    """The indices of the runs far from the others of their side (see the module)."""
    if len(times) < 3:
        return []
    middle = statistics.median(times)
    spread = statistics.median(abs(t - middle) for t in times)
    if spread == 0:  # most runs alike (instruction counts): far is 1 % off
        return [i for i, t in enumerate(times) if abs(t - middle) > 0.01 * middle]
    return [i for i, t in enumerate(times) if MAD_SCALE * abs(t - middle) / spread > FAR]


def slow_first(times: Sequence[float]) -> bool:
    """Whether the first run is far slower than the side's others: a sign the benchmark
    needs (more) warm-up."""
    if len(times) < 3:
        return False
    rest = times[1:]
    return 0 in far_runs(times) and bool(times[0] > SLOW_FIRST * statistics.median(rest))
