"""PerfGrader on real repositories running real benchmark scripts.

Every benchmark is the same small ``bench.py``, driven by the ``bench.json`` of the tree
it runs in: the submission edits ``bench.json`` to change what its side does. Each run
and each setup appends a line to a log outside the tree (its path comes from the task's
``env:``), so the tests see the order in which the sides really ran.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repogym import grade
from repogym.graders import CompositeGrader, PerfGrader
from repogym.graders.builtin import builtin_grader
from repogym.graders.perf.grader import perf_score
from repogym.models import Finding, GradeComponent, Role
from repogym.task import BUILTIN_GRADERS, parse_task
from repogym.workspace import Workspace
from tests.support.repo import Repo

BENCH = """\
import json, os, sys, time
from pathlib import Path

config = json.loads(Path("bench.json").read_text())
here = os.getcwd()
log = Path(os.environ["PERF_LOG"])
with log.open("a") as f:
    f.write(f"run {here} {os.environ.get('PYTHONPYCACHEPREFIX', '-')}\\n")
index = sum(line.split()[:2] == ["run", here] for line in log.read_text().splitlines()) - 1
time.sleep(config.get("sleep", 0))
report = config.get("report")
if isinstance(report, list):
    value = report[min(index, len(report) - 1)]
    print(json.dumps({"seconds": float(value) if isinstance(value, str) else value}))
elif report is not None:
    print(report)
if config.get("exit"):
    print("boom", file=sys.stderr)
sys.exit(config.get("exit", 0))
"""
SETUP = 'echo "setup $(pwd -P)" >> "$PERF_LOG"'


def task_text(
    log: Path,
    *,
    timing: str = "wall",
    runs: int = 2,
    warmup: int = 0,
    min_speedup: float = 4,
    setup: str | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> str:
    lines = ["version: 1", "type: perf"]
    if setup:
        lines.append(f"setup: {json.dumps(setup)}")
    variables = {"PERF_LOG": str(log), **(env or {})}
    lines.append("env: " + json.dumps(variables))
    lines += [
        "perf:",
        "  command: python bench.py",
        f"  timing: {timing}",
        f"  runs: {runs}",
        f"  warmup: {warmup}",
        f"  min_speedup: {min_speedup}",
    ]
    if timeout is not None:
        lines.append(f"  timeout: {timeout}")
    return "\n".join(lines) + "\n"


class Project:
    """A base commit with the benchmark, and a submission branch that edits bench.json."""

    def __init__(self, repo: Repo, log: Path, baseline: dict[str, Any], **task: Any) -> None:
        self.repo = repo
        self.log = log
        repo.commit(
            "base",
            {
                ".repogym.yml": task_text(log, **task),
                "bench.py": BENCH,
                "bench.json": json.dumps(baseline),
            },
        )
        repo.branch("pr")

    def submit(self, candidate: dict[str, Any] | None = None) -> Workspace:
        if candidate is not None:
            self.repo.write({"bench.json": json.dumps(candidate)})
        return Workspace.open(self.repo.root, base="main")

    def grade(self, candidate: dict[str, Any] | None = None) -> GradeComponent:
        return PerfGrader().grade(self.submit(candidate))

    def events(self) -> list[tuple[str, str]]:
        """(``run`` or ``setup``, ``baseline`` or ``candidate``) in the order they happened."""
        if not self.log.exists():
            return []
        found = []
        for line in self.log.read_text().splitlines():
            kind, where = line.split()[:2]
            # The candidate runs in a fresh copy of the submission, never in its tree.
            assert Path(where) != self.repo.root.resolve()
            found.append((kind, "candidate" if Path(where).name == "candidate" else "baseline"))
        return found

    def column(self, index: int, kind: str = "run") -> list[str]:
        """Field ``index`` of each ``kind`` line of the log (1: the tree, 2: the bytecode
        cache of a run)."""
        lines = [line.split() for line in self.log.read_text().splitlines()]
        return [fields[index] for fields in lines if fields[0] == kind]


Make = Callable[..., Project]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "perf.log"


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bytecode")


@pytest.fixture
def project(repo: Repo, log: Path, bytecode: Path) -> Make:
    """Makes the project. Unless a test says otherwise, its task shares one bytecode cache
    with every other test's: compiling the standard library afresh on each grade (what
    the grader's own per-grade caches do) would double the time of this file."""

    def make(baseline: dict[str, Any] | None = None, **task: Any) -> Project:
        task.setdefault("env", {"PYTHONPYCACHEPREFIX": str(bytecode)})
        return Project(repo, log, baseline or {}, **task)

    return make


