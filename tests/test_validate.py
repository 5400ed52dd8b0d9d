"""``repogym validate`` on the bundled examples and on broken tasks, through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from repogym._demo import EXAMPLES, build_example_repo, example_names
from tests.support.perfmodes import perf_repo
from tests.support.repo import Repo

PYTEST = "python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}"


def _in_environment(name: str) -> bool:
    """Whether the example's commands run in containers (``environment:``, issue 20)."""
    task = yaml.safe_load((EXAMPLES / name / "repo/.repogym.yml").read_text())
    return "environment" in task


def validate(repo: Path | Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "repogym",
            "validate",
            "-C",
            str(repo.root if isinstance(repo, Repo) else repo),
            "--base",
            "main",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("name", example_names())
def test_every_example_is_valid_with_its_solution(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if _in_environment(name):
        request.getfixturevalue("env_images")  # the images their Dockerfiles start from
    repo = build_example_repo(name, tmp_path / name)
    done = validate(repo, "--solution", "submission")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "VALID"
    assert any(line.startswith("ok       the empty submission scores 0") for line in lines)
    assert any(line.startswith("ok       the reference solution passes: PASS") for line in lines)


def test_the_examples_cover_every_task_type() -> None:
    types = {
        yaml.safe_load((EXAMPLES / n / "repo/.repogym.yml").read_text())["type"]
        for n in example_names()
    }
    assert types == {"bugfix", "feature", "perf", "refactor"}


def bugfix(
    repo: Repo,
    *,
    test_body: str = "assert add(2, 3) == 5",
    extra: str = "",
    lists: str = "  fail_to_pass: [tests/test_add.py::test_add]\n",
) -> None:
    task = f"version: 1\ntype: bugfix\ntests:\n  command: {PYTEST}\n{lists}{extra}"
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": "def add(a, b):\n    return a - b\n",
            "tests/test_add.py": f"from calc import add\n\n\ndef test_add():\n    {test_body}\n",
        },
    )


def test_credit_for_the_empty_submission_is_invalid(repo: Repo) -> None:
    bugfix(repo, test_body="assert add(2, 2) == 0")
    done = validate(repo)
    assert done.returncode == 1
    assert (
        "PROBLEM  the empty submission scores 1.000, not 0: tests gave 1.00; a target test "
        "must fail (or the limits be violated) at the base"
    ) in done.stdout
    # And which target it is (issue 22).
    assert (
        "PROBLEM  tests.fail_to_pass: tests/test_add.py::test_add passes at the base, so it "
        "cannot show what the change does; list a test that fails without it"
    ) in done.stdout
    assert done.stdout.splitlines()[-1] == "INVALID: 2 problems"


# A function of complexity 6 at the base.
BRANCHY = (
    "def sign(x):\n"
    + "".join(f"    if x == {n}:\n        return {n}\n" for n in range(5))
    + "    return 0\n"
)


def test_the_quality_line_measures_the_functions(repo: Repo) -> None:
    # issue 45: "ok quality: 2 Python files at the base within the limits" was said of a
    # base whose function broke the limit: the line counted the files.
    limits = "constraints:\n  max_cyclomatic_complexity: 3\n"
    bugfix(repo, extra=limits)
    repo.commit("branchy", {"src/sign.py": BRANCHY})
    done = validate(repo)
    assert done.returncode == 1, done.stdout
    assert (
        "PROBLEM  quality: the base already breaks the limits: src/sign.py:1: sign has "
        "complexity 6 (limit 3); every submission fails the quality gate until that is "
        "mended: mend it at the base, raise the limit or narrow constraints.paths"
    ) in done.stdout
    repo.commit(
        "within",
        {".repogym.yml": (Path(repo.root) / ".repogym.yml").read_text().replace(": 3", ": 6")},
    )
    done = validate(repo)
    assert "ok       quality: 3 Python files at the base, every function within the limits" in (
        done.stdout
    )


