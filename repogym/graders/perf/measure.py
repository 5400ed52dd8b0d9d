"""What one run of the benchmark measured, beyond the wall clock (issue 24).

``timing: cpu`` and ``instructions`` and ``measure: peak_memory`` have the runner wrap
the benchmark's command in a measurer (``runner.measured``) that accounts for its whole
process tree and prints its figures as the last line of stdout, once nothing else of the
tree is left to write: on the host :mod:`repogym.sandbox.measure_tree` (a Python script
run by this interpreter: the kernel's accounting of the reaped children, instructions
from a hardware counter or Callgrind), in a container :mod:`repogym.run.container.measure`
(a shell that is the container's process 1, reading its cgroup). Neither can be stopped
or read by the benchmark (docs/task.md); killing the host's fails the run. This module
reads what they printed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from repogym.models import CommandResult
from repogym.sandbox import measure_tree as _measure_tree

MARK = _measure_tree.MARK


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