def reported(project: Make, times: list[Any], **task: Any) -> Project:
    """A project whose baseline reports ``times``, one per run (the last one repeats)."""
    return project({"report": times}, timing="reported", **task)


# -- the score ---------------------------------------------------------------------------


def test_two_fold_with_min_speedup_four_scores_about_0_45() -> None:
    expected = math.log(2 / 1.15) / math.log(4 / 1.15)
    assert perf_score(2, 1.15, 4) == expected
    assert expected == pytest.approx(0.444, abs=0.001)


@pytest.mark.parametrize(
    ("speedup", "expected"),
    [
        (0.5, 0.0),
        (1.1499, 0.0),
        (1.15, 0.0),  # log(1) = 0 at the floor itself
        (3, math.log(3 / 1.15) / math.log(4 / 1.15)),
        (4, 1.0),
        (40, 1.0),
    ],
)
def test_score_formula(speedup: float, expected: float) -> None:
    assert perf_score(speedup, 1.15, 4) == expected


def test_a_two_fold_speedup_end_to_end(project: Make) -> None:
    component = reported(project, [0.8]).grade({"report": [0.4]})
    assert component.details["speedup"] == 2.0
    assert component.score == math.log(2 / 1.15) / math.log(4 / 1.15)
    assert (component.passed, component.role, component.name) == (False, Role.OBJECTIVE, "perf")
    assert component.messages[0].startswith("speed-up 2.00× (fastest of 2, reported time")
    assert "4× needed to pass" in component.messages


def test_beyond_min_speedup_scores_one_and_passes(project: Make) -> None:
    component = reported(project, [0.9], min_speedup=3).grade({"report": [0.1]})
    assert component.details["speedup"] == pytest.approx(9)
    assert (component.score, component.passed) == (1.0, True)


def test_exactly_min_speedup_passes(project: Make) -> None:
    component = reported(project, [0.8], min_speedup=2).grade({"report": [0.4]})
    assert (component.score, component.passed) == (1.0, True)


def test_below_the_noise_floor_scores_zero(project: Make) -> None:
    component = reported(project, [0.6]).grade({"report": [0.55]})
    assert component.details["speedup"] == 0.6 / 0.55
    assert (component.score, component.passed) == (0.0, False)
    assert "below the noise floor of 1.15×: score 0" in component.messages


def test_a_slower_submission_scores_zero(project: Make) -> None:
    component = reported(project, [0.5]).grade({"report": [1.0]})
    assert (component.details["speedup"], component.score, component.passed) == (0.5, 0.0, False)


# -- how the runs are scheduled ----------------------------------------------------------


def test_pairs_interleave_and_the_first_side_flips(project: Make) -> None:
    perf = project(runs=4, warmup=1)
    component = perf.grade({"changed": True})
    b, c = "baseline", "candidate"
    order = [[b, c], [c, b], [b, c], [c, b]]
    assert component.details["order"] == order
    ran = [side for _, side in perf.events()]
    assert ran == [b, c] + [side for pair in order for side in pair]
    assert (
        len(component.details["baseline_times"]) == len(component.details["candidate_times"]) == 4
    )


