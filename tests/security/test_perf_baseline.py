"""The perf baseline (issue 9): the candidate's benchmark slows the grader's private
checkout of the base down, and gets a speed-up it never made. The baseline copies must be
out of the submission's reach.

A small perf task rather than examples/perf (about 3 s a run): a benchmark of about
0.15 s, one warm-up and three timed runs a side, so that the grade takes a few seconds.
"""

from __future__ import annotations

import textwrap

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
