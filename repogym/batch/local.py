"""The local executor of a batch (issue 23): worker processes on this machine, one job
each at a time, ``--jobs N`` of them (default: the cores). A job is any work item
(:class:`repogym.batch.lines.Work`): a submission to grade, a task to validate.

- **Perf jobs run alone.** A job that times a benchmark must not run beside other work,
  which would time it too. Each worker takes a lock on a file shared by the batch's
  workers for the whole of a job: shared for a job without ``perf``, exclusive for one
  with it. A turnstile (a second lock, taken exclusively on the way in) keeps a waiting
  perf job from being starved by the others: once it waits, no new job starts until it
  has run.
- **A dead worker** (killed, out of memory) takes its job with it, and the pool its
  other workers: every job that was running is given once more, one at a time (so a
  second death is surely its own job's), and said so in its line (``retried``); a job
  whose worker dies twice gets an error line. A worker stopped alone (a SIGTERM that is
  not the batch's) ends its job's grade as a Ctrl-C would: that job is tried once more.
- **Ctrl-C, SIGTERM**: the workers are told to stop (their grades' commands are killed
  as a grade's are), nothing more is started, every job's clean-up is waited for (the
  room's lock), the workers are killed, and every line finished is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import signal
import tempfile
from collections.abc import Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.batch.lines import Work
from repogym.sandbox import scratch
from repogym.sandbox.process import signals_interrupt
from repogym.sandbox.reaper import not_dumpable

_LOCKS: tuple[str, str] = ("", "")  # this worker's (turnstile, room), set by _start


def _start(locks: tuple[str, str]) -> None:
    """A worker's start: the batch's lock files, and Ctrl-C left to the parent, which
    stops the workers with SIGTERM."""
    global _LOCKS
    _LOCKS = locks
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(frozen=True, slots=True)
class Local:
    """Run on this machine: ``workers`` processes (default: the cores); 1 runs the jobs
    one after another in this process."""

    workers: int | None = None

    def slots(self) -> int:
        """How many jobs run at once."""
        return self.workers or os.cpu_count() or 1

    def run(self, jobs: Sequence[Work]) -> Generator[dict[str, Any], None, None]:
        count = self.slots()
        if count == 1:
            for job in jobs:
                yield job.run()
            return
        # This process keeps the environment the batch started with, beside commands
        # that may run as its own user: closed to them, as a grading process is.
        not_dumpable()
        with tempfile.TemporaryDirectory(prefix="repogym-batch-") as locks:
            yield from run_local(jobs, count, Path(locks))


def _run(job: Work, perf: bool) -> dict[str, Any]:
    """One job in a worker, holding the room as its kind must."""
    with signals_interrupt(), _room(perf):
        return job.run()


@contextlib.contextmanager
def _room(alone: bool) -> Iterator[None]:
    turnstile_path, room_path = _LOCKS
    if not room_path:
        yield
        return
    with Path(turnstile_path).open("a") as turnstile, Path(room_path).open("a") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(room, fcntl.LOCK_EX)  # every job in the room has left
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(room, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)


def run_local(jobs: Iterable[Work], workers: int, locks_dir: Path) -> Iterator[dict[str, Any]]:
    """Grade ``jobs`` in ``workers`` processes; each line as its job ends (in the order
    they end). Closing the iterator stops the workers.

    When a worker dies, the pool's other workers go with it (``concurrent.futures``
    ends a broken pool), so which job took it down is not known: the jobs that were
    running are tried again one at a time, where a death is its job's own, before the
    others go on at full width."""
    locks = (str(locks_dir / "turnstile.lock"), str(locks_dir / "room.lock"))
    pending = list(jobs)
    tries: dict[str, int] = {}
    while pending:
        suspects, pending = yield from _one_pool(pending, workers, locks, tries)
        for suspect in suspects:
            again, _ = yield from _one_pool([suspect], 1, locks, tries)
            pending = again + pending  # none: a death alone is the job's second


def _one_pool(
    pending: list[Work], workers: int, locks: tuple[str, str], tries: dict[str, int]
) -> Generator[dict[str, Any], None, tuple[list[Work], list[Work]]]:
    """Run ``pending`` in a pool until they are done or the pool breaks; the jobs the
    broken pool was running (to be tried again) and those it had not started."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["repogym.batch._forkserver"])
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=(locks,))
    running: dict[Future[dict[str, Any]], Work] = {}
    queue = list(pending)
    try:
        while queue or running:
            while queue and len(running) < workers:
                job = queue.pop(0)
                tries[job.id] = tries.get(job.id, 0) + 1
                running[pool.submit(_run, job, job.perf)] = job
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = [f for f in finished if isinstance(f.exception(), BrokenProcessPool)]
            for future in [f for f in finished if f not in broken]:
                ended = running.pop(future)
                line = _line(ended, future, tries)
                if line is None:  # its worker was stopped: once more, after the others
                    queue.append(ended)
                else:
                    yield line
            if broken:
                again = yield from _after_break(running, tries)
                scratch.sweep_ended()
                return again, queue
    except BaseException:  # an interrupt, or the iterator closed
        _stop(pool, locks[1])
        scratch.sweep_ended()
        raise
    pool.shutdown()
    scratch.sweep_ended()  # what the workers, gone now, made for their grades
    return [], []


def _line(
    job: Work, future: Future[dict[str, Any]], tries: dict[str, int]
) -> dict[str, Any] | None:
    """The line of a job its worker ended; None to try it again: something stopped its
    worker's grade (a SIGTERM to that worker alone comes back as the grade's exception,
    never as the batch's own interrupt)."""
    error = future.exception()
    if error is None:
        return _marked(job, future.result(), tries)
    if tries[job.id] < 2:
        return None
    message = f"the worker running this job was stopped twice ({type(error).__name__})"
    return {**job.error_line(message), "retried": True}


def _marked(job: Work, line: dict[str, Any], tries: dict[str, int]) -> dict[str, Any]:
    if tries[job.id] > 1:
        line["retried"] = True
    return line


def _after_break(
    running: dict[Future[dict[str, Any]], Work], tries: dict[str, int]
) -> Generator[dict[str, Any], None, list[Work]]:
    """A worker died: the lines of the jobs that finished, and the others that were
    running, to be tried again (one at a time), once."""
    again = []
    for future, lost in running.items():
        if future.done() and future.exception() is None:
            yield _marked(lost, future.result(), tries)
        elif tries[lost.id] >= 2:
            message = "the worker running this job died twice (killed, or out of memory)"
            yield {**lost.error_line(message), "retried": True}
        else:
            again.append(lost)
    return again


def _stop(pool: ProcessPoolExecutor, room_path: str) -> None:
    """Tell every worker to stop (SIGTERM: its grade's commands are killed on the way
    out), wait until every job has left the room (each leaves once its commands are
    gone), then kill what is left of the workers: an idle one that the SIGTERM took
    while it held the pool's queue would keep the others waiting for that queue."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(ProcessLookupError, AttributeError, TypeError):
            os.kill(process.pid, signal.SIGTERM)
    with Path(room_path).open("a") as room:
        fcntl.flock(room, fcntl.LOCK_EX)  # no job is in the room: their clean-ups are done
        fcntl.flock(room, fcntl.LOCK_UN)
    for process in processes:
        with contextlib.suppress(ProcessLookupError, AttributeError, TypeError):
            os.kill(process.pid, signal.SIGKILL)
        process.join()