def test_the_baseline_is_a_private_checkout_of_the_base(project: Make, repo: Repo) -> None:
    perf = project({"side": "base"})
    workspace = perf.submit({"side": "submission"})
    PerfGrader().grade(workspace)
    trees = {Path(where) for where in perf.column(1)}
    assert len(trees) == 2
    (baseline,) = {tree for tree in trees if tree.name != "candidate"}
    assert repo.root.resolve() not in trees
    assert baseline != workspace.baseline.resolve()
    assert json.loads((baseline / "bench.json").read_text()) == {"side": "base"}
    assert not (workspace.baseline / "__pycache__").exists()


def test_warmup_runs_are_not_counted_and_the_minimum_is_used(project: Make) -> None:
    # The first run of each side (the warm-up) reports 50 s: it must not count.
    perf = reported(project, [50, 0.9, 0.6, 0.7], runs=3, warmup=1)
    component = perf.grade({"report": [50, 0.35, 0.3, 0.2]})
    details = component.details
    assert details["baseline_times"] == [0.9, 0.6, 0.7]
    assert details["candidate_times"] == [0.35, 0.3, 0.2]
    assert (details["baseline_min"], details["candidate_min"]) == (0.6, 0.2)
    assert details["speedup"] == 0.6 / 0.2
    assert component.score == perf_score(0.6 / 0.2, 1.15, 4)
    assert len(perf.events()) == 2 * (3 + 1)


def test_several_warmup_rounds(project: Make) -> None:
    perf = reported(project, [50, 50, 0.8], runs=2, warmup=2)
    component = perf.grade({"report": [50, 50, 0.4]})
    assert [side for _, side in perf.events()][:4] == ["baseline", "candidate"] * 2
    assert component.details["baseline_times"] == [0.8, 0.8]
    assert component.details["candidate_times"] == [0.4, 0.4]
    assert component.details["warmup"] == 2


def test_no_run_writes_bytecode_another_run_reads(project: Make) -> None:
    """Both trees are read-only to the benchmark, and no cache is given it: nothing one
    run compiles reaches the next (issue 43)."""
    perf = project(runs=2, warmup=1, env={})
    perf.grade()
    assert set(perf.column(2)) == {"-"}  # no PYTHONPYCACHEPREFIX
    assert not list(perf.repo.root.rglob("__pycache__"))


def test_a_task_that_sets_its_own_bytecode_cache_keeps_it(project: Make, tmp_path: Path) -> None:
    perf = project(env={"PYTHONPYCACHEPREFIX": str(tmp_path / "mine")})
    perf.grade()
    assert set(perf.column(2)) == {str(tmp_path / "mine")}


# -- setup -------------------------------------------------------------------------------


def test_setup_runs_once_per_side_and_the_baseline_once_per_process(project: Make) -> None:
    perf = project(setup=SETUP)
    perf.grade({"attempt": 1})
    first = perf.events()
    assert first[:2] == [("setup", "baseline"), ("setup", "candidate")]
    assert [kind for kind, _ in first[2:]] == ["run"] * 4
    perf.grade({"attempt": 2})
    second = perf.events()[len(first) :]
    assert second[0] == ("setup", "candidate")
    assert ("setup", "baseline") not in second
    baselines = {tree for tree in perf.column(1, "run") if Path(tree).name != "candidate"}
    assert len(baselines) == 1, "the second grade used another baseline"
    candidates = {tree for tree in perf.column(1, "run") if Path(tree).name == "candidate"}
    assert len(candidates) == 2, "each grade has a fresh copy of the submission"


def test_another_task_gets_another_baseline(project: Make, repo: Repo, log: Path) -> None:
    perf = project(setup=SETUP)
    perf.grade()
    other = parse_task(task_text(log, setup=SETUP) + "# another task\n")
    PerfGrader().grade(Workspace.open(repo.root, base="main", task=other))
    setups = [side for kind, side in perf.events() if kind == "setup"]
    assert setups == ["baseline", "candidate"] * 2
    baselines = {tree for tree in perf.column(1, "run") if Path(tree).name != "candidate"}
    assert len(baselines) == 2


