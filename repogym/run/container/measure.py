"""The measurer of a benchmark's run in a container of the task's environment (issue 24):
a shell that is the container's process 1. The container's own cgroup counts every
process in it (CPU time, memory peak), and process 1 kills the rest (``kill -9 -1``)
before it reads them; instructions come from Callgrind in the image (a container gets no
hardware counters), so the image must have ``valgrind``. It prints its figures as the
last line of stdout, as the host's (:mod:`repogym.sandbox.measure_tree`) does, for
:func:`repogym.graders.perf.measure.taken` to read.

Process 1 of a container ignores every signal it has no handler for, and the shell runs
from an execute-only copy, which the kernel does not let the same user trace or read, so
a benchmark can neither stop it nor reach its memory or descriptors.
"""

from __future__ import annotations

import shlex

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
# Where the measurer copies the shell to, execute-only.
_SHELL_COPY = "/tmp/.repogym-measurer"


def measured(command: str, what: str) -> str:
    """``command`` run by the measurer of ``what`` (``cpu``, ``instructions`` or
    ``peak_memory``), as the container's first process."""
    copy = _SHELL_COPY
    return (
        f"cp /bin/sh {copy} && chmod 111 {copy} && exec {copy} -c "
        f"{shlex.quote(_CONTAINER)} measure {what} {shlex.quote(command)}"
    )
