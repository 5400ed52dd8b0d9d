"""Signals and closed pipes, sent to real ``repogym`` processes.

A signal must stop a command the way Ctrl-C does: every ``finally`` runs (the work tree
gets the submission's files back, the test command is killed, temporary directories go),
then one line and exit code 128 + the signal's number.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from repogym.cli import main
from repogym.demo import example_names
from tests.conftest import Repo

# Starts repogym as `python -m repogym` does, with the dispositions an interactive shell
# gives (pytest itself may have been started with SIGINT or SIGHUP ignored, which a child
# would inherit, and which repogym rightly leaves alone).
LAUNCH = """\
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.{hup})
sys.argv[0] = "repogym"
runpy.run_module("repogym", run_name="__main__", alter_sys=True)
"""

BASE_TEST = "def test_a():\n    assert False  # the base\n"
SUBMITTED_TEST = "def test_a():\n    assert True  # the submission's own copy\n"


def start(
    args: list[str], cwd: Path, env: dict[str, str], *, hup: str = "SIG_DFL"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCH.format(hup=hup), *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def processes_running(needle: str) -> list[int]:
    """Live processes whose command line holds ``needle`` (zombies have none): for the
    test command, its shell and the ``sleep`` the shell started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle.encode() in cmdline:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def slow_grade(repo: Repo, signum: int) -> str:
    """A submission whose test command sleeps; how long, to find its processes by."""
    # A duration no other process uses, to find the test command by; short enough that
    # what a regression leaves behind goes away on its own.
    sleep = f"{150 + os.getpid() % 1000 / 1000:.3f}{signum:02d}"
    task = (
        "version: 1\ntype: bugfix\ntests:\n"
        f"  command: sleep {sleep}; python -m pytest --junitxml={{junit}}\n"
        "  fail_to_pass: [tests/test_a.py::test_a]\n"
    )
    repo.commit("base", {".repogym.yml": task, "tests/test_a.py": BASE_TEST})
    repo.branch("pr")
    repo.write({"tests/test_a.py": SUBMITTED_TEST})
    return sleep


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.communicate()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_during_grade_cleans_up(repo: Repo, tmp_path: Path, signum: int) -> None:
    duration = slow_grade(repo, signum)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    grade = start(["grade"], repo.root, {"TMPDIR": str(scratch)})
    try:
        wait_for(lambda: len(processes_running(duration)) == 2, "the test command to start")
        # The TestGrader has put the base's test file in place for the run.
        assert (repo.root / "tests/test_a.py").read_text() == BASE_TEST
        assert any(p.name.startswith("repogym-swap-") for p in scratch.iterdir())
        grade.send_signal(signum)
        out, err = grade.communicate(timeout=60)
    finally:
        stop(grade)
    assert grade.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err.splitlines() == [
        f"repogym: interrupted by {name}: stopped early, with the work tree as it was and "
        "temporary files removed"
    ]
    assert "Traceback" not in out + err
    assert (repo.root / "tests/test_a.py").read_text() == SUBMITTED_TEST
    assert repo.git("status", "--porcelain") == " M tests/test_a.py\n"
    assert processes_running(duration) == []
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_an_ignored_sighup_stays_ignored(repo: Repo, tmp_path: Path) -> None:
    # `nohup repogym grade`: a hangup must not stop it.
    duration = slow_grade(repo, signal.SIGHUP)
    grade = start(["grade"], repo.root, {}, hup="SIG_IGN")
    try:
        wait_for(lambda: len(processes_running(duration)) == 2, "the test command to start")
        grade.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert grade.poll() is None
        assert processes_running(duration)
        grade.send_signal(signal.SIGTERM)
        grade.communicate(timeout=60)
    finally:
        stop(grade)
    assert grade.returncode == 128 + signal.SIGTERM
    assert (repo.root / "tests/test_a.py").read_text() == SUBMITTED_TEST


def test_interrupt_stops_the_whole_demo(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    demo = start(["demo"], tmp_path, {"TMPDIR": str(scratch), "PYTHONUNBUFFERED": "1"})
    try:
        assert demo.stdout is not None
        first = demo.stdout.readline()
        assert first.startswith("== "), first
        demo.send_signal(signal.SIGINT)  # while the first example is being graded
        out, err = demo.communicate(timeout=120)
    finally:
        stop(demo)
    assert demo.returncode == 130, err
    graded = [first, *(line for line in out.splitlines() if line.startswith("== "))]
    # Before, each interrupt only ended the example at hand and the demo went on.
    assert len(graded) < len(example_names()), out
    assert err.splitlines() == [
        "repogym: interrupted by SIGINT: stopped early, with the work tree as it was and "
        "temporary files removed"
    ]
    # Only the (empty) directory the demo announced as holding the reports is left.
    (root,) = scratch.iterdir()
    assert root.name.startswith("repogym-demo-")
    assert not any(p.is_dir() for p in root.iterdir())


def big_module(tmp_path: Path) -> Path:
    """A module whose metrics table is far larger than a pipe's buffer."""
    module = tmp_path / "big.py"
    module.write_text("".join(f"def function_{i}():\n    return {i}\n" for i in range(6000)))
    return module


def test_metrics_into_a_pipe_closed_early(tmp_path: Path) -> None:
    # `repogym metrics big.py | head -1`, with a real `head`.
    module = big_module(tmp_path)
    metrics = subprocess.Popen(
        [sys.executable, "-m", "repogym", "metrics", str(module)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert metrics.stdout is not None
    head = subprocess.run(["head", "-1"], stdin=metrics.stdout, capture_output=True, check=True)
    metrics.stdout.close()
    err = metrics.communicate(timeout=60)[1]
    assert head.stdout.startswith(b"length complexity")
    assert metrics.returncode == 128 + signal.SIGPIPE
    assert err == b""


@pytest.mark.parametrize(
    ("args", "code"),
    [(["metrics", "--json"], 128 + signal.SIGPIPE), (["--help"], 0), (["grade", "--bogus"], 2)],
)
def test_stdout_closed_before_anything_is_printed(
    tmp_path: Path, args: list[str], code: int
) -> None:
    command = [sys.executable, "-m", "repogym", *args]
    if args[0] == "metrics":
        command.append(str(big_module(tmp_path)))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.close()
    err = process.communicate(timeout=60)[1].decode()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert process.returncode == code


def test_grade_with_stdout_closed_still_writes_the_report(repo: Repo, tmp_path: Path) -> None:
    repo.commit(
        "base",
        {
            ".repogym.yml": "version: 1\ntype: refactor\nconstraints:\n"
            "  paths: [src/**/*.py]\n  max_function_length: 4\n",
            "src/m.py": "def f(x):\n    return x\n",
        },
    )
    repo.branch("pr")
    report = tmp_path / "r.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "repogym", "grade", "--json", str(report)],
        cwd=repo.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()
    err = process.communicate(timeout=120)[1]
    assert (process.returncode, err) == (128 + signal.SIGPIPE, b"")
    assert b'"passed": true' in report.read_bytes()


def test_main_puts_handlers_and_streams_back(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    errors = (sys.stdout.errors, sys.stderr.errors)
    assert main(["metrics", str(tmp_path / "a.py")]) == 0
    assert {s: signal.getsignal(s) for s in before} == before
    assert (sys.stdout.errors, sys.stderr.errors) == errors