def test_a_failed_baseline_setup_scores_zero_and_is_retried(project: Make) -> None:
    perf = project(setup=SETUP + " && echo no toolchain && exit 4")
    component = perf.grade()
    assert (component.score, component.passed) == (0.0, False)
    assert component.messages[0].startswith(
        "score 0: setup failed in the baseline (exit code 4 after "
    )
    assert "no toolchain" in component.messages[1]
    assert perf.events() == [("setup", "baseline")]
    perf.grade()
    assert perf.events() == [("setup", "baseline")] * 2


def test_a_failed_candidate_setup_scores_zero(project: Make, repo: Repo) -> None:
    perf = project(setup=SETUP + " && test ! -e broken")
    repo.write({"broken": ""})
    component = perf.grade()
    assert component.score == 0.0
    assert component.messages[0].startswith("score 0: setup failed in the candidate (exit code 1")
    assert [kind for kind, _ in perf.events()] == ["setup", "setup"]


# -- wall and reported time ---------------------------------------------------------------


def test_wall_time_ignores_what_the_benchmark_reports(project: Make) -> None:
    liar = {"sleep": 0.3, "report": [0.01]}
    component = project(liar, runs=1).grade(liar)
    assert component.details["timing"] == "wall"
    assert component.details["baseline_min"] >= 0.3
    assert component.details["candidate_min"] >= 0.3
    assert component.score == perf_score(component.details["speedup"], 1.15, 4)


def test_reported_time_is_what_the_benchmark_reports(project: Make) -> None:
    liar = {"sleep": 0.3, "report": [0.01]}
    perf = project(liar, timing="reported", runs=1)
    component = perf.grade(liar)
    assert component.details["baseline_times"] == component.details["candidate_times"] == [0.01]


def test_the_last_seconds_line_counts(project: Make) -> None:
    lines = '{"seconds": 0.9}\n{"seconds": 0.4}\n{"other": 1}\n{"seconds": 0.4\nbye'
    component = reported(project, [0.8]).grade({"report": lines})
    assert component.details["candidate_times"] == [0.4, 0.4]


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ("done in 0.4 s", 'reported no time: no line of its stdout is a {"seconds": x} JSON'),
        ('{"elapsed": 0.4}', 'reported no time: no line of its stdout is a {"seconds": x} JSON'),
        ('{"seconds": "fast"}', 'reported malformed output: "seconds" is "fast", not a number'),
        ('{"seconds": true}', 'reported malformed output: "seconds" is true, not a number'),
        ('{"seconds": 0.4', "reported malformed output: '{\"seconds\": 0.4' is not JSON"),
    ],
)
def test_missing_or_malformed_reported_output_scores_zero(
    project: Make, output: str, problem: str
) -> None:
    component = reported(project, [0.8]).grade({"report": output})
    assert (component.score, component.passed) == (0.0, False)
    assert component.messages[0].startswith(
        f"score 0: the candidate benchmark (pair 1 of 2) {problem}"
    )
    assert component.messages[1] == f"output tail:\n{output}"
    assert "speedup" not in component.details


def test_a_baseline_without_a_report_is_named(project: Make) -> None:
    component = project({"report": "hello"}, timing="reported").grade({"report": [0.4]})
    assert component.messages[0].startswith(
        "score 0: the baseline benchmark (pair 1 of 2) reported"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("nan", "took a non-finite time (nan)"),
        ("inf", "took a non-finite time (inf)"),
        ("-inf", "took a non-finite time (-inf)"),
        (10**400, "took a non-finite time (inf)"),
        (0, "took a non-positive time (0.0 s)"),
        (-0.5, "took a non-positive time (-0.5 s)"),
    ],
)
def test_non_finite_or_non_positive_times_score_zero(
    project: Make, value: object, problem: str
) -> None:
    component = reported(project, [0.8]).grade({"report": [value]})
    assert (component.score, component.passed) == (0.0, False)
    assert component.messages[0] == f"score 0: the candidate benchmark (pair 1 of 2) {problem}"


