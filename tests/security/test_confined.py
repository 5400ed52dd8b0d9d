"""Confined by Landlock (issue 43): where the seal's namespaces are refused, as in the
Action's own container, each command of a submission may open only what its view would
show, and what it leaves outside its trees (System V objects, files in ``/dev/shm``) is
removed after it. The attacks of the seal's tests, on the host with
``REPOGYM_SEAL=landlock`` (tests/action/test_confined.py runs them in the Action's
container, where Landlock is what there is); the docstrings quote what each gave with
neither (a sandbox uid and the old clean-up, ``REPOGYM_SEAL=off``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from repogym._demo import build_example_repo
from repogym.run.host import Runner
from repogym.sandbox import landlock, seal
from tests.security._harness import Case
from tests.security._sealing import (
    ADDED_TASK,
    REMEMBERS,
    batch_with_a_planter,
    remembering_attack,
    remove_segment,
    segment,
)
from tests.support.batching import bugfix_that_waits
from tests.support.waiting import BACKSTOP

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own is root's to give"),
    pytest.mark.skipif(landlock.unavailable() is not None, reason=f"{landlock.unavailable()}"),
]


@pytest.fixture(autouse=True)
def confined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPOGYM_SEAL", "landlock")


@pytest.mark.parametrize("channel", sorted(REMEMBERS))
def test_nothing_of_one_run_reaches_the_next(case: Case, channel: str) -> None:
    """A target that passes only when an earlier run left it a mark: the segment and the
    file in /dev/shm are removed after each command, /var/tmp is not the command's to
    write. Neither: ``sysv-shm`` PASS 1.000."""
    graded = remembering_attack(case, channel)
    assert "confined by Landlock" in graded.stderr


OUTSIDE = """\
from pathlib import Path


def test_reads_elsewhere():
    assert "ANSWER" in Path({secret!r}).read_text()


def test_lists_the_temporary_directory():
    assert list(Path("/tmp").iterdir())


def test_lists_shared_memory():
    list(Path("/dev/shm").iterdir())  # where other graders' copies may be