def test_a_task_without_lists_is_not_said_to_name_zero_files(repo: Repo) -> None:
    # issue 45: `ok tests: 0 test files named by ids, all present`, of a task with no ids.
    bugfix(repo, lists="  fail_to_pass: added\n  pass_to_pass: baseline\n")
    done = validate(repo)
    assert done.stdout.startswith("ok       "), done.stdout  # the checks did run
    assert "named by ids" not in done.stdout, done.stdout


def test_a_missing_test_file_is_reported(repo: Repo) -> None:
    bugfix(repo)
    repo.commit(
        "task",
        {
            ".repogym.yml": (repo.root / ".repogym.yml")
            .read_text()
            .replace("tests/test_add.py::test_add", "tests/test_sum.py::test_add")
        },
    )
    done = validate(repo)
    assert done.returncode == 1
    assert "PROBLEM  tests: tests/test_sum.py is named by a test id but exists neither" in (
        done.stdout
    )


def calc_patch(tmp_path: Path, body: str) -> Path:
    """A patch file that makes the bugfix example's ``add`` return ``body``."""
    patch = tmp_path / "solution.patch"
    patch.write_text(
        "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        f"-    return a - b\n+    return {body}\n"
    )
    return patch


def test_a_failing_solution_is_invalid(repo: Repo, tmp_path: Path) -> None:
    bugfix(repo)
    done = validate(repo, "--solution", str(calc_patch(tmp_path, "a * b")))
    assert done.returncode == 1
    assert "PROBLEM  the reference solution does not pass: FAIL 0.000" in done.stdout
    assert "failing: tests" in done.stdout


def test_a_failing_solution_shows_every_missing_id_and_its_hint(repo: Repo, tmp_path: Path) -> None:
    names = {"alpa": "alpha", "bta": "beta", "gama": "gamma", "delt": "delta"}
    ids = ", ".join(f"tests/test_more.py::test_{typo}" for typo in names)
    bugfix(repo, extra=f"  pass_to_pass: [{ids}]\n")
    more = "".join(f"def test_{name}():\n    pass\n\n\n" for name in names.values())
    repo.commit("more tests", {"tests/test_more.py": more})
    done = validate(repo, "--solution", str(calc_patch(tmp_path, "a + b")))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert "PROBLEM  the reference solution does not pass: FAIL 0.000" in done.stdout
    for typo, name in names.items():
        assert f"  tests: pass_to_pass missing: tests/test_more.py::test_{typo}" in lines
        assert (
            f"  tests: tests/test_more.py::test_{typo} is not in the report; the closest id "
            f"there is tests/test_more.py::test_{name}"
        ) in lines
        # validate runs the base itself too (issue 22): the ids are not there either.
        assert (
            f"PROBLEM  tests.pass_to_pass: tests/test_more.py::test_{typo} does not exist at "
            "the base (not in its report), where it must pass; fix the id, or the test at the "
            "base"
        ) in lines
    assert lines[-1] == "INVALID: 5 problems"


def test_a_test_command_that_cannot_start_is_invalid(repo: Repo) -> None:
    bugfix(repo)
    task = (repo.root / ".repogym.yml").read_text().replace("python -m", "no-such-runner -m")
    repo.commit("task", {".repogym.yml": task})
    done = validate(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-2].startswith("PROBLEM  tests.command: `no-such-runner` was not found on the")
    assert lines[-1] == "INVALID: 1 problem"


def test_a_test_command_that_writes_no_report_is_invalid(repo: Repo) -> None:
    bugfix(repo)
    task = (repo.root / ".repogym.yml").read_text().replace(PYTEST, "true {junit}")
    repo.commit("task", {".repogym.yml": task})
    done = validate(repo)
    assert done.returncode == 1
    assert any(
        line.startswith("PROBLEM  tests: at the base, JUnit report ")
        and line.endswith("does not exist: did the test command write its report there?")
        for line in done.stdout.splitlines()
    ), done.stdout