# -- failures ----------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_a_benchmark_that_exits_non_zero_scores_zero(project: Make, side: str) -> None:
    broken, fine = {"exit": 3}, {"changed": True}
    perf = project(broken if side == "baseline" else fine)
    component = perf.grade(fine if side == "baseline" else broken)
    assert (component.score, component.passed) == (0.0, False)
    assert (
        component.messages[0] == f"score 0: the {side} benchmark (pair 1 of 2) exited with code 3"
    )
    assert component.messages[1] == "output tail:\nboom"
    assert perf.events()[-1] == ("run", side), "the grade went on after a failed run"


def test_a_failed_warmup_run_scores_zero(project: Make) -> None:
    component = project(warmup=1).grade({"exit": 1})
    assert component.messages[0] == (
        "score 0: the candidate benchmark (warm-up run 1 of 1) exited with code 1"
    )
    assert component.details["candidate_times"] == []


def test_a_benchmark_that_times_out_scores_zero(project: Make) -> None:
    perf = project(timeout=0.5)
    start = time.monotonic()
    component = perf.grade({"sleep": 30})
    assert time.monotonic() - start < 25  # not the 30 s sleep, however busy the machine
    assert (component.score, component.passed) == (0.0, False)
    assert (
        component.messages[0]
        == "score 0: the candidate benchmark (pair 1 of 2) timed out after 0.5 s"
    )
    assert len(component.details["baseline_times"]) == 1


def test_a_task_without_perf_is_refused(project: Make, repo: Repo) -> None:
    perf = project()
    text = "version: 1\ntype: bugfix\ntests:\n  command: x {junit}\n  fail_to_pass: [t.py::a]\n"
    with pytest.raises(ValueError, match="no `perf` section"):
        PerfGrader().grade(Workspace.open(repo.root, base="main", task=parse_task(text)))
    assert not perf.events()


# -- messages and details ----------------------------------------------------------------


def test_a_short_benchmark_is_warned_about(project: Make) -> None:
    component = project().grade({"changed": True})
    warnings = [m for m in component.messages if m.startswith("warning:")]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: the baseline benchmark's fastest run took 0.")
    assert "under half a second" in warnings[0]
    assert warnings[1].startswith("warning: the candidate benchmark's fastest run took 0.")


def test_a_long_enough_benchmark_is_not_warned_about(project: Make) -> None:
    perf = reported(project, [0.8])
    component = perf.grade({"report": [0.5]})
    assert not [m for m in component.messages if m.startswith("warning:")]
    component = perf.grade({"report": [0.49]})
    assert [m for m in component.messages if "warning" in m] == [
        "warning: the candidate benchmark's fastest run took 0.490 s, under half a second, "
        "so start-up dominates the figure: make the benchmark run longer"
    ]


COMMON = {
    "command",
    "timing",
    "runs",
    "warmup",
    "noise_floor",
    "min_speedup",
    "baseline_times",
    "candidate_times",
    "order",
    "measure",
    "counter",
}


def test_details(project: Make) -> None:
    component = reported(project, [0.8], runs=3).grade({"report": [0.4]})
    assert component.details == {
        "command": "python bench.py",
        "timing": "reported",
        "measure": "time",
        "runs": 3,
        "warmup": 0,
        "noise_floor": 1.15,
        "min_speedup": 4.0,
        "baseline_times": [0.8, 0.8, 0.8],
        "candidate_times": [0.4, 0.4, 0.4],
        "order": [["baseline", "candidate"], ["candidate", "baseline"], ["baseline", "candidate"]],
        "counter": None,
        "baseline_min": 0.8,
        "candidate_min": 0.4,
        "speedup": 2.0,
        # Every pair's ratio is 2: an interval of one point, at the level 3 pairs give.
        "interval": {"estimate": 2.0, "low": 2.0, "high": 2.0, "level": 0.75, "pairs": 3},
        "far": {"baseline": [], "candidate": []},
        "cap": None,
        "undecided": [],
    }
    assert (
        component.messages[1]
        == "pairs: 2.00× [2.00, 2.00] over 3 pairs (75.0% interval of the pairs' ratio)"
    )
    json.dumps(component.to_dict())