"""


def test_nothing_outside_the_copy_can_be_opened(case: Case, readable_secret: Path) -> None:
    """Targets that pass when they read a file outside the copy that others may read, or
    list ``/tmp`` or ``/dev/shm`` (where the other grades' trees are). Neither: they
    pass (the red team listed /dev/shm through the right a rule for /dev gave)."""
    case.base(task=ADDED_TASK)
    case.submit({"tests/test_elsewhere.py": OUTSIDE.format(secret=str(readable_secret))})
    graded = case.grade()
    graded.check("FAIL")
    assert "new tests at the head: 3 (0 passing)" in graded.output, graded.output
    for test in ("reads_elsewhere", "lists_the_temporary_directory", "lists_shared_memory"):
        assert f"test_{test} failed: PermissionError" in graded.report_text, test


def test_landlock_is_what_closes_it(
    case: Case, readable_secret: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: with a uid of its own but no Landlock, the same tests read the file
    and list /tmp (they pass at the head and at the base alike)."""
    monkeypatch.setenv("REPOGYM_SEAL", "off")
    case.base(task=ADDED_TASK)
    case.submit({"tests/test_elsewhere.py": OUTSIDE.format(secret=str(readable_secret))})
    graded = case.grade()
    assert "new tests at the head: 3 (3 passing)" in graded.output, graded.output
    assert "PermissionError" not in graded.output
    assert "run unsealed (REPOGYM_SEAL=off)" in graded.stderr


def test_one_batch_job_does_not_reach_another(tmp_path: Path) -> None:
    """``repogym batch --jobs 2``: job A plants a runner configuration and a plugin in
    ``/tmp`` and ``/dev/shm`` while job B, a broken change, runs its tests. Confined, A
    may not write ``/tmp``, and B's copy is not in ``/dev/shm``, where B's pytest would
    look for one (the copies go there only under the seal)."""
    batch_with_a_planter(tmp_path)


def test_an_episode_finds_nothing_the_last_one_left(tmp_path: Path) -> None:
    """RepoEnv through ``gymnasium.make``: an episode's command leaves a System V memory
    segment and a file in ``/dev/shm``; after ``reset()`` the next episode's command
    looks for them. Both are the clean-up's (it runs after every command, confined or
    not); before it removed System V objects the segment was there, and stayed after
    the environment closed."""
    import gymnasium

    import repogym.env.gym  # noqa: F401  (registers the environment)
    from repogym._demo import build_example_repo

    repo = build_example_repo("bugfix", tmp_path / "bugfix")
    key = 0x5EA1 + os.getpid() % 1000
    shm = f"import ctypes; print(ctypes.CDLL(None).shmget({key}, 4096, {{}}) != -1)"
    leave = f"python -c '{shm.format('0o1666')}' && echo kept > /dev/shm/kept-{key}"
    look = f"python -c '{shm.format(0)}'; test -e /dev/shm/kept-{key} && echo file"
    env = gymnasium.make("repogym/RepoEnv-v0", repo=repo, base="main")
    try:
        env.reset()
        observation, *_ = env.step({"kind": "run", "command": leave})
        assert observation["output"].split() == ["True"], observation
        env.reset()
        observation, *_ = env.step({"kind": "run", "command": look})
        assert observation["output"].split() == ["False"], observation
    finally:
        env.close()
        remove_segment(key)
        Path(f"/dev/shm/kept-{key}").unlink(missing_ok=True)
    assert not segment(key)


@pytest.mark.skipif(seal.unavailable() is not None, reason=f"{seal.unavailable()}")
def test_a_confined_command_cannot_read_a_sealed_grades_copy(tmp_path: Path) -> None:
    """Two graders on one machine, one sealed (its copies in /dev/shm), one confined (a
    command of another process with ``REPOGYM_SEAL=landlock``, which may read files in
    /dev/shm for the semaphores there). The red team found the sealed grade's copy by its
    path (``/proc/<pid>/cmdline`` names it) and read its hidden test. Its directory is now
    the grader's alone: the seal's view reaches it as root."""
    shown = Path(tempfile.mkdtemp(prefix="repogym-confined-"))
    shown.chmod(0o755)
    fifo = shown / "running"
    os.mkfifo(fifo)
    fifo.chmod(0o666)
    repo = bugfix_that_waits(tmp_path / "bugfix", fifo)
    env = {k: v for k, v in os.environ.items() if k != "REPOGYM_SEAL"}
    env["REPOGYM_SEAL_SHOW"] = str(shown)
    grader = subprocess.Popen(
        [sys.executable, "-m", "repogym", "grade", "--base", "main"],
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        held = os.open(fifo, os.O_WRONLY)  # its tests run in their copy
        [copy] = Path("/dev/shm").glob(f"repogym-tests-*x{grader.pid}-*/tree")
        target = copy / "tests" / "test_slugify.py"
        assert target.is_file()
        reader = Runner().run(f"cat {target}", tmp_path, timeout=60)
        os.close(held)
        grader.wait(timeout=BACKSTOP)
    finally:
        if grader.poll() is None:
            grader.kill()
        shutil.rmtree(shown)
    assert reader.exit_code != 0 and "Permission denied" in reader.stderr, reader.stdout


def test_copies_in_shared_memory_are_refused_when_confined(tmp_path: Path) -> None:
    """``REPOGYM_COPIES`` beneath /dev/shm, which a confined command may read: one line,
    exit 2, nothing graded."""
    copies = Path(tempfile.mkdtemp(prefix="repogym-copies-", dir="/dev/shm"))
    try:
        repo = build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
        done = subprocess.run(
            [sys.executable, "-m", "repogym", "grade", "--base", "main"],
            cwd=repo, env={**os.environ, "REPOGYM_COPIES": str(copies)},
            capture_output=True, text=True, timeout=BACKSTOP,
        )  # fmt: skip
    finally:
        shutil.rmtree(copies)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"REPOGYM_COPIES={copies}: the commands here are not sealed" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
