"""``repogym batch JOBS.jsonl --output REPORTS.jsonl [--jobs N | --ray ADDRESS] [--resume]``:
its options, its progress (a live bar on a terminal, a plain line at most every
``LOG_EVERY`` seconds in a log) and the summary table it ends with.

Exit codes: 0 every job has its line and none is an error report; 1 some job's line is
one (a bad line, a patch that does not apply, a crash); 2 a usage error (no job file, an
output that already holds lines without ``--resume``, two jobs with one id).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from repogym.batch import Local, Ray, Summary, run_batch
from repogym.errors import ExitCode, UsageError

LOG_EVERY = 10.0  # seconds between progress lines in a log
_BAR = 30  # characters


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", type=Path, metavar="JOBS.jsonl", help="the jobs, one a line")
    parser.add_argument(
        "--output", "-o", type=Path, required=True, metavar="REPORTS.jsonl",
        help="where each job's report goes, a line each, as it ends",
    )  # fmt: skip
    parser.add_argument(
        "--jobs", "-j", type=int, dest="workers", metavar="N",
        help="grade N jobs at once in worker processes (default: the cores)",
    )  # fmt: skip
    parser.add_argument(
        "--ray", metavar="ADDRESS",
        help="run each job as a task of the Ray cluster at ADDRESS (`auto`: this machine's)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help="take up the batch that wrote --output: the jobs it finished are skipped",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"repogym batch: --jobs must be at least 1, not {args.workers}")
    if args.ray is not None and args.workers is not None:
        raise UsageError("repogym batch: --jobs and --ray do not go together: choose one")
    progress = _Progress(sys.stderr)
    executor = Ray(args.ray) if args.ray is not None else Local(args.workers)
    summary = run_batch(
        args.jobs, args.output, executor=executor, resume=args.resume, told=progress.tell
    )
    progress.end(summary)
    print(summary_table(summary), end="")
    return ExitCode.FAILED if summary.errors else ExitCode.PASSED


class _Progress:
    """Told of the batch's start and of each line written."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.last = 0.0

    def tell(self, summary: Summary, line: Mapping[str, Any] | None) -> None:
        now = time.monotonic()
        if line is None:
            skipped = f", {summary.skipped} done before (--resume)" if summary.skipped else ""
            self.stream.write(f"repogym batch: {summary.total} jobs{skipped}\n")
        elif self.live:
            self.stream.write("\r" + self._bar(summary, now))
        elif now - self.last >= LOG_EVERY or summary.done + summary.skipped == summary.total:
            self.stream.write(f"repogym batch: {self._counts(summary, now)}\n")
        else:
            return
        self.last = now
        self.stream.flush()

    def end(self, summary: Summary) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()

    def _bar(self, summary: Summary, now: float) -> str:
        share = (summary.done + summary.skipped) / summary.total if summary.total else 1.0
        filled = round(share * _BAR)
        return f"[{'#' * filled}{'.' * (_BAR - filled)}] {self._counts(summary, now)}"

    def _counts(self, s: Summary, now: float) -> str:
        todo = s.total - s.skipped
        rate = s.done / (now - s.started) if s.done else 0.0
        eta = f", ETA {_duration((todo - s.done) / rate)}" if rate and s.done < todo else ""
        return (
            f"{s.done}/{todo} done ({s.passed} passed, {s.failed} failed, {s.errors} errors){eta}"
        )


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def summary_table(summary: Summary) -> str:
    """The batch's totals, its mean score and its slowest jobs, as aligned text."""
    mean = sum(summary.scores) / len(summary.scores) if summary.scores else 0.0
    rows = [
        ("jobs", str(summary.total)),
        ("done before (--resume)", str(summary.skipped)),
        ("passed", str(summary.passed)),
        ("failed", str(summary.failed)),
        ("errors", str(summary.errors)),
        ("mean score", f"{mean:.3f}" if summary.scores else "-"),
        ("wall time", _duration(time.monotonic() - summary.started)),
    ]
    width = max(len(key) for key, _ in rows)
    text = "".join(f"{key:<{width}}  {value}\n" for key, value in rows)
    if summary.slowest:
        slowest = ", ".join(f"{i} ({s:.1f} s)" for s, i in reversed(summary.slowest))
        text += f"{'slowest':<{width}}  {slowest}\n"
    return text
