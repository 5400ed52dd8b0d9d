"""``repogym batch JOBS.jsonl --output REPORTS.jsonl [--jobs N | --ray ADDRESS] [--resume]``
and ``repogym validate --tasks TASKS.jsonl --output RESULTS.jsonl [--jobs N | --ray
ADDRESS] [--resume]``: their options, their progress (a live bar on a terminal, a plain
line at most every ``LOG_EVERY`` seconds in a log) and the summary table they end with.

Exit codes of ``batch``: 0 every job has its line and none is an error report (a job
graded FAIL is a report like any other); 1 some job's line is one (a bad line, a patch
that does not apply, a crash), or, with ``--fail-on-fail``, some job failed. The summary
ends with the exit code and why. Of ``validate
--tasks``: 0 every task valid; 1 some task invalid or its line an error. Of both: 2 a
usage error (no such file, an output that already holds lines without ``--resume``, two
lines with one id).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from repogym.batch.cluster import Ray
from repogym.batch.jobs import Job
from repogym.batch.lines import LineT
from repogym.batch.local import Local
from repogym.batch.many import Executor, Summary, run_many
from repogym.batch.validations import ValidationJob
from repogym.errors import ExitCode, UsageError

LOG_EVERY = 10.0  # seconds between progress lines in a log
_BAR = 30  # characters


@dataclass(frozen=True, slots=True, kw_only=True)
class Words:
    """How a command speaks of its lines and their verdicts."""

    command: str
    items: str  # what its lines are, in the plural
    yes: str  # a line whose verdict is true
    no: str  # one whose verdict is false
    scored: bool  # whether its lines have a score


BATCH = Words(command="repogym batch", items="jobs", yes="passed", no="failed", scored=True)
VALIDATE = Words(command="repogym validate", items="tasks", yes="valid", no="invalid", scored=False)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", type=Path, metavar="JOBS.jsonl", help="the jobs, one a line")
    parser.add_argument(
        "--output", "-o", type=Path, required=True, metavar="REPORTS.jsonl",
        help="where each job's report goes, a line each, as it ends (missing directories "
        "are made)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on-fail", action="store_true",
        help="exit 1 when a job is graded FAIL too, not only when a job's line is an error",
    )  # fmt: skip
    add_run_options(parser, "job", "grade")


# What `repogym batch --help` ends with.
BATCH_EXITS = (
    "exit codes: 0 every job has its report, passed or failed; 1 some job's line is an "
    "error report (a bad line, a patch that does not apply, a crash), or with "
    "--fail-on-fail some job failed; 2 a usage error; 130 interrupted"
)


def add_validate_options(parser: argparse.ArgumentParser) -> None:
    """``repogym validate``'s options of many tasks."""
    many = parser.add_argument_group(
        "many tasks", "validate every task of a JSON Lines file instead (docs/batch.md)"
    )
    many.add_argument(
        "--tasks", type=Path, metavar="TASKS.jsonl",
        help="the tasks, one a line: repo, base and optionally task, hidden, solution, repeat, id",
    )  # fmt: skip
    many.add_argument(
        "--output", "-o", type=Path, metavar="RESULTS.jsonl",
        help="where each task's result goes, a line each, as it ends (needed with --tasks; "
        "missing directories are made)",
    )  # fmt: skip
    add_run_options(many, "task", "validate")


