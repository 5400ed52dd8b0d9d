"""Benchmark: parsing a JUnit report to outcomes costs at most 2x lxml's iterparse.

Target: on a generated report of 200,000 testcases (nested testsuites; 5 % failures, each
with a multi-line message, a traceback and a few KB of captured output), reading every case
with :func:`repogym.junit.iter_cases` into a ``{"classname::name": outcome}`` dict takes at
most 2 times as long as ``lxml.etree.iterparse`` over the same file, timed in the same run
and clearing each element at its end event (a walk that extracts nothing); and a fresh
process that only imports ``repogym.junit`` and builds that dict peaks at most at 64 MiB
of RSS. The reader is pure Python (issue 8 removed the C one, which was about 1.05x).

junitparser's time and peak RSS are shown for scale when it is installed. Needs lxml, a
benchmark dependency only: ``pip install lxml junitparser``.

Run ``python bench/junit.py``; it exits 1 when a target is missed. ``--floor`` also times
what a Python-level expat parser with this API must pay whatever its logic: expat's scan
with no-op element handlers, and making the 200,000 ``Case`` objects and the caller's dict.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import starmap
from pathlib import Path
from typing import Any
from xml.parsers import expat
from xml.sax.saxutils import escape, quoteattr

from _common import best_of, expect
from lxml import etree

from repogym.junit import Case, Outcome, iter_cases

TARGET_RATIO = 2.0
TARGET_RSS_MIB = 64
CASES = 200_000
FAILURES = CASES // 20  # 5 %
SKIPPED = CASES // 50  # 2 %, with a reason
ERRORS = CASES // 500  # 0.2 %, an error in a fixture

# Each child parses the report named by argv[1] into the outcomes dict and prints the number
# of cases, the seconds that took, and its peak RSS in KiB (Linux's unit for ru_maxrss).
CHILDREN = {
    "repogym": """
from repogym.junit import iter_cases
start = time.perf_counter()
outcomes = {f"{c.classname}::{c.name}": c.outcome for c in iter_cases(Path(sys.argv[1]))}
""",
    "junitparser": """
from junitparser import JUnitXml
def outcome(case):
    return ("error" if case.is_error else "failed" if case.is_failure
            else "skipped" if case.is_skipped else "passed")
start = time.perf_counter()
outcomes = {f"{c.classname}::{c.name}": outcome(c)
            for suite in JUnitXml.fromfile(sys.argv[1]) for c in suite}
