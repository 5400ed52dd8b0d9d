"""Runs one benchmark and measures its whole process tree, as a script of its own.

The host's runner (:meth:`repogym.run.host.Runner.measured`) runs it as ``python -I -c
<this file's text> MODE COMMAND`` in place of ``COMMAND`` (so it needs nothing but the
standard library and can be read by any user), for ``timing: cpu | instructions`` and
``measure: peak_memory``. It:

- makes itself not dumpable (a process of the same user can then neither trace it nor
  open its descriptors through ``/proc``) and a child subreaper, so that every process the
  benchmark starts and leaves behind is re-parented to it rather than to the grader;
- runs ``/bin/sh -c COMMAND`` as its child, and once that exits, kills every process the
  benchmark left (and says how many: under Valgrind they could not be counted) and reaps
  them all, so the kernel's accounting of the reaped children
  (``getrusage(RUSAGE_CHILDREN)``) covers the whole tree: user + system CPU time, and the
  largest peak RSS of any one process;
- for ``cpu``, counts the tree's CPU time with the kernel's task clock where it gives one
  (``perf_event_open`` with ``inherit``: a child's time is added when it exits, reaped or
  not, so a benchmark that ignores SIGCHLD cannot hide its workers), else from the
  reaped children's accounting;
- for ``instructions``, counts the user-space instructions the tree retires: a hardware
  counter (``perf_event_open`` with ``inherit``, pinned, opened on the child before it
  execs, and failed unless it ran the whole time) where the kernel allows one, else
  Callgrind (``valgrind --trace-children=yes``), whose dumps
  are summed (``--dump-before=fork`` splits a forking process's count at each fork, so a
  forked child does not count its parent's instructions again);
- prints, last of all and when nothing else of the tree is left to write, one line
  ``MARK {json}`` on its stdout, and exits with the benchmark's status.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import re
import resource
import shutil
import signal
import struct
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

MARK = "\x1erepogym-measure "
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331}
# perf_event_attr, version 0 (64 bytes). Flags: disabled | inherit | exclude_kernel |
# exclude_hv | enable_on_exec, and pinned for the hardware counter (a pinned event that
# loses its counter to another goes into an error state instead of being multiplexed).
# read_format: the value, then the times the event was enabled and running.
INSTRUCTIONS = (0, 1, True)  # PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, pinned
TASK_CLOCK = (1, 1, False)  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK (nanoseconds)
_FLAGS = (1 << 0) | (1 << 1) | (1 << 5) | (1 << 6) | (1 << 12)
_PINNED = 1 << 2
_TIMES = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING


def main(mode: str, command: str) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    argv = ["/bin/sh", "-c", command]
    event = _event(libc, mode)
    dumps = None
    if mode == "instructions" and event is None:
        if shutil.which("valgrind") is None:
            _report({"error": "no-counter"})
            return 127
        dumps = tempfile.mkdtemp(prefix="repogym-callgrind-")
        argv = [
            "valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-before=fork",
            "--dump-line=no", "--dump-instr=no", f"--log-file={dumps}/log.%p",
            f"--callgrind-out-file={dumps}/out.%p", *argv,
        ]  # fmt: skip
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(go_w)
        os.close(ready_r)
        # Not the measurer: a counter may be opened on this process (a non-dumpable one
        # is the kernel's to refuse to its own user), and it execs the benchmark next.
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        os.close(ready_w)
        os.read(go_r, 1)  # the counter, if any, is on us before we exec
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(go_r)
    os.close(ready_w)
    os.read(ready_r, 1)  # the child is dumpable now (its end closed)
    os.close(ready_r)
    # The benchmark's first process is this copy of the measurer until it execs, and the
    # kernel keeps a process's highest peak across exec: no peak of the tree can be
    # below the copy's.
    floor = _peak(child)
    fd = _counter(libc, child, event) if event is not None else None
    os.write(go_w, b"go")
    os.close(go_w)
    status = os.waitpid(child, 0)[1]
    left = _end_the_rest()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures: dict[str, object] = {
        "left": left,
        "cpu_ns": round((usage.ru_utime + usage.ru_stime) * 1e9),
        "peak_bytes": usage.ru_maxrss * 1024,
        "floor_bytes": floor,
    }
    if fd is not None:
        figures.update(_read(fd, mode))
    elif dumps is not None:
        figures.update(_callgrind(dumps), counter="valgrind")
        shutil.rmtree(dumps, ignore_errors=True)
    _report(figures)
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _event(libc: ctypes.CDLL, mode: str) -> tuple[int, int, bool] | None:
    """The kernel's event that counts ``mode``'s figure, where the kernel gives a counter
    of it here; else None (reaped children's accounting, or Callgrind)."""
    event = {"instructions": INSTRUCTIONS, "cpu": TASK_CLOCK}.get(mode)
    return event if event is not None and _counter(libc, 0, event) is not None else None


def _counter(libc: ctypes.CDLL, pid: int, event: tuple[int, int, bool]) -> int | None:
    """A counter of ``event`` for ``pid`` (0: this process, a probe) and every process
    it starts, from its next exec on; None where the kernel gives none."""
    number = PERF_EVENT_OPEN.get(platform.machine())
    if number is None:
        return None
    kind, config, pinned = event
    flags = _FLAGS | (_PINNED if pinned else 0)
    attr = struct.pack("IIQQQQQ", kind, 64, config, 0, 0, _TIMES, flags).ljust(64, b"\0")
    buffer = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(number, buffer, pid, -1, -1, 8)  # PERF_FLAG_FD_CLOEXEC
    if fd < 0:
        return None
    if pid == 0:
        os.close(fd)
    return int(fd)


def _read(fd: int, mode: str) -> dict[str, object]:
    """The counter's figures: the count, unless it did not run the whole time the
    benchmark did (taken by another event, or in an error state)."""
    data = os.read(fd, 24)
    if len(data) < 24:
        return {"error": "counter-lost"}
    value, enabled, running = struct.unpack("QQQ", data)
    if running < enabled:
        return {"error": "counter-lost"}
    if mode == "cpu":
        return {"cpu_ns": value, "counter": "task-clock"}
    return {"instructions": value, "counter": "perf_event"}


def _end_the_rest() -> int:
    """Kill and reap every process left of the tree (they are our children now); how
    many there were."""
    ended: set[int] = set()
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue
        except ChildProcessError:
            return len(ended)
        for child in _children():
            if not _zombie(child):
                ended.add(child)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return len(ended)


def _peak(pid: int) -> int:
    """The peak resident set of ``pid`` so far, in bytes (0 where /proc does not say)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _zombie(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() or ["?"])[0] == "Z"
    except OSError:
        return True  # gone already


def _children() -> list[int]:
    me = os.getpid()
    with contextlib.suppress(OSError):
        return [int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(me):
            found.append(int(entry.name))
    return found


def _callgrind(dumps: str) -> dict[str, int]:
    """The instructions of every Callgrind dump, and how many of the processes it traced
    (each has a log) wrote no final count: killed before Valgrind could write it."""
    total, traced, counted = 0, set(), set()
    for path in Path(dumps).iterdir():
        kind, _, pid = path.name.partition(".")
        if kind == "log":
            traced.add(pid)
            continue
        text = path.read_text(errors="replace")
        found = re.search(r"^totals:\s*(\d+)", text, re.MULTILINE)
        if found is not None:
            total += int(found.group(1))
            counted.add(pid)  # out.<pid>: the last dump; out.<pid>.<n>: one at a fork
        elif "." in pid:
            traced.add(pid)  # a dump at a fork, cut short
    return {"instructions": total, "uncounted": len(traced - counted)}


def _report(figures: Mapping[str, object]) -> None:
    sys.stdout.flush()
    os.write(1, (MARK + json.dumps(figures, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