def add_run_options(parser: argparse._ActionsContainer, noun: str, verb: str) -> None:
    """The options that say how the lines run: ``--jobs``, ``--ray``, ``--resume``."""
    parser.add_argument(
        "--jobs", "-j", type=int, dest="workers", metavar="N",
        help=f"{verb} N {noun}s at once in worker processes (default: the cores)",
    )  # fmt: skip
    parser.add_argument(
        "--ray", metavar="ADDRESS",
        help=f"run each {noun} as a task of the Ray cluster at ADDRESS (`auto`: this machine's)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help=f"take up the run that wrote --output: the {noun}s it finished are skipped",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """``repogym batch``."""
    summary = _run_lines(Job, args.jobs, args, BATCH)
    code, why = exit_of(summary, fail_on_fail=args.fail_on_fail)
    print(f"exit {int(code)}: {why}")
    return code


def exit_of(summary: Summary, *, fail_on_fail: bool) -> tuple[ExitCode, str]:
    """A batch's exit code and the words the summary gives it (issue 45: a batch whose
    jobs failed exits 0, which nothing said)."""
    failed = f"{summary.failed} job{'s' if summary.failed != 1 else ''} failed"
    if summary.errors:
        one = summary.errors == 1
        lines = "1 job's line is an error report" if one else f"{summary.errors} jobs' lines are"
        return ExitCode.FAILED, lines + ("" if one else " error reports")
    if summary.failed and fail_on_fail:
        return ExitCode.FAILED, f"{failed} (--fail-on-fail)"
    if summary.failed:
        return ExitCode.PASSED, (
            f"every job has its report; {failed}, which is exit 1 only with --fail-on-fail"
        )
    return ExitCode.PASSED, "every job has its report"


# validate's options of one task, and of many (--tasks), as (attribute, option).
_ONE_TASK = (
    ("base", "--base"),
    ("task", "--task"),
    ("hidden", "--hidden"),
    ("solution", "--solution"),
    ("repeat", "--repeat"),
    ("directory", "-C"),
)
_MANY_TASKS = (("output", "--output"), ("workers", "--jobs"), ("ray", "--ray"))


def run_validations(args: argparse.Namespace) -> int:
    """``repogym validate --tasks``."""
    given = [option for key, option in _ONE_TASK if getattr(args, key) is not None]
    if given:
        raise UsageError(
            "repogym validate: --tasks takes each task's repo, base, task, hidden, solution "
            f"and repeat from its line: drop {', '.join(given)}"
        )
    if args.output is None:
        raise UsageError(
            "repogym validate: --tasks needs --output RESULTS.jsonl, where each task's "
            "result goes as it ends"
        )
    summary = _run_lines(ValidationJob, args.tasks, args, VALIDATE)
    return ExitCode.FAILED if summary.errors or summary.failed else ExitCode.PASSED


def check_no_run_options(args: argparse.Namespace) -> None:
    """A UsageError when ``repogym validate`` of one task is given options of many."""
    given = [option for key, option in _MANY_TASKS if getattr(args, key) is not None]
    given += ["--resume"] if args.resume else []
    if given:
        raise UsageError(
            f"repogym validate: {', '.join(given)} {'needs' if len(given) == 1 else 'need'} "
            "--tasks TASKS.jsonl, a file of tasks to validate, one a line"
        )


def _run_lines(kind: type[LineT], file: Path, args: argparse.Namespace, words: Words) -> Summary:
    progress = _Progress(sys.stderr, words)
    summary = run_many(
        kind,
        file,
        args.output,
        executor=executor(args, words.command),
        resume=args.resume,
        told=progress.tell,
    )
    progress.end(summary)
    print(summary_table(summary, words), end="")
    return summary


def executor(args: argparse.Namespace, command: str) -> Executor:
    """The executor ``--jobs`` or ``--ray`` asks for."""
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"{command}: --jobs must be at least 1, not {args.workers}")
    if args.ray is not None and args.workers is not None:
        raise UsageError(f"{command}: --jobs and --ray do not go together: choose one")
    return Ray(args.ray) if args.ray is not None else Local(args.workers)


class _Progress:
    """Told of the batch's start and of each line written."""

    def __init__(self, stream: TextIO, words: Words) -> None:
        self.stream = stream
        self.words = words
        self.live = stream.isatty()
        self.last = 0.0

    def tell(self, summary: Summary, line: Mapping[str, Any] | None) -> None:
        now = time.monotonic()
        if line is None:
            skipped = f", {summary.skipped} done before (--resume)" if summary.skipped else ""
            said = f"{self.words.command}: {summary.total} {self.words.items}{skipped}"
            self.stream.write(said + "\n")
        elif self.live:
            self.stream.write("\r" + self._bar(summary, now))
        elif now - self.last >= LOG_EVERY or summary.done + summary.skipped == summary.total:
            self.stream.write(f"{self.words.command}: {self._counts(summary, now)}\n")
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
        w = self.words
        counts = f"{s.passed} {w.yes}, {s.failed} {w.no}, {s.errors} errors"
        return f"{s.done}/{todo} done ({counts}), {s.running} running{eta}"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def summary_table(summary: Summary, words: Words = BATCH) -> str:
    """The run's totals, its mean score (of a batch) and its slowest lines, as aligned
    text."""
    mean = sum(summary.scores) / len(summary.scores) if summary.scores else 0.0
    rows = [
        (words.items, str(summary.total)),
        ("done before (--resume)", str(summary.skipped)),
        (words.yes, str(summary.passed)),
        (words.no, str(summary.failed)),
        ("errors", str(summary.errors)),
    ]
    if words.scored:
        rows.append(("mean score", f"{mean:.3f}" if summary.scores else "-"))
    rows.append(("wall time", _duration(time.monotonic() - summary.started)))
    width = max(len(key) for key, _ in rows)
    text = "".join(f"{key:<{width}}  {value}\n" for key, value in rows)
    if summary.slowest:
        slowest = ", ".join(f"{i} ({s:.1f} s)" for s, i in reversed(summary.slowest))
        text += f"{'slowest':<{width}}  {slowest}\n"
    return text
