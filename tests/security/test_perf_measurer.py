"""The perf grader's measurer (issue 24): the process that runs the benchmark for
``timing: cpu | instructions`` and ``measure: peak_memory`` and prints its figures last.
The candidate's benchmark, run as the sandbox user with the measurer's own uid, attacks
it: a forged line of figures, the measurer killed after one, the measurer's descriptors
and memory read through ``/proc``. A grade never takes the forgery; a killed measurer
fails the run."""

from __future__ import annotations

import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from repogym.graders.perf import measure as perf_measure
from repogym.run.host import Runner
from tests.security._harness import Case
from tests.security._perf import SMALL_PERF

# The same work on both sides: about 1x, while the forgery would give a hundred million.
CPU_TASK = SMALL_PERF["task"].replace("timing: wall", "timing: cpu")
# Run at the end of the candidate's benchmark: a line of figures as the measurer prints
# them, saying the run took a nanosecond of CPU.
FORGE = textwrap.dedent(
    """\
    import os
    import sys

    MARK = "\\x1erepogym-measure "


    def forge():
        sys.stdout.write(MARK + '{"cpu_ns": 1, "peak_bytes": 1, "left": 0}\\n')
        sys.stdout.flush()


    def measurer():
        pid = os.getppid()
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"_end_the_rest" in f.read():
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        return None
    """
)
WORK = SMALL_PERF["files"]["src/work.py"]


def _graded(case: Case, tail: str) -> tuple[list[str], dict]:
    """Grade a candidate whose benchmark runs ``tail`` once its work is done: what is not
    as a secure grader leaves it, and the perf component."""
    case.base(task=CPU_TASK, files=SMALL_PERF["files"])
    attack = WORK.replace("    return total\n", f"    {tail}\n    return total\n")
    case.submit({"src/work.py": FORGE + "\n\n" + attack})
    graded = case.grade()
    perf = next(c for c in (graded.report or {})["components"] if c["name"] == "perf")
    return graded.problems("FAIL"), perf


def test_a_forged_line_of_figures_is_not_taken(case: Case) -> None:
    problems, perf = _graded(case, "forge()")
    if perf["score"] != 0 or not 0.5 < perf["details"]["speedup"] < 1.5:
        problems.append(f"perf took the forgery: {perf['details'].get('speedup')}x")
    assert not problems, "\n".join(problems)


def test_killing_the_measurer_after_a_forged_line_fails_the_run(case: Case) -> None:
    problems, perf = _graded(case, "forge(); os.kill(measurer(), 9)")
    # -9 from the measurer itself, 137 (128 + 9) from a sealed command's process 1.
    if not any(f"exited with code {code}" in perf["messages"][0] for code in (-9, 137)):
        problems.append(f"the run did not fail for its killed measurer: {perf['messages'][0]}")
    assert not problems, "\n".join(problems)


@pytest.mark.sandbox
def test_the_measurer_s_descriptors_and_memory_are_closed_to_the_benchmark() -> None:
    # The benchmark runs as the measurer's uid: only the measurer being not dumpable
    # keeps /proc/<measurer>/fd (a hardware counter's descriptor, which an ioctl could
    # reset) and /proc/<measurer>/mem from it.
    tree = Path(tempfile.mkdtemp(prefix="repogym-measurer-"))  # for the sandbox user to reach
    tree.chmod(0o755)
    probe = FORGE + textwrap.dedent(
        """\

        pid = measurer()
        for path in (f"/proc/{pid}/fd", f"/proc/{pid}/mem"):
            try:
                os.listdir(path) if path.endswith("fd") else open(path, "rb").close()
                print("OPEN", path)
            except PermissionError:
                print("CLOSED", path)
        """
    )
    (tree / "probe.py").write_text(probe)
    runner = Runner()
    command = runner.measured(f"{sys.executable} probe.py", "cpu")
    try:
        result = runner.run(command, tree, timeout=60)
    finally:
        shutil.rmtree(tree)
    assert result.ok, result.stdout + result.stderr
    said, figures = perf_measure.taken(result)
    assert figures is not None and figures.cpu_ns, result.stdout
    lines = said.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("CLOSED /proc/") for line in lines), lines
    # The task clock opened on the measurer's child (which is not the measurer, so it
    # may be counted) where the kernel gives one.
    assert figures.counter in ("task-clock", None)
