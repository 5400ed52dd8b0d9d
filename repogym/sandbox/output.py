"""Waiting for a command and reading its output, for every runner: the exit woken by a
pidfd, polls in slices a cancel's signal gets through, and a pipe read to its end in a
thread keeping only its tail (repogym.run.host; a container's output is kept the same way).
"""

from __future__ import annotations

import math
import os
import select
import subprocess
import threading
import time
import weakref
from typing import IO

from repogym.sandbox.process import leave_stop_signals_to_the_main_thread

__all__ = ["POLL_SLICE", "Tail", "keep_tail", "readable", "wait_exit"]


def wait_exit(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for ``process`` to exit, at most ``timeout`` seconds; whether it did.

    ``Popen.wait(timeout=...)`` polls with sleeps of up to 50 ms, which would round every
    wall time the perf grader takes up to a 50 ms step; a pidfd wakes us on the exit itself.
    """
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: fall back to polling
        try:
            process.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready = readable(pidfd, timeout)
    finally:
        os.close(pidfd)
    if not ready:
        return False
    process.wait()
    return True


# How long one poll of a wait may block. The kernel may deliver a cancel's SIGINT or
# SIGTERM to any thread of the process that does not block it (our output readers block
# them; a library's thread may not), and then this poll is not interrupted: Python runs
# the handler in the main thread between bytecodes only. A grade cancelled that way
# waited out its command's whole timeout (a one-hour sleep in tests/action/test_cancel.py
# hung CI); waking every second lets it through.
POLL_SLICE = 1.0


def readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` is readable (or at its end) within ``timeout`` seconds (None: ever).

    poll, not select: a grader with many files open has descriptors past select's 1024.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = POLL_SLICE if deadline is None else min(POLL_SLICE, deadline - time.monotonic())
        if poller.poll(max(0, math.ceil(left * 1000))):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


class Tail:
    """Reads a pipe to the end in a thread, keeping only the last ``cap`` bytes, until
    :meth:`join`'s deadline stops it."""

    def __init__(self, pipe: IO[bytes] | None, cap: int) -> None:
        self._pipe = pipe
        self._cap = cap
        self._buffer = bytearray()
        self.cut = 0
        # join() writes to this pipe to stop the reader; the reader closes its end, the
        # writing end is closed by join() or, if the run was interrupted, by the collector.
        self._stop_r, self._stop_w = os.pipe()
        self._close_stop_w = weakref.finalize(self, os.close, self._stop_w)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        leave_stop_signals_to_the_main_thread()
        try:
            if self._pipe is None:
                return
            with self._pipe:
                poller = select.poll()
                poller.register(self._pipe.fileno(), select.POLLIN)
                poller.register(self._stop_r, select.POLLIN)
                while True:
                    events = dict(poller.poll())
                    if self._stop_r in events:
                        return
                    chunk = os.read(self._pipe.fileno(), 65536)
                    if not chunk:
                        return
                    self._keep(chunk)
        finally:
            os.close(self._stop_r)

    def _keep(self, chunk: bytes) -> None:
        self.cut += keep_tail(self._buffer, chunk, self._cap)

    def join(self, deadline: float) -> None:
        """Wait until the pipe's end or ``deadline`` (monotonic clock), then stop."""
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            os.write(self._stop_w, b"x")
            self._thread.join()
        self._close_stop_w()

    def text(self) -> str:
        return self._buffer.decode("utf-8", errors="replace")


def keep_tail(buffer: bytearray, chunk: bytes, cap: int) -> int:
    """Add ``chunk`` to ``buffer``, dropping its start beyond ``cap`` bytes; how many
    bytes were dropped (the output of a command in a container is kept the same way)."""
    buffer += chunk
    excess = len(buffer) - cap
    if excess > 0:
        del buffer[:excess]
        return excess
    return 0