def test_ids_are_proven_at_the_base(repo: Repo) -> None:
    bugfix(
        repo, extra="  pass_to_pass: [tests/test_add.py::test_neg, tests/test_add.py::test_gone]\n"
    )
    task = (
        (repo.root / ".repogym.yml")
        .read_text()
        .replace(
            "[tests/test_add.py::test_add]",
            "[tests/test_add.py::test_add, tests/test_add.py::test_zero, "
            "tests/test_add.py::test_nope]",
        )
    )
    more = (
        "\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
        "\n\ndef test_neg():\n    assert add(1, 1) == 2\n"
    )
    test_file = (repo.root / "tests/test_add.py").read_text() + more
    repo.commit("ids", {".repogym.yml": task, "tests/test_add.py": test_file})
    done = validate(repo)
    assert done.returncode == 1
    problems = [line for line in done.stdout.splitlines() if line.startswith("PROBLEM")]
    assert problems == [
        "PROBLEM  tests.pass_to_pass: tests/test_add.py::test_neg fails at the base, where it "
        "must pass; fix the id, or the test at the base",
        "PROBLEM  tests.pass_to_pass: tests/test_add.py::test_gone does not exist at the base "
        "(not in its report), where it must pass; fix the id, or the test at the base",
        "PROBLEM  tests.fail_to_pass: tests/test_add.py::test_zero passes at the base, so it "
        "cannot show what the change does; list a test that fails without it",
        "PROBLEM  tests.fail_to_pass: tests/test_add.py::test_nope does not exist at the base "
        "(not in its report, nor is its file one that failed to load); fix the id",
    ]


def test_a_target_whose_file_cannot_load_at_the_base_is_sound(repo: Repo) -> None:
    # A feature's test imports what the change adds: at the base its file fails to load.
    bugfix(repo, test_body="assert add(2, 3) == 5")
    test_file = "from calc import add, mul\n\n\ndef test_add():\n    assert mul(2, 3) == 6\n"
    repo.commit("feature", {"tests/test_add.py": test_file})
    done = validate(repo)
    assert done.returncode == 0, done.stdout
    assert "ok       tests: at the base the report has 1 test, no fail_to_pass id passes (1)" in (
        done.stdout.splitlines()
    )


def test_baseline_must_find_a_passing_test(repo: Repo) -> None:
    task = (
        f"version: 1\ntype: bugfix\ntests:\n  command: {PYTEST}\n"
        "  fail_to_pass: added\n  pass_to_pass: baseline\n"
    )
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": "def add(a, b):\n    return a - b\n",
            "tests/test_add.py": (
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
            ),
        },
    )
    done = validate(repo)
    assert done.returncode == 1
    assert (
        "PROBLEM  tests.pass_to_pass: baseline, but no test passes at the base (1 test in its "
        "report): there is nothing to keep passing"
    ) in done.stdout.splitlines()
    repo.commit("a passing test", {"tests/test_sub.py": "def test_sub():\n    assert 1 - 1 == 0\n"})
    done = validate(repo)
    assert done.returncode == 0, done.stdout
    assert (
        "ok       tests: at the base the report has 2 tests, 1 test to keep passing (baseline)"
    ) in done.stdout.splitlines()


def test_a_control_character_in_an_id_says_how_to_write_it(repo: Repo) -> None:
    bugfix(repo, extra='  pass_to_pass: ["tests/test_add.py::test_add[it\'s\\t]"]\n')
    done = validate(repo)
    assert done.returncode == 1
    assert (
        "PROBLEM  tests.pass_to_pass.0: the id tests/test_add.py::test_add[it's\\t] holds a "
        "control character, which YAML makes of an escape such as `\\t` inside double "
        "quotes; if the test's name has a backslash there, write the id in single quotes: "
        "'tests/test_add.py::test_add[it''s\\t]'"
    ) in done.stdout.splitlines()


