"""How much ``measure_source`` costs next to ``ast.parse`` alone, over the standard library.

Run as ``python bench/metrics.py [--rounds N]``. Measuring must cost little more than
the parse that any tool does anyway: the target is at most 1.2 times ``ast.parse`` (for
scale, mccabe takes about 1.31 times and radon 2.29 times).

The machine is shared and noisy, so the two are compared within one run, never with a
figure from elsewhere. All files are read up front; then, for several rounds, each file
is parsed and measured back to back, and keeps its fastest time of each kind. The
figures are the sums of those fastest times. The process exits with status 1 when the
ratio exceeds the target; it prints the figures either way.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from repogym.metrics import measure_source
from tests.stdlib import parse, stdlib_sources

TARGET = 1.2


def fastest_times(sources: list[tuple[str, bytes]], rounds: int) -> tuple[float, float]:
    """Sums over the files of each file's fastest parse and fastest measurement."""
    fastest = {"parse": [float("inf")] * len(sources), "measure": [float("inf")] * len(sources)}
    clock = time.perf_counter
    for round_ in range(rounds):
        # Whatever runs first on a file runs a few percent slower (the memory is still
        # laid out for the previous file): warm up, and take turns going first.
        order = ("parse", "measure") if round_ % 2 == 0 else ("measure", "parse")
        for index, (name, source) in enumerate(sources):
            parse(source)
            for kind in order:
                start = clock()
                if kind == "parse":
                    parse(source)
                else:
                    measure_source(source, name)
                fastest[kind][index] = min(fastest[kind][index], clock() - start)
    return sum(fastest["parse"]), sum(fastest["measure"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds over all files")
    args = parser.parse_args()
    sources = stdlib_sources()
    parse, measure = fastest_times(sources, args.rounds)
    ratio = measure / parse
    print(f"files: {len(sources)}, {sum(len(s) for _, s in sources) / 1e6:.1f} MB")
    print(f"ast.parse:      {parse:.3f} s")
    print(f"measure_source: {measure:.3f} s")
    verdict = "ok" if ratio <= TARGET else "too slow"
    print(f"ratio:          {ratio:.3f} (target <= {TARGET}: {verdict})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
