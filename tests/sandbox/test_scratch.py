"""What a killed grader leaves (repogym.sandbox.scratch): its copies, its snapshot store and
its base's tree are named after it, and the next grader on the machine removes them; the
directories of a grader still running, of another pid namespace or of another user are
left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym._demo import build_example_repo
from repogym.sandbox import scratch
from tests.support.batching import bugfix_that_waits
from tests.support.waiting import BACKSTOP

NAMESPACE = Path("/proc/self/ns/pid").stat().st_ino


def _gone_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid  # names nobody now


def _tagged(pid: int, namespace: int = NAMESPACE) -> list[Path]:
    """What the grader ``pid`` made and left, in the two places."""
    found: list[Path] = []
    for place in (tempfile.gettempdir(), scratch.RAM):
        found += Path(place).glob(f"repogym-*-p{namespace}x{pid}-*")
    return found


def test_the_first_directory_of_a_process_removes_what_gone_makers_left() -> None:
    gone, here = _gone_pid(), os.getpid()
    made = {
        "gone": [
            Path(place, f"repogym-tests-p{NAMESPACE}x{gone}-left")
            for place in ("/tmp", scratch.RAM)
        ],
        "running": [Path(tempfile.gettempdir(), f"repogym-tests-p{NAMESPACE}x{here}-mine")],
        "elsewhere": [Path(tempfile.gettempdir(), f"repogym-tests-p{NAMESPACE + 1}x{gone}-theirs")],
    }
    for paths in made.values():
        for path in paths:
            (path / "tree").mkdir(parents=True)
            (path / "tree" / "file").write_text("x")
    try:
        maker = (
            "import shutil; from repogym.sandbox import scratch; "
            "shutil.rmtree(scratch.holder('repogym-probe-'))"
        )
        subprocess.run([sys.executable, "-c", maker], check=True, timeout=BACKSTOP)
        assert [p for p in made["gone"] if p.exists()] == []
        assert all(p.is_dir() for p in made["running"] + made["elsewhere"])
    finally:
        for paths in made.values():
            for path in paths:
                subprocess.run(["rm", "-rf", str(path)], check=False)


def test_a_grader_killed_mid_grade_leaves_nothing_after_the_next(tmp_path: Path) -> None:
    fifo = tmp_path / "running"
    os.mkfifo(fifo)
    repo = bugfix_that_waits(tmp_path / "bugfix", fifo)
    command = [sys.executable, "-m", "repogym", "grade", "--base", "main"]
    grader = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        held = os.open(fifo, os.O_WRONLY)  # its test runs: its copies are made
        left = _tagged(grader.pid)
        grader.send_signal(signal.SIGKILL)
        grader.wait()
        os.close(held)  # the orphaned test ends
    finally:
        if grader.poll() is None:
            grader.kill()
    assert left, "the grader made nothing named after it"
    assert all(p.exists() for p in left)
    after = subprocess.run(
        [
            sys.executable,
            "-m",
            "repogym",
            "grade",
            "--base",
            "main",
            "--json",
            str(tmp_path / "r.json"),
        ],
        cwd=build_example_repo("bugfix", tmp_path / "other", solution=True),
        capture_output=True,
        text=True,
        timeout=BACKSTOP,
    )
    assert after.returncode == 0, after.stdout + after.stderr
    assert [p for p in left if p.exists()] == []


@pytest.fixture
def holder() -> Iterator[Path]:
    """A directory others may go through (pytest's are root's alone)."""
    made = Path(tempfile.mkdtemp(prefix="repogym-scratch-test-"))
    made.chmod(0o711)
    yield made
    subprocess.run(["rm", "-rf", str(made)], check=False)


def test_a_locked_leftover_is_removed_and_its_place_keeps_its_mode(holder: Path) -> None:
    """Not root, a leftover's locked directories are opened to remove them, and only
    they: never the place it is in (a world-writable temporary directory must stay so).
    Run as an unprivileged uid, as a grader that is not root is."""
    uid = 59_799  # below the sandbox's slots: nobody's
    place = holder / "place"
    place.mkdir()
    place.chmod(0o1777)
    gone = _gone_pid()
    leftover = place / f"repogym-tests-p{NAMESPACE}x{gone}-left"
    for locked in (leftover / "tree" / "src", leftover / "unlistable"):
        locked.mkdir(parents=True)
        (locked / "file.py").write_text("x")
    for path in [leftover, *leftover.rglob("*")]:
        os.chown(path, uid, uid)
    (leftover / "tree" / "src").chmod(0o555)
    (leftover / "unlistable").chmod(0o000)
    leftover.chmod(0o000)
    sweeper = f"from repogym.sandbox import scratch; scratch.sweep({str(place)!r})"
    subprocess.run(
        [sys.executable, "-c", sweeper], user=uid, group=uid, check=True, timeout=BACKSTOP
    )
    assert oct(place.stat().st_mode & 0o7777) == oct(0o1777)
    assert not leftover.exists()