def test_a_patch_solution(repo: Repo, tmp_path: Path) -> None:
    bugfix(repo)
    done = validate(repo, "--solution", str(calc_patch(tmp_path, "a + b")))
    assert done.returncode == 0, done.stdout + done.stderr


def test_flaky_tests_are_named_with_repeat(repo: Repo, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    flaky = (
        "import pathlib\n\n\ndef test_flaky():\n"
        f"    p = pathlib.Path({str(counter)!r})\n"
        "    n = int(p.read_text()) if p.exists() else 0\n"
        "    p.write_text(str(n + 1))\n"
        "    assert n % 2 == 0\n"
    )
    bugfix(repo, extra="  pass_to_pass: [tests/test_flaky.py::test_flaky]\n")
    repo.commit("flaky", {"tests/test_flaky.py": flaky})
    repo.branch("fix")
    repo.commit("fix", {"src/calc.py": "def add(a, b):\n    return a + b\n"})
    counter.write_text("1")  # the empty submission's run sees 1 (fails), then 2, 3, 4
    done = validate(repo, "--solution", "fix", "--repeat", "3")
    assert done.returncode == 1
    assert "PROBLEM  flaky: tests/test_flaky.py::test_flaky had outcomes failed, passed" in (
        done.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repeat", "0", "--solution", "main"], "--repeat must be at least 1"),
        (["--repeat", "2"], "--repeat needs --solution"),
        (
            ["--solution", "no-such-branch"],
            "--solution no-such-branch: no commit of that name; pass an existing patch file "
            "or a branch, tag or sha",
        ),
        (
            ["--solution", "missing.patch"],
            "--solution missing.patch: no such patch file, and no commit of that name",
        ),
        (["--solution", "/"], "--solution /: not a regular file; pass a patch file"),
    ],
)
def test_usage_errors(repo: Repo, args: list[str], message: str) -> None:
    bugfix(repo)
    done = validate(repo, *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.splitlines()) == 1


def test_refactor_without_limits_and_unloadable_grader(repo: Repo) -> None:
    repo.commit(
        "base",
        {
            ".repogym.yml": (
                f"version: 1\ntype: refactor\ntests:\n  command: {PYTEST}\n"
                "  pass_to_pass: [tests/test_a.py::test_a]\n"
                "grading:\n  graders: ['nowhere_module_xyz:Grader']\n"
            ),
            "tests/test_a.py": "def test_a():\n    pass\n",
        },
    )
    done = validate(repo)
    assert done.returncode == 1
    assert "cannot import 'nowhere_module_xyz'" in done.stdout
    assert "PROBLEM  type: refactor without max_function_length" in done.stdout


def test_repeat_reports_the_spread_of_each_timing_on_a_perf_task(tmp_path: Path) -> None:
    # The solution does a quarter of the base's loop work (tests/support/perfmodes.py). The
    # interpreter's start weighs on runs this short (0.1 s of loop at the base), so the
    # clocks see 1.3× to 1.5× of it; the task's own grades count CPU time, which load moves
    # least, with a noise floor above the most identical code reached by CPU time beside
    # two busy processes in bench/perf_noise.py (1.14×). What is under test is the report
    # of each timing's spread.
    settings = {
        "timing": "cpu",
        "runs": 2,
        "warmup": 1,
        "noise_floor": 1.2,
        "min_speedup": 1.3,
    }
    repo = perf_repo(tmp_path / "repo", {"work": 1_600_000}, {"work": 400_000}, settings)
    done = validate(repo, "--solution", "pr", "--repeat", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {line.split(": speed-up")[0].strip(): line for line in done.stdout.splitlines()}
    for mode in ("wall", "cpu", "instructions"):
        assert f"ok       perf, {mode}" in lines, done.stdout
    instructions = lines["ok       perf, instructions"]
    assert instructions.endswith("counted by valgrind)"), instructions
    spread = float(instructions.split("(spread ")[1].split("%")[0])
    assert spread < 1.0, instructions  # a count does not vary
    assert "perf: the steadiest timing on this task is `" in done.stdout
