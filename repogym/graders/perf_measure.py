"""What one run of the benchmark measures, beyond the wall clock (issue 24).

``timing: cpu`` and ``instructions`` and ``measure: peak_memory`` wrap the benchmark's
command in a measurer that accounts for its whole process tree and prints its figures
as the last line of stdout, once nothing else of the tree is left to write:

- **on the host**, :mod:`repogym.graders._measure_tree` (a Python script run by this
  interpreter): the kernel's accounting of the reaped children (every process the
  benchmark starts is re-parented to it and reaped), and instructions from a hardware
  counter or Callgrind;
- **in a container** (a task's ``environment``, where the image may have no Python), a
  shell that is the container's process 1: the container's own cgroup counts every
  process in it (CPU time, memory peak), and process 1 kills the rest (``kill -9 -1``)
  before it reads them. Instructions come from Callgrind in the image (a container gets
  no hardware counters): the image must have ``valgrind``.

Process 1 of a container ignores every signal it has no handler for, and both measurers
are not dumpable (the host's by ``prctl``; the container's shell because it runs from an
execute-only copy, which the kernel does not let the same user trace or read), so a
benchmark can neither stop them nor reach their memory or descriptors; killing the host's
measurer fails the run (a non-zero exit).
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from repogym.graders import _measure_tree
from repogym.runner import CommandResult

MARK = _measure_tree.MARK
_SCRIPT = Path(_measure_tree.__file__).read_text(encoding="utf-8")

# $1: what to measure (cpu, instructions, peak_memory), $2: the command. Run from an
# execute-only copy of the shell (see wrapped()), so that the kernel makes it not
# dumpable: the benchmark, the same uid, can then neither trace it nor reach its memory.
_CONTAINER = r"""
mark() { printf '\036repogym-measure %s\n' "$1"; }
[ "$$" = 1 ] || { mark '{"error": "not-pid-1"}'; exit 125; }
if [ "$1" = instructions ]; then
    command -v valgrind >/dev/null 2>&1 || { mark '{"error": "no-counter"}'; exit 127; }
    d=$(mktemp -d) || exit 125
    valgrind --tool=callgrind --trace-children=yes --dump-before=fork --dump-line=no \
        --dump-instr=no --log-file="$d/log.%p" --callgrind-out-file="$d/out.%p" /bin/sh -c "$2"
else
    /bin/sh -c "$2"
fi
code=$?
running() {  # n: how many processes but this one are alive (zombies are not); no subshell
    n=0
    for p in /proc/[0-9]*; do
        [ "$p" = /proc/1 ] && continue
        s=; read -r s <"$p/stat" 2>/dev/null || continue
        s=${s##*) }
        [ "${s%% *}" = Z ] || n=$((n + 1))
    done
}
running; left=$n
while [ "$n" != 0 ]; do kill -9 -1 2>/dev/null; running; done
cpu=null; peak=null
cg=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)
v2=/sys/fs/cgroup$cg
[ -r "$v2/cpu.stat" ] || v2=/sys/fs/cgroup
if [ -r "$v2/cpu.stat" ]; then
    while read -r k v; do [ "$k" = usage_usec ] && cpu=$((v * 1000)); done <"$v2/cpu.stat"
    [ -r "$v2/memory.peak" ] && read -r peak <"$v2/memory.peak"
else
    for f in /sys/fs/cgroup/cpuacct/cpuacct.usage /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage; do
        [ -r "$f" ] && { read -r cpu <"$f"; break; }
    done
    f=/sys/fs/cgroup/memory/memory.max_usage_in_bytes
    [ -r "$f" ] && read -r peak <"$f"
fi
extra=
if [ "$1" = instructions ]; then
    total=0; uncounted=0
    for f in "$d"/log.*; do
        [ -e "$f" ] || continue
        t=$(grep -m1 '^totals:' "$d/out.${f##*/log.}" 2>/dev/null | cut -d' ' -f2)
        [ -n "$t" ] || uncounted=$((uncounted + 1))
    done
    for f in "$d"/out.*; do
        t=$(grep -m1 '^totals:' "$f" | cut -d' ' -f2)
        [ -n "$t" ] && total=$((total + t))
    done
    extra=", \"instructions\": $total, \"uncounted\": $uncounted, \"counter\": \"valgrind\""
fi
mark "{\"cpu_ns\": $cpu, \"peak_bytes\": $peak, \"left\": $left$extra}"
exit $code
"""
# Where the container's measurer copies the shell to, execute-only.
_SHELL_COPY = "/tmp/.repogym-measurer"


def wrapped(command: str, what: str, *, in_container: bool) -> str:
    """``command`` run by the measurer of ``what`` (``cpu``, ``instructions`` or
    ``peak_memory``)."""
    if in_container:
        copy = _SHELL_COPY
        return (
            f"cp /bin/sh {copy} && chmod 111 {copy} && exec {copy} -c "
            f"{shlex.quote(_CONTAINER)} measure {what} {shlex.quote(command)}"
        )
    python = shlex.quote(sys.executable)
    return f"exec {python} -I -c {shlex.quote(_SCRIPT)} {what} {shlex.quote(command)}"


@dataclass(frozen=True, slots=True)
class Figures:
    """One run's figures, as its measurer printed them."""

    cpu_ns: int | None = None
    peak_bytes: int | None = None
    instructions: int | None = None
    counter: str | None = None  # perf_event, valgrind or task-clock: which counted
    left: int = 0  # processes still running when the benchmark ended (killed)
    uncounted: int = 0  # processes Callgrind traced that ended with no count written
    floor_bytes: int | None = None  # the least peak the host's measurer can report
    # no-counter: neither hardware counters nor valgrind; counter-lost: the counter did
    # not run the whole time; not-pid-1: a container's measurer that is not its process 1
    error: str | None = None


def taken(result: CommandResult) -> tuple[CommandResult, Figures | None]:
    """The run's own result (its stdout without the measurer's line) and the figures;
    None when the measurer's line is not the very end of stdout (it did not finish)."""
    text = result.stdout
    at = text.rfind(MARK)
    if at < 0:
        return result, None
    line = text[at + len(MARK) :]
    if line.count("\n") > 1 or (line.count("\n") == 1 and not line.endswith("\n")):
        return result, None
    try:
        raw = json.loads(line)
    except ValueError:
        return result, None
    if not isinstance(raw, dict):
        return result, None
    fields = {k: raw[k] for k in Figures.__dataclass_fields__ if k in raw}
    if not all(v is None or isinstance(v, int | str) for v in fields.values()):
        return result, None
    return replace(result, stdout=text[:at]), Figures(**fields)
