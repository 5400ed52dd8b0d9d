"""Sealed runs (issue 43): each command of a submission in namespaces of its own, so that
nothing it leaves outlives it, nothing of the host outside its copy is in sight, and its
memory is the task's ``limits.memory``. Each attack is a pull request graded end to end
by ``repogym grade`` on a real repository, as root (CI): with the seal off
(``REPOGYM_SEAL=off``) each of them passes, which the docstrings quote.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.sandbox import cgroup, seal
from tests.security._harness import BUGFIX_TASK, EXAMPLES, Case, make_grader_venv
from tests.security._sealing import (
    ADDED_TASK,
    REMEMBERS,
    batch_with_a_planter,
    key,
    remembering_attack,
    remove_segment,
    segments_of_sandbox_users,
)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the seal is root's (docs/security.md)"),
    pytest.mark.skipif(seal.unavailable() is not None, reason=f"{seal.unavailable()}"),
]


@pytest.mark.parametrize("channel", sorted(REMEMBERS))
def test_nothing_of_one_run_reaches_the_next(case: Case, channel: str) -> None:
    """A target that passes only when an earlier run left it a mark. Unsealed:
    ``sysv-shm`` PASS 1.000 (the segment outlives every clean-up)."""
    remembering_attack(case, channel)


def test_nothing_outside_the_copy_is_in_sight(case: Case, readable_secret: Path) -> None:
    """A target that passes when it can read a file outside its copy that others may
    read. Unsealed: PASS 1.000."""
    case.base(task=ADDED_TASK)
    test = f"""\
from pathlib import Path


def test_reads_elsewhere():
    assert "ANSWER" in Path({str(readable_secret)!r}).read_text()


def test_sees_the_work_tree():
    assert Path({str(case.repo.root / ".repogym.yml")!r}).exists()
"""
    case.submit({"tests/test_elsewhere.py": test})
    graded = case.grade()
    graded.check("FAIL")
    assert "FileNotFoundError" in graded.output or "No such file" in graded.output


@pytest.fixture
def listener() -> Iterator[int]:
    """A server on the host's loopback (a developer's database, the Docker API on a
    port, another job's test server): its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_the_hosts_loopback_is_out_of_reach(case: Case, listener: int) -> None:
    """A target that passes when it reaches a port of the host's 127.0.0.1. Unsealed:
    PASS 1.000."""
    case.base(task=ADDED_TASK)
    test = f"""\
import socket


def test_reaches_the_host():
    socket.create_connection(("127.0.0.1", {listener}), timeout=5).close()
"""
    case.submit({"tests/test_reach.py": test})
    graded = case.grade()
    graded.check("FAIL")
    assert "ConnectionRefusedError" in graded.output or "refused" in graded.output


@pytest.mark.skipif(cgroup.unavailable() is not None, reason=f"{cgroup.unavailable()}")
def test_a_command_over_its_memory_limit_is_stopped_and_said_so(case: Case) -> None:
    """A wrong fix whose code grows without bound (toolz's test over ``range(10**9)``): stopped at
    the task's ``limits.memory``, said so, exit 1. Unsealed and without the cgroup it
    grew until the kernel's OOM killer stopped it after 108 s, taking the machine with
    it; this one is held at 2 GiB by the test's own ``RLIMIT_AS`` should the limit not
    hold."""
    task = BUGFIX_TASK.replace("version: 1\n", "version: 1\nlimits: {memory: 128m}\n")
    case.base(task=task)
    source = (case.repo.root / "src" / "slugify" / "__init__.py").read_text()
    hungry = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "_HOARD = [bytearray(1 << 20) for _ in range(4096)]  # grows a MiB at a time\n"
    )
    case.submit({"src/slugify/__init__.py": hungry + source})
    graded = case.grade()
    graded.check("FAIL")
    assert graded.returncode == 1, graded.output
    assert "went over its memory limit (128 MiB, limits.memory)" in graded.output


