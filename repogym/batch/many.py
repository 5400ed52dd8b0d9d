"""Many work items at once (issue 23): the jobs of ``repogym batch`` (submissions to grade)
and the tasks of ``repogym validate --tasks`` (tasks to validate), run by one executor.

:func:`run_many` reads a line file (:mod:`repogym.batch.lines`), skips the ids an earlier
run already wrote with ``resume``, runs the others with an executor (local worker
processes, :mod:`repogym.batch.local`, or Ray, :mod:`repogym.batch.cluster`) and appends
each item's line to the output as it ends, whole, in one write: an interrupted run loses
nothing finished, and ``--resume`` takes it up where it stopped. Progress is told as items
end; the summary comes last.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.batch.cluster import Ray
from repogym.batch.jobs import Job
from repogym.batch.lines import LineT, check_ids, line_of, read_lines
from repogym.batch.local import Local
from repogym.batch.validations import ValidationJob
from repogym.errors import UsageError

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
    yield from _many(Job, jobs, executor, root)


def validate_many(
    tasks: Iterable[ValidationJob | Mapping[str, Any]],
    *,
    executor: Executor | None = None,
    root: str | os.PathLike[str] = ".",
) -> Generator[dict[str, Any], None, None]:
    """Validate ``tasks`` (objects with a tasks file line's keys, docs/batch.md) as
    :func:`grade_many` grades jobs; each task's line (``id``, ``valid``, ``findings``,
    ``timings``) as its validation ends."""
    yield from _many(ValidationJob, tasks, executor, root)


def _many(
    kind: type[LineT],
    items: Iterable[LineT | Mapping[str, Any]],
    executor: Executor | None,
    root: str | os.PathLike[str],
) -> Generator[dict[str, Any], None, None]:
    given = [
        item if isinstance(item, kind) else line_of(kind, _plain(item), n, os.fspath(root))
        for n, item in enumerate(items, start=1)
    ]
    check_ids(given, None)
    yield from (executor or Local()).run(given)


def _plain(item: object) -> object:
    """A mapping as the dict a line's JSON would be; anything else as it is, for the line
    to say it is not an object."""
    return dict(item) if isinstance(item, Mapping) else item


async def grade_many_async(
    jobs: Iterable[Job | Mapping[str, Any]],
    *,
    executor: Executor | None = None,
    root: str | os.PathLike[str] = ".",
) -> AsyncIterator[dict[str, Any]]:
    """:func:`grade_many` for an event loop (a training loop's rollouts): the grading
    runs in a thread of its own, and each line is awaited. Cancelled (or closed), it
    stops the batch once the wait in flight in that thread returns, without holding up
    the event loop."""
    lines = grade_many(jobs, executor=executor, root=root)
    end = object()
    # One thread does every step of the generator, so its close waits for the step in
    # flight (a generator must not be closed from a thread while it runs in another).
    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repogym-grade-many")
    loop = asyncio.get_running_loop()
    try:
        while True:
            line = await loop.run_in_executor(thread, next, lines, end)
            if line is end:
                return
            yield line  # type: ignore[misc]
    finally:
        thread.submit(lines.close)
        thread.shutdown(wait=False)


@dataclass(slots=True)
class Summary:
    """What a run came to, as its lines were written. ``passed`` counts the lines whose
    ``verdict`` key is true (a job's ``passed``, a task's ``valid``), ``failed`` the
    others but for error lines."""

    total: int  # the items of the file
    skipped: int = 0  # finished by an earlier run (resume)
    passed: int = 0
    failed: int = 0
    errors: int = 0
    scores: list[float] = field(default_factory=list)
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (seconds, id)
    started: float = field(default_factory=time.monotonic)
    verdict: str = "passed"
    slots: int = 1  # how many the executor runs at once

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.errors

    @property
    def running(self) -> int:
        """How many are running now: as many as the executor runs at once, or those left."""
        return min(self.slots, self.total - self.skipped - self.done)

    def add(self, line: Mapping[str, Any]) -> None:
        if line.get("error") is not None:
            self.errors += 1
        elif line.get(self.verdict) is True:
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


def _drop_cut_line(output: Path) -> None:
    """Cut off what a killed run left of its last line (a line without its end), so that
    the next line written starts on a line of its own."""
    if not output.exists():
        return
    with output.open("rb+") as file:
        size = file.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            file.seek(max(0, end - 65536))
            block = file.read(end - max(0, end - 65536))
            newline = block.rfind(b"\n")
            if newline >= 0:
                end = max(0, end - len(block)) + newline + 1
                break
            end = max(0, end - len(block))
        if end != size:
            file.truncate(end)


def _write_all(fd: int, data: bytes) -> None:
    """Append ``data`` (one line): a single write in all but a full disk's case, where
    what is left is written after what went."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


Told = Callable[[Summary, Mapping[str, Any] | None], None]


def run_batch(
    jobs_file: Path,
    output: Path,
    *,
    executor: Executor | None = None,
    resume: bool = False,
    told: Told | None = None,
) -> Summary:
    """Grade every job of ``jobs_file`` into ``output`` (JSON Lines); ``told`` hears of
    the batch's start (no line) and of every line written."""
    return run_many(Job, jobs_file, output, executor=executor, resume=resume, told=told)


def run_many(
    kind: type[LineT],
    file: Path,
    output: Path,
    *,
    executor: Executor | None = None,
    resume: bool = False,
    told: Told | None = None,
) -> Summary:
    """Run every item of ``file`` (lines of ``kind``) into ``output`` (JSON Lines);
    ``told`` hears of the run's start (no line) and of every line written."""
    if not file.is_file():
        raise UsageError(
            f"{file}: no such {kind.noun} file; write one {kind.noun} (a JSON object) a line"
        )
    if output.exists() and output.stat().st_size and not resume:
        raise UsageError(
            f"--output {output} already holds lines: pass --resume to take that batch up, "
            "or name a new file"
        )
    items = list(read_lines(kind, file))
    check_ids(items, file)
    done = set()
    if resume:
        _drop_cut_line(output)
        done = finished_ids(output)
    todo = [item for item in items if item.id not in done]
    chosen = executor or Local()
    summary = Summary(
        total=len(items),
        skipped=len(items) - len(todo),
        verdict=kind.verdict,
        slots=chosen.slots(),
    )
    if told is not None:
        told(summary, None)
    output.parent.mkdir(parents=True, exist_ok=True)  # as --json's and --markdown's are
    fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _write_lines(chosen, chosen.run(todo), fd, summary, told)
    finally:
        os.close(fd)
    return summary


def _write_lines(
    executor: Executor,
    lines: Generator[dict[str, Any], None, None],
    fd: int,
    summary: Summary,
    told: Told | None,
) -> None:
    """Append each line to ``fd`` as it comes, whole, in one write; closing ``lines``
    (stopping what runs) however it ends."""
    try:
        for line in lines:
            data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode(
                "utf-8", "surrogateescape"
            )
            _write_all(fd, data)
            summary.add(line)
            summary.slots = executor.slots()
            if told is not None:
                told(summary, line)
    finally:
        lines.close()
