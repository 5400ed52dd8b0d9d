"""The perf grader's modes in an environment (issue 24), end to end on a real Docker
engine: each run is a fresh container whose process 1 is the measurer, the container's
own cgroup counts CPU time and the memory peak, and Callgrind in the image counts
instructions (a container gets no hardware counters). The same benchmark as the host's
tests (tests/support/perfmodes.py), in the tests' Python image (tests/support/envimage.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.docker import base_image
from tests.support.envimage import python_image
from tests.support.perfmodes import perf_component, perf_repo

WORK = 4_000_000
SMALL = 300_000


@pytest.fixture(scope="module")
def image() -> str:
    return python_image()


def graded(
    tmp_path: Path, image: str, baseline: dict[str, Any], candidate: dict[str, Any], **perf: Any
) -> Any:
    settings = {"runs": 2, "warmup": 1, "min_speedup": 2, **perf}
    environment = f"{{image: {image}}}"
    return perf_component(perf_repo(tmp_path / "repo", baseline, candidate, settings, environment))


def test_cpu_in_an_environment_counts_the_tree_and_not_idling(tmp_path: Path, image: str) -> None:
    # The candidate does the same work in two forked workers, hidden from the reaped
    # children's accounting (SIGCHLD ignored), and does not sleep.
    candidate = {"work": WORK, "workers": 2, "hide": True}
    component = graded(
        tmp_path,
        image,
        {"work": WORK, "sleep": 0.5},
        candidate,
        timing="cpu",
        noise_floor=2.5,
        min_speedup=4,
    )
    # The same work: 1.18x has been seen on a busy machine and 1.50x on CI's busiest run;
    # uncounted workers give about 9x (a Python start alone).
    assert 0.6 < component.details["speedup"] < 2.5, component.messages
    assert component.score == 0
    (tmp_path / "less").mkdir()
    component = graded(tmp_path / "less", image, {"work": 3 * WORK}, {"work": WORK}, timing="cpu")
    assert component.details["speedup"] > 2 and component.passed, component.messages


def test_instructions_in_an_environment_by_its_valgrind(tmp_path: Path, image: str) -> None:
    component = graded(
        tmp_path, image, {"work": 4 * SMALL}, {"work": SMALL, "workers": 1}, timing="instructions"
    )
    assert component.details["counter"] == "valgrind", component.messages
    assert component.details["speedup"] > 1.5, component.messages
    figures = component.details["baseline_times"]
    assert max(figures) / min(figures) < 1.01, figures


def test_instructions_in_an_image_without_valgrind_is_one_clear_line(tmp_path: Path) -> None:
    component = graded(tmp_path, base_image(), {}, {}, timing="instructions")
    assert component.score == 0
    assert component.messages[0] == (
        "score 0: `timing: instructions` needs hardware performance counters or Valgrind, "
        "and neither is here: install valgrind (apt-get install valgrind), in the "
        "environment's image when the task names one"
    ), component.messages
    assert component.findings[0].title == "timing"


def test_peak_memory_in_an_environment(tmp_path: Path, image: str) -> None:
    component = graded(
        tmp_path,
        image,
        {"megabytes": 200, "memory_in": "worker"},
        {"megabytes": 40},
        measure="peak_memory",
        min_speedup=3,
    )
    assert component.details["speedup"] > 3 and component.passed, component.messages


def test_the_measurer_is_out_of_the_benchmark_s_reach(tmp_path: Path, image: str) -> None:
    # Process 1 runs as the benchmark's uid: only its running from an execute-only copy
    # of the shell keeps its memory (ptrace, /proc/1/mem) and descriptors from it.
    component = graded(tmp_path, image, {"work": WORK}, {"work": WORK, "peek": True}, timing="cpu")
    assert "speedup" in component.details, component.messages
    assert component.score == 0


def test_no_run_of_the_candidate_remembers_an_earlier_one_in_its_tree(
    tmp_path: Path, image: str
) -> None:
    """Its warm-up leaves a mark in its tree and every timed run skips the work: 5.52x
    before (issue 43). The candidate's tree is read-only to the benchmark, as the
    baseline's is, and each run's container has its own /tmp."""
    candidate = {"work": WORK, "remember": True}
    component = graded(tmp_path, image, {"work": WORK}, candidate, timing="cpu")
    assert component.details["speedup"] < 1.15, component.messages
    assert component.score == 0