def test_details_of_a_failed_grade(project: Make) -> None:
    component = reported(project, [0.8]).grade({"report": "nothing"})
    assert set(component.details) == COMMON
    assert component.details["order"] == [["baseline", "candidate"]]
    assert component.details["baseline_times"] == [0.8]


# -- registration -------------------------------------------------------------------------


def test_perf_is_the_last_builtin_grader() -> None:
    assert list(BUILTIN_GRADERS) == ["constraints", "tests", "quality", "perf"]
    assert builtin_grader("perf") is PerfGrader


def test_a_perf_task_grades_through_the_composite(project: Make) -> None:
    workspace = reported(project, [0.9], min_speedup=3).submit({"report": [0.1]})
    result = CompositeGrader.for_workspace(workspace).grade_result(workspace)
    assert [c.name for c in result.components] == ["constraints", "perf"]
    assert result.summary() == "PASS 1.000 (constraints=1.00✓(gate), perf=1.00✓)"


# -- findings -----------------------------------------------------------------------------


def test_below_the_noise_floor_is_one_finding(project: Make) -> None:
    component = reported(project, [0.6]).grade({"report": [0.55]})
    assert component.findings == (
        Finding(
            title="noise_floor", message="speed-up 1.09× is below the noise floor of 1.15×: score 0"
        ),
    )


def test_short_of_min_speedup_is_one_finding(project: Make) -> None:
    component = reported(project, [1.6]).grade({"report": [0.8]})
    assert component.findings == (
        Finding(title="min_speedup", message="speed-up 2.00×; 4× needed to pass"),
    )


def test_a_passing_speedup_has_no_finding(project: Make) -> None:
    component = reported(project, [3.0]).grade({"report": [0.6]})
    assert component.passed and component.findings == ()


def test_a_failed_benchmark_is_one_finding_without_a_place(project: Make) -> None:
    component = project({"changed": True}).grade({"exit": 3})
    assert component.findings == (
        Finding(
            title="command",
            message="score 0: the candidate benchmark (pair 1 of 2) exited with code 3",
        ),
    )


def test_a_failed_setup_is_a_finding_titled_setup(project: Make, repo: Repo) -> None:
    perf = project(setup=SETUP + " && test ! -e broken")
    repo.write({"broken": ""})
    (finding,) = perf.grade().findings
    assert finding.title == "setup" and finding.path is None
    assert finding.message.startswith("score 0: setup failed in the candidate (exit code 1")


def test_a_short_benchmark_is_a_warning_finding(project: Make) -> None:
    component = reported(project, [1.2]).grade({"report": [0.4]})
    assert [(f.title, f.level) for f in component.findings] == [
        ("min_speedup", "failure"),
        ("command", "warning"),
    ]
    assert component.findings[1].message == (
        "the candidate benchmark's fastest run took 0.400 s, under half a second, "
        "so start-up dominates the figure: make the benchmark run longer"
    )


def test_the_baseline_is_the_merge_bases_when_the_base_moved_on(project: Make) -> None:
    # Issue 19: the rubric is the base tip's, the perf baseline stays the merge base's.
    # The base made its own code four times faster after the pull request branched; the
    # pull request is twice as fast as where it branched from, not slower than the tip.
    perf = reported(project, [0.8], min_speedup=1.5)
    perf.repo.write({"bench.json": json.dumps({"report": [0.4]})})
    perf.repo.commit("the pull request")
    perf.repo.git("checkout", "--quiet", "main")
    perf.repo.commit("the base moves on", {"bench.json": json.dumps({"report": [0.2]})})
    perf.repo.git("checkout", "--quiet", "pr")
    graded = grade(perf.repo.root, base="main")
    assert graded.merge_base != graded.base
    [component] = [c for c in graded.result.components if c.name == "perf"]
    assert component.details["speedup"] == pytest.approx(2.0)
    assert component.passed
