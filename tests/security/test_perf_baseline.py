"""The perf baseline (issue 9): the candidate's benchmark slows the grader's private
checkout of the base down, and gets a speed-up it never made. The baseline copies must be
out of the submission's reach.

A small perf task rather than examples/perf (about 3 s a run): a benchmark of about
0.15 s, one warm-up and three timed runs a side, so that the grade takes a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import zlib
from pathlib import Path

import pytest

from repogym.sandbox import landlock
from tests.security._harness import Case
from tests.security._perf import SMALL_PERF

# The candidate's own module, run by its benchmark (the warm-up comes before every
# timed baseline run): it finds the grader's baseline checkouts in the temporary
# directories and makes this task's one sleep.
SLOW_DOWN_THE_BASELINE = (
    textwrap.dedent(
        """\
        import glob
        import os
        import tempfile

        _places = {tempfile.gettempdir(), "/tmp", "/var/tmp", os.environ.get("TMPDIR", "/tmp")}
        for place in _places:
            pattern = os.path.join(place, "repogym-*", "**", "bench.py")
            for bench in glob.glob(pattern, recursive=True):
                try:
                    with open(bench) as f:
                        text = f.read()
                    if "{marker}" in text and "time.sleep" not in text:
                        with open(bench, "a") as f:
                            f.write("\\nimport time\\ntime.sleep(1.5)\\n")
                except OSError:
                    pass
        """
    )
    + "\n"
    + SMALL_PERF["files"]["src/work.py"]
)


def test_the_candidate_cannot_slow_the_baseline_down(case: Case) -> None:
    case.base(task=SMALL_PERF["task"], files=SMALL_PERF["files"])
    case.submit({"src/work.py": SLOW_DOWN_THE_BASELINE})
    graded = case.grade()
    problems = graded.problems("perf")
    perf = next(c for c in (graded.report or {}).get("components", []) if c["name"] == "perf")
    # Not even part of the credit: the candidate is the base, so the speed-up is noise.
    if perf["score"] != 0:
        problems.append(f"perf scored {perf['score']}: {perf['details'].get('speedup')}x")
    assert not problems, "\n".join(problems)


# The candidate's work, remembered once done: its warm-up does the work and leaves a mark
# where the next run finds it, and every timed run then skips the work. Before (issue
# 43): 11.35x on the host from its own tree; each place below carried the mark.
_FILE = """\
def _remembered():
    return os.path.exists(MARK)


def _remember():
    try:
        with open(MARK, "w") as f:
            f.write("done")
    except OSError:
        pass
"""
REMEMBER_THE_ANSWER = {
    "its-tree": "MARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), '.a')\n" + _FILE,
    "its-bytecode": "MARK = os.path.join(os.path.dirname(__file__), '__pycache__', 'a')\n" + _FILE,
    "tmp": "MARK = '/tmp/answer-{marker}'\n" + _FILE,
    "dev-shm": "MARK = '/dev/shm/answer-{marker}'\n" + _FILE,
    "sysv-shm": """\
_libc = ctypes.CDLL(None, use_errno=True)


def _remembered():
    return _libc.shmget({key}, 0, 0) != -1


def _remember():
    _libc.shmget({key}, 4096, 0o1666)  # IPC_CREAT | 0666: outlives the process
""",
}
_REMEMBERING = """\
import ctypes
import os

{place}

def work():
    if _remembered():
        return 0
    total = 0
    for i in range(500_000):
        total += i % 7
    _remember()
    return total
"""


@pytest.mark.parametrize("place", sorted(REMEMBER_THE_ANSWER))
@pytest.mark.parametrize(
    "seal",
    [
        "",
        pytest.param(
            "landlock",
            marks=pytest.mark.skipif(
                os.geteuid() != 0 or landlock.unavailable() is not None,
                reason="confined by Landlock: root, and a kernel with Landlock",
            ),
        ),
    ],
    ids=["default", "landlock"],
)
def test_no_run_of_the_candidate_remembers_an_earlier_one(
    case: Case, place: str, seal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if seal:
        monkeypatch.setenv("REPOGYM_SEAL", seal)  # as in the Action's container
    # CPU time: a machine busy with other work does not pass for a speed-up.
    task = SMALL_PERF["task"].replace("timing: wall", "timing: cpu")
    case.base(task=task, files=SMALL_PERF["files"])
    key = zlib.crc32(case.marker.encode()) & 0x7FFFFFFF
    module = _REMEMBERING.replace("{place}", REMEMBER_THE_ANSWER[place])
    case.submit({"src/work.py": module.replace("{key}", str(key))})
    try:
        graded = case.grade()
    finally:
        subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)
        for left in (f"/tmp/answer-{case.marker}", f"/dev/shm/answer-{case.marker}"):
            Path(left).unlink(missing_ok=True)
    problems = graded.problems("perf")
    perf = next(c for c in (graded.report or {}).get("components", []) if c["name"] == "perf")
    if perf["score"] != 0:
        problems.append(f"perf scored {perf['score']}: {perf['details'].get('speedup')}x")
    assert not problems, "\n".join(problems)