def test_the_seal_is_what_closes_them(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same attack run as the grader's own user, with neither the seal
    nor a uid of its own, wins; so the attacks above test the seal, not something else."""
    monkeypatch.setenv("REPOGYM_SANDBOX", "off")
    case.base(task=ADDED_TASK)
    test = REMEMBERS["sysv-shm"].replace("{key}", str(key(case)))
    case.submit({"tests/test_remembered.py": test})
    try:
        graded = case.grade()
    finally:
        remove_segment(key(case))
    assert graded.returncode == 0, graded.output
    assert graded.stdout.startswith("PASS 1.000") or "PASS 1.000" in graded.stdout


def test_one_batch_job_does_not_reach_another(tmp_path: Path) -> None:
    """``repogym batch --jobs 2``: job A plants a runner configuration and a plugin in the
    shared temporary directories while job B, a broken change, runs its tests. Unsealed,
    B's pytest loads them and B passes when B's run falls within A's (the issue's
    measurement); sealed, no command sees another's /tmp or /dev/shm."""
    batch_with_a_planter(tmp_path)


def test_a_python_under_a_0700_directory_is_reached_without_opening_it(
    tmp_path: Path, venvs: Path
) -> None:
    """The grader's virtual environment inside a directory only root may enter, as a
    pyenv or a venv under a 0700 ``/root`` is: the grade runs, and nobody had to `chmod
    o+x` anything (before: exit 2 until they did). The view makes the directories above
    the toolchain it shows, open to all."""
    holder = venvs / f"locked-{tmp_path.name}"
    holder.mkdir(mode=0o700)
    try:
        case = Case(root=tmp_path, python=make_grader_venv(holder / "venv"))
        holder.chmod(0o700)
        case.base()
        solution = (EXAMPLES / "bugfix" / "solution" / "src/slugify/core.py").read_text()
        case.submit({"src/slugify/core.py": solution})
        graded = case.grade()
        assert graded.returncode == 0, graded.output
        assert "PASS 1.000" in graded.stdout
        assert stat.S_IMODE(holder.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(holder)


def test_an_episode_finds_nothing_the_last_one_left(tmp_path: Path) -> None:
    """RepoEnv through ``gymnasium.make``: an episode's command leaves a System V memory
    segment and a file in ``/dev/shm``; after ``reset()`` the next episode's command looks
    for them (before: the segment was there, and stayed after the environment closed)."""
    import gymnasium

    import repogym.env.gym  # noqa: F401  (registers the environment)
    from repogym._demo import build_example_repo

    repo = build_example_repo("bugfix", tmp_path / "bugfix")
    before = segments_of_sandbox_users()
    env = gymnasium.make("repogym/RepoEnv-v0", repo=repo, base="main")
    try:
        env.reset()
        left = "ipcmk -M 4096 -p 0666 >/dev/null && echo kept > /dev/shm/kept && echo left"
        observation, *_ = env.step({"kind": "run", "command": left})
        assert observation["output"].strip() == "left", observation
        env.reset()
        look = "ipcs -m | grep -c '^0x' ; ls /dev/shm"
        observation, *_ = env.step({"kind": "run", "command": look})
        assert observation["output"].split() == ["0"], observation
    finally:
        env.close()
    assert segments_of_sandbox_users() == before


@pytest.mark.skipif(cgroup.unavailable() is not None, reason=f"{cgroup.unavailable()}")
def test_the_cgroups_of_a_grader_killed_mid_command_are_removed_by_the_next(
    tmp_path: Path,
) -> None:
    """A grader killed while its command ran cannot remove that command's cgroup; the
    next grader on the machine removes it before its first command (102 were left on
    this machine by a day of tests, one a pid reused into a name clash)."""
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid names nobody now
    hierarchies = list(cgroup._layout(cgroup.Caps(memory=64 << 20, pids=64, cpus=1.0)))
    left = [h / f"repogym-{gone.pid}-1-killed" for h in hierarchies]
    for directory in left:
        directory.mkdir()
    tree = tmp_path / "holder" / "tree"
    tree.mkdir(parents=True)
    (tmp_path / "holder").chmod(0o711)
    tmp_path.chmod(0o711)
    grader = (
        "import sys; from pathlib import Path; from repogym.run.host import Runner; "
        "from repogym.sandbox.cgroup import Caps; "
        "r = Runner(limits=Caps(memory=64 << 20, pids=64, cpus=1.0)); "
        "sys.exit(r.run('true', Path(sys.argv[1]), timeout=60).exit_code)"
    )
    done = subprocess.run([sys.executable, "-c", grader, str(tree)], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert not [d for d in left if d.exists()]
