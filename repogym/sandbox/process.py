"""What the command line needs of the process: signals that stop a command cleanly, streams
that write any file name, and one line for an error that is not the user's."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "STOP_SIGNALS",
    "Interrupted",
    "discard_stdout",
    "internal_error_line",
    "leave_stop_signals_to_the_main_thread",
    "lenient_streams",
    "signals_interrupt",
]


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, as Ctrl-C raises KeyboardInterrupt,
    so that every ``finally`` runs on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Make SIGTERM (a CI job cancelled), SIGHUP (a closed terminal) and SIGINT (Ctrl-C)
    raise :class:`Interrupted`, then put the previous handlers back.

    A signal that is ignored when we start (``nohup``) stays ignored, as Python leaves
    SIGINT. Only the first raises: a second must not cut short the cleanup of the first.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Interrupted(signum)

    previous: list[tuple[signal.Signals, Any]] = []
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous.append((signum, signal.signal(signum, handler)))
    # Ctrl-C too, unless someone else handles it: once only, like the others.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous.append((signal.SIGINT, signal.signal(signal.SIGINT, handler)))
    try:
        yield
    finally:
        for signum, old in previous:
            # None: a handler not set from Python, which cannot be put back; the default.
            signal.signal(signum, signal.SIG_DFL if old is None else old)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def leave_stop_signals_to_the_main_thread() -> None:
    """For a worker thread, at its start: block the signals that stop a run, so that the
    kernel delivers them to the main thread, where Python runs their handlers. One
    delivered to a worker leaves the main thread blocked in its system call, the cancel
    unseen until that returns."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def lenient_streams() -> Iterator[None]:
    """Make stdout and stderr write what their encoding cannot (undecodable bytes of a
    file name, held as lone surrogates) as backslash escapes instead of failing; then
    put their error handling back."""
    changed: list[tuple[io.TextIOWrapper, str | None]] = []
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors != "backslashreplace":
            changed.append((stream, stream.errors))
            stream.reconfigure(errors="backslashreplace")
    try:
        yield
    finally:
        for stream, errors in changed:
            with contextlib.suppress(OSError, ValueError):  # reconfigure flushes; may be closed
                stream.reconfigure(errors=errors)


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered, flushed at exit, goes
    nowhere instead of failing again on the closed pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def internal_error_line(error: BaseException) -> str:
    """One line saying what failed and where (the innermost frame in repogym), and where
    the whole traceback went: stderr with ``REPOGYM_DEBUG=1``, else a new file under the
    temporary directory (stderr too, if that file cannot be written)."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if f"{os.sep}repogym{os.sep}" in f.filename] or frames
    where = f" at {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    what = str(error).splitlines()[0] if str(error) else ""
    line = f"{type(error).__name__}{where}{': ' + what if what else ''}"
    if os.environ.get("REPOGYM_DEBUG") == "1":
        sys.stderr.write(text)
        return f"{line} (traceback above)"
    try:
        fd, path = tempfile.mkstemp(prefix="repogym-error-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
    except OSError as write_error:
        sys.stderr.write(text)
        return f"{line} (traceback above: none could be written to a file: {write_error})"
    return f"{line}; this is a bug in repogym, not in your change: the traceback is in {path}"
