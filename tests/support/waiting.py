"""Waiting on a running program for an event, never for a time: a backstop only ends a
test that would otherwise hang."""

from __future__ import annotations

import os
import select
import subprocess

BACKSTOP = 600  # seconds: a safety net, never what a test waits for


def ready_to_read(fd: int, process: subprocess.Popen[str], what: str) -> None:
    """Block until ``fd`` can be read; fail at once, naming ``what`` was awaited, if
    ``process`` exits first."""
    pidfd = os.pidfd_open(process.pid)
    try:
        ready, _, _ = select.select([fd, pidfd], [], [], BACKSTOP)
    finally:
        os.close(pidfd)
    if fd not in ready:
        ended = f"exited with {process.poll()}" if pidfd in ready else "is still running"
        raise AssertionError(f"no sign of {what}: the program {ended}")
