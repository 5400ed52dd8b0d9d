"""Signals and closed pipes, sent to real ``repogym`` processes.

A signal must stop a command the way Ctrl-C does: every ``finally`` runs (the work tree
gets the submission's files back, the test command is killed, temporary directories go),
then one line and exit code 128 + the signal's number.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repogym._demo import example_names
from repogym.cli import main
from tests.support.repo import Repo
from tests.support.shell import repogym_command
from tests.support.waiting import BACKSTOP, ready_to_read

BASE_TEST = "def test_a():\n    assert False  # the base\n"
SUBMITTED_TEST = "def test_a():\n    assert True  # the submission's own copy\n"


def start(
    args: list[str], cwd: Path, env: dict[str, str], *, hup: str = "SIG_DFL"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        repogym_command(args, hup=hup),
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# How long a test may wait for what it waits on: only a backstop against a hang, so
# generous enough for a machine under any load (issue 8). Nothing here waits on a clock.
def first_line(process: subprocess.Popen[str]) -> str:
    """The first line ``process`` prints, once it prints it."""
    assert process.stdout is not None
    ready_to_read(process.stdout.fileno(), process, "a first line")
    return process.stdout.readline()


class Started:
    """The test command of :func:`slow_grade`, once it runs: a FIFO that the command
    writes its shell's pid and its ``sleep``'s pid to, and the pidfds of those two."""

    def __init__(self, fifo: Path) -> None:
        os.mkfifo(fifo)
        # Open before repogym starts, without blocking, so that the command's write
        # never waits for a reader.
        self.fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.pidfds: list[int] = []

    def wait(self, grade: subprocess.Popen[str]) -> None:
        ready_to_read(self.fd, grade, "the test command")
        pids = os.read(self.fd, 100).split()
        assert len(pids) == 2, pids
        self.pidfds = [os.pidfd_open(int(pid)) for pid in pids]

    def all_exited(self) -> bool:
        """Whether both processes have exited (a pidfd reads ready once it has)."""
        ready, _, _ = select.select(self.pidfds, [], [], 0)
        return len(ready) == len(self.pidfds)

    def close(self) -> None:
        """Close the FIFO, and kill what a failed test may have left running."""
        for pidfd in self.pidfds:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        for fd in [self.fd, *self.pidfds]:
            os.close(fd)


def slow_grade(repo: Repo, tmp_path: Path) -> Started:
    """A submission whose test command says it started, then sleeps."""
    started = tmp_path / "started"
    # The sleep runs in the background so that both pids are known once the command says
    # it started.
    task = (
        "version: 1\ntype: bugfix\ntests:\n"
        f"  command: sleep 600 & echo $$ $! > {started}; wait $!; "
        "python -m pytest --junitxml={junit}\n"
        "  fail_to_pass: [tests/test_a.py::test_a]\n"
    )
    repo.commit("base", {".repogym.yml": task, "tests/test_a.py": BASE_TEST})
    repo.branch("pr")
    repo.write({"tests/test_a.py": SUBMITTED_TEST})
    return Started(started)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.communicate()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_during_grade_cleans_up(repo: Repo, tmp_path: Path, signum: int) -> None:
    started = slow_grade(repo, tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    grade = start(["grade"], repo.root, {"TMPDIR": str(scratch), "REPOGYM_COPIES": str(scratch)})
    try:
        started.wait(grade)
        # The tests run in a copy with the base's test file; the work tree is untouched.
        assert (repo.root / "tests/test_a.py").read_text() == SUBMITTED_TEST
        copies = [p / "tree" for p in scratch.iterdir() if p.name.startswith("repogym-tests-")]
        assert [(c / "tests/test_a.py").read_text() for c in copies] == [BASE_TEST]
        grade.send_signal(signum)
        out, err = grade.communicate(timeout=BACKSTOP)
        # Killed and waited for before repogym exits, the sleep (a grandchild) included.
        assert started.all_exited()
    finally:
        stop(grade)
        started.close()
    assert grade.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err.splitlines() == [
        f"repogym: interrupted by {name}: stopped early, with the work tree as it was and "
        "temporary files removed"
    ]
    assert "Traceback" not in out + err
    assert (repo.root / "tests/test_a.py").read_text() == SUBMITTED_TEST
    assert repo.git("status", "--porcelain") == " M tests/test_a.py\n"
    assert sorted(p.name for p in scratch.iterdir()) == []


def ignores(pid: int, signum: int) -> bool:
    """Whether process ``pid`` ignores ``signum``: the kernel then discards it when sent."""
    status = Path(f"/proc/{pid}/status").read_text()
    (mask,) = (line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) >> (signum - 1) & 1)


def test_an_ignored_sighup_stays_ignored(repo: Repo, tmp_path: Path) -> None:
    # `nohup repogym grade`: a hangup must not stop it.
    started = slow_grade(repo, tmp_path)
    grade = start(["grade"], repo.root, {}, hup="SIG_IGN")
    try:
        started.wait(grade)
        # Ignored now, while the test command runs, so the SIGHUP is dropped as it is sent.
        assert ignores(grade.pid, signal.SIGHUP)
        grade.send_signal(signal.SIGHUP)
        assert grade.poll() is None and not started.all_exited()
        # Had a handler caught the SIGHUP, repogym would stop for it, not for the SIGTERM
        # sent after it: of pending signals, Python runs the lower number's handler first.
        grade.send_signal(signal.SIGTERM)
        err = grade.communicate(timeout=BACKSTOP)[1]
    finally:
        stop(grade)
        started.close()
    assert grade.returncode == 128 + signal.SIGTERM, err
    assert "SIGHUP" not in err
    assert (repo.root / "tests/test_a.py").read_text() == SUBMITTED_TEST


def test_interrupt_stops_the_whole_demo(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    demo = start(["demo"], tmp_path, {"TMPDIR": str(scratch), "PYTHONUNBUFFERED": "1"})
    try:
        first = first_line(demo)
        assert first.startswith("== "), first
        demo.send_signal(signal.SIGINT)  # while the first example is being graded
        out, err = demo.communicate(timeout=BACKSTOP)
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
    err = metrics.communicate(timeout=BACKSTOP)[1]
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
    err = process.communicate(timeout=BACKSTOP)[1].decode()
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
    err = process.communicate(timeout=BACKSTOP)[1]
    assert (process.returncode, err) == (128 + signal.SIGPIPE, b"")
    assert b'"passed": true' in report.read_bytes()


def test_main_puts_handlers_and_streams_back(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    errors = (sys.stdout.errors, sys.stderr.errors)
    assert main(["metrics", str(tmp_path / "a.py")]) == 0
    assert {s: signal.getsignal(s) for s in before} == before
    assert (sys.stdout.errors, sys.stderr.errors) == errors
