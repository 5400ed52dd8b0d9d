"""``repogym batch``: many submissions and many tasks at once (issue 23).

:func:`run_batch` reads a job file (:mod:`repogym.batch.jobs`), skips the ids an earlier
run already wrote with ``resume``, grades the others with an executor (local worker
processes, :mod:`repogym.batch.local`) and appends each job's line to the output as it
ends, whole, in one write: an interrupted batch loses nothing finished, and ``--resume``
takes it up where it stopped. Progress is told as jobs end; the summary comes last.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.batch.cluster import Ray
from repogym.batch.jobs import Job, job_of, read_jobs
from repogym.batch.local import Local
from repogym.errors import UsageError

__all__ = ["Local", "Ray", "Summary", "finished_ids", "grade_many", "grade_many_async", "run_batch"]


Executor = Local | Ray


def grade_many(
    jobs: Iterable[Job | Mapping[str, Any]],
    *,
    executor: Executor | None = None,
    root: str | os.PathLike[str] = ".",
) -> Generator[dict[str, Any], None, None]:
    """Grade ``jobs`` (objects with a job file line's keys, docs/batch.md; relative paths
    are ``root``'s) with ``executor`` (default: :class:`Local`); each job's line (its
    report, ``id`` and ``timings``) as the job ends. A job that cannot be graded yields
    an error report; closing the iterator stops what runs."""
    given = [
        job if isinstance(job, Job) else job_of(dict(job), n, os.fspath(root))
        for n, job in enumerate(jobs, start=1)
    ]
    _check_ids(given, None)
    yield from (executor or Local()).run(given)


async def grade_many_async(
    jobs: Iterable[Job | Mapping[str, Any]],
    *,
    executor: Executor | None = None,
    root: str | os.PathLike[str] = ".",
) -> AsyncIterator[dict[str, Any]]:
    """:func:`grade_many` for an event loop (a training loop's rollouts): the grading
    runs in a thread, and each line is awaited."""
    lines = grade_many(jobs, executor=executor, root=root)
    end = object()
    try:
        while True:
            line = await asyncio.to_thread(next, lines, end)
            if line is end:
                return
            yield line  # type: ignore[misc]
    finally:
        await asyncio.to_thread(lines.close)


@dataclass(slots=True)
class Summary:
    """What a batch came to, as its lines were written."""

    total: int  # the jobs of the file
    skipped: int = 0  # finished by an earlier run (resume)
    passed: int = 0
    failed: int = 0
    errors: int = 0
    scores: list[float] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (seconds, id)
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.errors

    def add(self, line: Mapping[str, Any]) -> None:
        if line.get("error") is not None:
            self.errors += 1
        elif line.get("passed") is True:
            self.passed += 1
        else:
            self.failed += 1
        score = line.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            self.scores.append(float(score))
        timings = line.get("timings")
        seconds = timings.get("total") if isinstance(timings, Mapping) else None
        if isinstance(seconds, int | float):
            self.slowest = sorted([*self.slowest, (float(seconds), str(line.get("id")))])[-5:]


def finished_ids(output: Path) -> set[str]:
    """The ids of the lines ``output`` holds whole (a line cut by a crash is not one)."""
    ids: set[str] = set()
    if not output.exists():
        return ids
    with output.open(encoding="utf-8", errors="surrogateescape") as lines:
        for text in lines:
            if not text.endswith("\n"):
                continue
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("id"), str):
                ids.add(line["id"])
    return ids


def run_batch(
    jobs_file: Path,
    output: Path,
    *,
    executor: Executor | None = None,
    resume: bool = False,
    told: Callable[[Summary, Mapping[str, Any] | None], None] | None = None,
) -> Summary:
    """Grade every job of ``jobs_file`` into ``output`` (JSON Lines); ``told`` hears of
    the batch's start (no line) and of every line written."""
    if not jobs_file.is_file():
        raise UsageError(f"{jobs_file}: no such job file; write one job (a JSON object) a line")
    if output.exists() and output.stat().st_size and not resume:
        raise UsageError(
            f"--output {output} already holds lines: pass --resume to take that batch up, "
            "or name a new file"
        )
    jobs = list(read_jobs(jobs_file))
    _check_ids(jobs, jobs_file)
    done = finished_ids(output) if resume else set()
    todo = [job for job in jobs if job.id not in done]
    summary = Summary(total=len(jobs), skipped=len(jobs) - len(todo))
    if told is not None:
        told(summary, None)
    fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:

        def write(line: dict[str, Any]) -> None:
            data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode(
                "utf-8", "surrogateescape"
            )
            os.write(fd, data)  # one write: the line is whole or absent
            summary.add(line)
            if told is not None:
                told(summary, line)

        lines = (executor or Local()).run(todo)
        try:
            for line in lines:
                write(line)
        finally:
            lines.close()
    finally:
        os.close(fd)
    return summary


def _check_ids(jobs: list[Job], jobs_file: Path | None) -> None:
    seen: dict[str, int] = {}
    where = f"{jobs_file}: line" if jobs_file is not None else "job"
    for job in jobs:
        if job.id in seen:
            raise UsageError(
                f"{where} {job.line}: id {job.id!r} is {seen[job.id]}'s too; give each job "
                "an id of its own"
            )
        seen[job.id] = job.line