""",
}
CHILD_HEAD = "import resource, sys, time\nfrom pathlib import Path\n"
SPAWN = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
CHILD_TAIL = """
seconds = time.perf_counter() - start
print(len(outcomes), seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


# -- the generated report ----------------------------------------------------------------

AREAS = ["billing", "orders", "auth", "search", "inventory", "shipping", "reports", "api"]
TOPICS = ["invoice", "discount", "refund", "session", "token", "query", "index", "stock"]
TOPICS += ["parcel", "export", "pagination", "webhook", "currency", "tax", "cart", "user"]
VERBS = ["applies", "rejects", "rounds", "caches", "retries", "validates", "serialises"]
VERBS += ["merges", "expires", "renders", "paginates", "normalises", "charges", "skips"]
CONDITIONS = ["when_empty", "on_timeout", "for_guest", "with_unicode", "after_restart"]
CONDITIONS += ["twice", "in_bulk", "with_zero", "on_overflow", "for_admin", "", "", ""]


class Report:
    """Deterministic pytest-like JUnit XML, written as it is generated."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.expected: dict[str, Outcome] = {}
        self.log_lines = [
            f"{self.rng.choice(['DEBUG', 'INFO', 'WARNING'])} {area}.{topic}: "
            f"{self.rng.choice(VERBS)} {topic} id={self.rng.randrange(10**6)} "
            f"took {self.rng.randrange(1, 900)} ms"
            for area in AREAS
            for topic in TOPICS
        ]

    def write(self, path: Path) -> None:
        kinds = [Outcome.FAILED] * FAILURES + [Outcome.SKIPPED] * SKIPPED
        kinds += [Outcome.ERROR] * ERRORS
        kinds += [Outcome.PASSED] * (CASES - len(kinds))
        self.rng.shuffle(kinds)
        with path.open("w", encoding="utf-8") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="pytest">\n')
            for area, chunk in zip(AREAS, split(kinds, len(AREAS)), strict=True):
                out.write(f'  <testsuite name="tests.{area}" tests="{len(chunk)}">\n')
                modules = split(chunk, 25)
                for number, module in enumerate(modules):
                    out.write("".join(self.module(area, number, module)))
                out.write("  </testsuite>\n")
            out.write("</testsuites>\n")

    def module(self, area: str, number: int, kinds: list[Outcome]) -> Iterator[str]:
        topic = self.rng.choice(TOPICS)
        module = f"test_{topic}_{number}"
        file = f"tests/{area}/{module}.py"
        yield f'    <testsuite name="{module}" tests="{len(kinds)}" file="{file}">\n'
        for index, kind in enumerate(kinds):
            klass = f"Test{topic.title()}{index // 40}"
            classname = f"tests.{area}.{module}.{klass}"
            name = f"test_{self.rng.choice(VERBS)}_{topic}_{self.rng.choice(CONDITIONS)}"
            name = f"{name.rstrip('_')}[case-{index}]"
            self.expected[f"{classname}::{name}"] = kind
            yield (
                f'      <testcase classname="{classname}" name="{name}" file="{file}" '
                f'line="{10 + 7 * index}" time="{self.rng.random() / 20:.3f}"'
            )
            yield from self.children(kind, topic)
        yield "    </testsuite>\n"

    def children(self, kind: Outcome, topic: str) -> Iterator[str]:
        if kind is Outcome.PASSED:
            if self.rng.random() < 0.1:
                yield f">\n        <system-out>{escape(self.log(2))}</system-out>\n"
                yield "      </testcase>\n"
            else:
                yield " />\n"
            return
        yield ">\n"
        if kind is Outcome.SKIPPED:
            yield f'        <skipped type="pytest.skip" message="needs a live {topic} service" />\n'
        else:
            tag = "failure" if kind is Outcome.FAILED else "error"
            message = f"AssertionError: {topic} total was {self.rng.randrange(100)}\nassert 3 == 4"
            # Half the failures carry a message attribute; the rest only text (as some
            # reporters write them), which the parser must read the first line of.
            attribute = f" message={quoteattr(message)}" if self.rng.random() < 0.5 else ""
            yield f'        <{tag}{attribute} type="AssertionError">'
            yield escape(f"{message}\n{self.traceback(topic)}")
            yield f"</{tag}>\n"
            yield f"        <system-out>{escape(self.log(40))}</system-out>\n"
            yield f"        <system-err>{escape(self.log(8))}</system-err>\n"
        yield "      </testcase>\n"

    def log(self, lines: int) -> str:
        return "\n".join(self.rng.choices(self.log_lines, k=lines))

    def traceback(self, topic: str) -> str:
        frames = [
            f'  File "src/app/{topic}/{self.rng.choice(TOPICS)}.py", line '
            f"{self.rng.randrange(1, 900)}, in {self.rng.choice(VERBS)}\n"
            f"    result = {self.rng.choice(TOPICS)}.{self.rng.choice(VERBS)}(value < limit)"
            for _ in range(self.rng.randint(12, 24))
        ]
        return "Traceback (most recent call last):\n" + "\n".join(frames)


def split(items: list[Outcome], parts: int) -> list[list[Outcome]]:
    """``items`` cut into ``parts`` consecutive groups of near-equal size."""
    size, extra = divmod(len(items), parts)
    groups, at = [], 0
    for n in range(parts):
        end = at + size + (n < extra)
        groups.append(items[at:end])
        at = end
    return groups


# -- the sides ---------------------------------------------------------------------------


def reference(path: Path) -> None:
    """lxml's iterparse over the whole file, clearing each element at its end event."""
    for _, element in etree.iterparse(str(path), events=("end",)):
        element.clear()


def outcomes(path: Path) -> dict[str, Outcome]:
    """What the graders need: every case's outcome by its id."""
    return {f"{case.classname}::{case.name}": case.outcome for case in iter_cases(path)}


def expat_alone(path: Path, *, handlers: bool) -> None:
    """The floor under any expat-based parser: expat's scan, with or without no-op handlers.

    A no-op start handler still costs what pyexpat spends building the tag and attribute
    strings and the attribute dict of each element, which any handler must receive.
    """
    parser = expat.ParserCreate()
    if handlers:
        parser.StartElementHandler = lambda tag, attrs: None
        parser.EndElementHandler = lambda tag: None
    with path.open("rb") as report:
        while chunk := report.read(1 << 16):
            parser.Parse(chunk, False)
    parser.Parse(b"", True)


def cases_alone(fields: list[tuple[Any, ...]]) -> dict[str, Outcome]:
    """The floor under any parser with this API: making each Case and the caller's dict."""
    return {f"{case.classname}::{case.name}": case.outcome for case in starmap(Case, fields)}


def child(side: str, path: Path) -> tuple[int, float, float]:
    """Cases, seconds and peak RSS (MiB) of one side parsing ``path`` in a fresh process.

    The child is started by a small intermediate interpreter, not by this process: Linux
    carries the peak RSS of the process that spawns a program over into the program's own
    ``ru_maxrss`` (it is recorded at ``execve``), so a child of this large process would
    report this process's size rather than its own.
    """
    code = CHILD_HEAD + CHILDREN[side] + CHILD_TAIL
    done = subprocess.run(
        [sys.executable, "-c", SPAWN, sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    count, seconds, rss_kib = done.stdout.split()
    return int(count), float(seconds), int(rss_kib) / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--floor", action="store_true", help="also time what any parser of this API must pay"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="repogym-bench-junit-") as tmp:
        path = Path(tmp) / "report.xml"
        start = time.perf_counter()
        report = Report(args.seed)
        report.write(path)
        size = path.stat().st_size
        print(
            f"generated {CASES:,} testcases, {size / 2**20:.0f} MiB "
            f"in {time.perf_counter() - start:.1f} s"
        )
        expect(outcomes(path) == report.expected, "iter_cases read other outcomes")
        del report
        sides: dict[str, Callable[[], object]] = {
            "reference": lambda: reference(path),
            "repogym": lambda: outcomes(path),
        }
        if args.floor:
            fields = [
                (c.name, c.classname, c.file, c.suites, c.outcome, c.flaky, c.message)
                for c in iter_cases(path)
            ]
            sides["expat"] = lambda: expat_alone(path, handlers=False)
            sides["expat+handlers"] = lambda: expat_alone(path, handlers=True)
            sides["cases"] = lambda: cases_alone(fields)
        best = best_of(args.rounds, sides)
        count, _, rss = child("repogym", path)
        expect(count == CASES, f"the child read {count:,} cases")
        scale = None
        if importlib.util.find_spec("junitparser"):
            scale = child("junitparser", path)
    ratio = best["repogym"] / best["reference"]
    print(f"(a) lxml iterparse, clear:        {best['reference'] * 1000:7.0f} ms")
    print(f"(b) iter_cases to outcomes:       {best['repogym'] * 1000:7.0f} ms")
    if args.floor:
        print("floors, for (b):")
        print(f"  expat alone, no handlers:       {best['expat'] * 1000:7.0f} ms")
        print(f"  expat, no-op element handlers:  {best['expat+handlers'] * 1000:7.0f} ms")
        print(f"  200,000 Case() and the dict:    {best['cases'] * 1000:7.0f} ms")
    ok_ratio, ok_rss = ratio <= TARGET_RATIO, rss <= TARGET_RSS_MIB
    print(f"ratio b/a = {ratio:.2f} (target <= {TARGET_RATIO}) {'ok' if ok_ratio else 'FAIL'}")
    print(
        f"peak RSS of (b) in a fresh process: {rss:.1f} MiB "
        f"(target <= {TARGET_RSS_MIB}) {'ok' if ok_rss else 'FAIL'}"
    )
    if scale is None:
        print("junitparser: not installed, skipped")
    else:
        print(f"for scale, junitparser: {scale[1] * 1000:.0f} ms, peak RSS {scale[2]:.1f} MiB")
    return 0 if ok_ratio and ok_rss else 1


if __name__ == "__main__":
    sys.exit(main())
