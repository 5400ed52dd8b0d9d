"""How much ``measure_source`` costs next to ``ast.parse`` alone, over the standard library.

Run as ``python bench/metrics.py [--rounds N]``. The metrics run on every pull request
of every graded repository, so they must cost little more than parsing, which any
tool must do anyway: the target is at most 1.2 times ``ast.parse`` (mccabe takes about
1.31 times, radon 2.29 times on the same files).

The machine is shared and noisy, so the two are compared within one run, never with a
figure from elsewhere: each file is parsed and measured back to back, several rounds,
and each file keeps its fastest time of each kind. The process exits with status 1
when the ratio exceeds the target.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys
import sysconfig
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from repogym.metrics import measure_source

TARGET = 1.2


def stdlib_sources() -> list[tuple[str, bytes]]:
    """Every ``.py`` file of the standard library that parses, read up front.

    Installed packages (``site-packages``) live under the same directory on most
    installations but are not the standard library, so they are left out.
    """
    paths = sysconfig.get_paths()
    root = pathlib.Path(paths["stdlib"])
    installed = {pathlib.Path(paths["purelib"]), pathlib.Path(paths["platlib"])}
    sources = []
    for path in sorted(root.rglob("*.py")):
        if installed.intersection(path.parents):
            continue
        source = path.read_bytes()
        try:
            _parse(source)
        except (SyntaxError, ValueError):  # test data written to fail, Python 2 code
            continue
        sources.append((path.relative_to(root).as_posix(), source))
    return sources


def _parse(source: bytes) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def fastest_times(sources: list[tuple[str, bytes]], rounds: int) -> tuple[float, float]:
    """Total over the files of each file's fastest parse and fastest measurement."""
    parse = [float("inf")] * len(sources)
    measure = [float("inf")] * len(sources)
    clock = time.perf_counter
    for round_ in range(rounds):
        for index, (name, source) in enumerate(sources):
            # The first parse of a file after another runs a few percent slower (memory
            # laid out for the previous file): warm up, then alternate which goes first.
            _parse(source)
            for kind in (0, 1) if round_ % 2 else (1, 0):
                start = clock()
                if kind:
                    measure_source(source, name)
                else:
                    _parse(source)
                elapsed = clock() - start
                times = measure if kind else parse
                times[index] = min(times[index], elapsed)
    return sum(parse), sum(measure)


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
