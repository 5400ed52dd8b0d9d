"""A command whose program is not found is an error of the machine, not a failing grade
(repogym.run.notfound, issue 20): real repositories graded by ``repogym grade``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repogym.errors import CommandNotFound, RepogymError
from repogym.models import CommandResult
from repogym.run.notfound import first_program, missing_program, not_found, on_path
from tests.support.repo import Repo

DASH = "/bin/sh: 1: node: not found\n"
BASH = "bash: line 1: node: command not found\n"
TEST = "def test_a():\n    assert True\n"


def result(exit_code: int | None, stderr: str, command: str = "node x.js") -> CommandResult:
    return CommandResult(
        command=command,
        exit_code=exit_code,
        timed_out=False,
        duration=0.1,
        stdout="",
        stderr=stderr,
    )


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("node --test", "node"),
        ("FOO=1 BAR=2 node --test", "node"),
        ("npx jest --ci && echo done", "npx"),
        ("'my tool' --junit x", "my tool"),
        ("./run.sh {junit}", "./run.sh"),
        ("cd sub && node", None),
        ("$RUNNER {junit}", None),
        ("(node)", None),
        ("echo 'unclosed", None),
        ("X=1", None),
    ],
)
def test_the_first_program(command: str, program: str | None) -> None:
    assert first_program(command) == program


@pytest.mark.parametrize("stderr", [DASH, BASH, "/bin/sh: node: not found\n"])
def test_the_shells_words_for_a_program_not_found(stderr: str) -> None:
    assert missing_program(result(127, stderr), "node x.js") == "node"


@pytest.mark.parametrize(
    ("exit_code", "stderr", "command"),
    [
        (1, DASH, "node x.js"),  # not the shell's code for it
        (127, "node: something else\n", "node x.js"),
        (127, "/bin/sh: 1: npm: not found\n", "node x.js"),  # another program: node's doing
        (127, "/bin/sh: 1: ./run.sh: not found\n", "./run.sh"),  # the submission's file
        (None, DASH, "node x.js"),
    ],
)
def test_what_is_not_a_program_not_found(exit_code: int | None, stderr: str, command: str) -> None:
    assert missing_program(result(exit_code, stderr, command), command) is None


def test_a_program_on_the_path_was_found_whatever_the_output_says(tmp_path: Path) -> None:
    (tmp_path / "node").write_text("#!/bin/sh\n")
    (tmp_path / "node").chmod(0o755)
    found = on_path(str(tmp_path))
    assert missing_program(result(127, DASH), "node x.js", found=found) is None
    assert missing_program(result(127, DASH), "node x.js", found=on_path("/nonexistent")) == "node"
    # A relative entry is searched in the submission's copy: its to have or not.
    relative = on_path("/nonexistent:node_modules/.bin")
    assert missing_program(result(127, DASH), "node x.js", found=relative) is None


def test_the_message_names_the_key_the_program_the_path_and_the_place() -> None:
    error = not_found("node", "tests.command", "/usr/bin:/bin")
    assert isinstance(error, RepogymError) and error.program == "node"
    assert error.lines == (
        "tests.command: `node` was not found on the PATH of this machine (PATH=/usr/bin:/bin): "
        "install it, or name an environment that has it (environment: in the task, docs/task.md)",
    )
    elsewhere = not_found("node", "setup", "/usr/bin", where="the environment's image ci:1")
    assert "not found on the PATH of the environment's image ci:1 (PATH=/usr/bin)" in str(elsewhere)
    assert isinstance(elsewhere, CommandNotFound)


# -- end to end ----------------------------------------------------------------------------


def grade(repo: Repo, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--base", "main", "--json", str(report)],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done, json.loads(report.read_text())


def task_with(command: str, setup: str | None = None) -> str:
    lines = ["version: 1", "type: bugfix"]
    if setup is not None:
        lines.append(f"setup: {json.dumps(setup)}")
    lines += ["tests:", f"  command: {json.dumps(command)}", "  fail_to_pass: [test_a.py::test_a]"]
    return "\n".join(lines) + "\n"


def path_line() -> str:
    return os.environ.get("PATH", os.defpath)


@pytest.mark.sandbox  # as the sandbox user when root, as without
def test_a_test_command_not_found_is_an_error_naming_it(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {".repogym.yml": task_with("nosuchtool --junit {junit}")})
    done, report = grade(repo, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "repogym: error: tests.command: `nosuchtool` was not found on the PATH of this machine "
        f"(PATH={path_line()}): install it, or name an environment that has it (environment: in "
        "the task, docs/task.md)"
    ]
    assert "FAIL" not in done.stdout and "Traceback" not in done.stderr
    assert report["error"] == {
        "kind": "usage",
        "message": done.stderr[len("repogym: error: ") :].strip(),
    }


def test_a_setup_not_found_is_an_error_naming_setup(repo: Repo, tmp_path: Path) -> None:
    task = task_with("python -m pytest --junitxml={junit}", setup="nosuchinstaller --all")
    repo.commit("base", {".repogym.yml": task, "test_a.py": TEST})
    done, _ = grade(repo, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("repogym: error: setup: `nosuchinstaller` was not found")


def test_a_missing_script_of_the_tree_is_still_a_failing_grade(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {".repogym.yml": task_with("./missing.sh {junit}")})
    done, report = grade(repo, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL 0.000" in done.stdout and "was not found" not in done.stderr
    assert report["passed"] is False


def test_a_submission_cannot_pass_its_failure_off_as_a_program_not_found(
    repo: Repo, tmp_path: Path
) -> None:
    runner = "import sys\nsys.stderr.write('/bin/sh: 1: python: not found\\n')\nsys.exit(127)\n"
    repo.commit("base", {".repogym.yml": task_with("python run.py {junit}"), "run.py": "1/0\n"})
    repo.branch("pr")
    repo.commit("the shell's words", {"run.py": runner})
    done, _ = grade(repo, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # python is on the PATH
    assert "FAIL 0.000" in done.stdout


PERF_TASK = """\
version: 1
type: perf
perf:
  command: nosuchbench --fast
  runs: 1
  warmup: 0
  min_speedup: 1.5
"""


def test_a_benchmark_not_found_is_an_error(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {".repogym.yml": PERF_TASK})
    done, _ = grade(repo, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "repogym: error: perf.command: `nosuchbench` was not found on the PATH of this machine "
        f"(PATH={path_line()}): install it, or name an environment that has it (environment: in "
        "the task, docs/task.md)"
    ]
    assert "FAIL" not in done.stdout
