"""Commands run as a sandbox user with nothing to inherit (issue 9): real uids, real
/proc, real fork bombs and daemons. The root path runs here as root (as CI does); the
not-root path runs in a child that drops to an unprivileged user first."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym.errors import SandboxError
from repogym.models import CommandResult
from repogym.run.host import Runner
from repogym.sandbox import users as _sandbox

ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(not ROOT, reason="running as another user needs root")
SLOT_IDS = range(_sandbox.UID_BASE, _sandbox.UID_BASE + _sandbox.SLOTS)
NOBODY = 65534


def processes_of(uid: int) -> list[str]:
    """Every process of ``uid`` in /proc, zombies included, as ``pid state``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if uid in {int(n) for n in fields["Uid"].split()}:
            found.append(f"{entry.name} {fields['State'].split()[0]}")
    return found


def uid_of(result: CommandResult) -> int:
    return int(result.stdout.splitlines()[0])


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user can go through and read (pytest's tmp_path is root's
    0700, where a test of what the sandbox cannot write would prove nothing)."""
    path = Path(tempfile.mkdtemp(prefix="repogym-test-"))
    path.chmod(0o755)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=True)


@root_only
def test_commands_run_as_an_unprivileged_uid_of_their_own(shared: Path) -> None:
    result = Runner(sandbox=True).run(
        "id -u; id -g; id -G; echo $USER $LOGNAME; ulimit -p; ulimit -n;"
        " grep NoNewPrivs /proc/self/status",
        shared,
        timeout=30,
    )
    uid, gid, groups, names, nproc, nofile, no_new_privs = result.stdout.splitlines()
    assert int(uid) in SLOT_IDS and int(uid) != 0
    assert gid == groups == uid  # no supplementary groups
    assert names == "repogym repogym"
    assert (int(nproc), int(nofile)) == (_sandbox.NPROC, _sandbox.NOFILE)
    assert no_new_privs.split() == ["NoNewPrivs:", "1"]


@root_only
@root_only
def test_on_by_default_and_off_only_when_the_grader_says_so(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Runner().run("id -u", shared, timeout=30).stdout != "0\n"
    monkeypatch.setenv("REPOGYM_SANDBOX", "off")
    assert Runner().run("id -u", shared, timeout=30).stdout == "0\n"


@root_only
def test_the_graders_files_are_not_writable(shared: Path) -> None:
    owned = shared / "owned.txt"
    owned.write_text("grader\n")
    owned.chmod(0o644)
    result = Runner(sandbox=True).run(
        f"cat {owned}; echo pwned >> {owned}; echo new > {shared}/new", shared, timeout=30
    )
    assert result.stdout == "grader\n"  # it could reach the file: the test shows something
    # Its working directory is read-only to it twice over: the grader's, and (sealed)
    # mounted read-only.
    refusals = result.stderr.count("Permission denied") + result.stderr.count("Read-only")
    assert refusals == 2, result.stderr
    assert owned.read_text() == "grader\n" and not (shared / "new").exists()


@root_only
def test_home_and_tmpdir_are_fresh_the_slots_and_gone_afterwards(shared: Path) -> None:
    runner = Runner(sandbox=True)
    command = (
        "id -u; for d in $HOME $TMPDIR; do echo $d; stat -c '%u %a' $d; ls -A $d | wc -l;"
        " touch $d/left; done"
    )
    first, second = (runner.run(command, shared, timeout=30) for _ in range(2))
    uid, home, home_mode, home_files, tmp, tmp_mode, tmp_files = first.stdout.split("\n")[:7]
    assert home_mode == tmp_mode == f"{uid} 700"
    assert home_files == tmp_files == "0"
    assert home != tmp and second.stdout.split("\n")[1] != home
    assert not Path(home).exists() and not Path(tmp).exists()


@root_only
def test_a_fork_bomb_ends_with_the_command(shared: Path) -> None:
    # The bomb grows until RLIMIT_NPROC stops it, and churns there (a shell that cannot
    # fork exits); the main shell forks meanwhile, up to 2000 times or until a fork
    # fails, then exits (dash exits with 2 when it cannot fork): the clean-up races a
    # bomb at its full size.
    result = Runner(sandbox=True).run(
        "id -u; b() { b | b & }; b;"
        " i=0; while [ $i -lt 2000 ] && (:) 2>/dev/null; do i=$((i + 1)); done",
        shared,
        timeout=120,
    )
    assert (result.exit_code in (0, 2), result.timed_out) == (True, False)
    assert "Cannot fork" in result.stderr  # the bomb hit its limit
    assert processes_of(uid_of(result)) == []


@root_only
def test_nested_daemons_with_new_sessions_and_no_environment_are_all_killed(
    shared: Path,
) -> None:
    work = shared / "work"
    work.mkdir()
    # Each of 80 levels starts the next in a new session with an empty environment and
    # stays; the last one says it started, then rewrites the file for ever.
    (work / "daemon.sh").write_text(
        'if [ "$1" -gt 0 ]; then\n'
        '  setsid env -i /bin/sh "$0" $(($1 - 1)) "$2" &\n'
        "  exec sleep 1000\n"
        "fi\n"
        'echo started > "$2/ready"\n'
        'while :; do echo daemon > "$2/report"; done\n'
    )
    result = Runner(sandbox=True).run(
        f"id -u; mkfifo ready; sh daemon.sh 80 {work} & read started < ready; echo $started",
        work,
        timeout=120,
        writable=[work],
    )
    assert result.stdout.splitlines()[1:] == ["started"]
    assert processes_of(uid_of(result)) == []
    (work / "report").write_text("grader\n")
    assert (work / "report").read_text() == "grader\n"


@root_only
def test_a_daemon_holding_stdout_open_does_not_hang_the_run(shared: Path) -> None:
    done: list[CommandResult] = []
    command = "id -u; setsid env -i /bin/sh -c 'exec sleep 1000' & echo spawned"
    thread = threading.Thread(
        target=lambda: done.append(Runner(sandbox=True).run(command, shared, timeout=60))
    )
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "run() did not return"
    assert done[0].exit_code == 0 and done[0].stdout.endswith("spawned\n")
    assert processes_of(uid_of(done[0])) == []


@root_only
def test_concurrent_runs_get_different_uids(shared: Path) -> None:
    ids, gate = shared / "ids", shared / "gate"
    for fifo in (ids, gate):
        os.mkfifo(fifo)
        fifo.chmod(0o666)
    # Both commands say their uid, then wait at the gate: they run at the same time.
    command = f"id -u > {ids}; read go < {gate}"
    results: list[CommandResult] = []
    # Held open for reading and writing here, neither end of a FIFO blocks its opening.
    reader, writer = os.open(ids, os.O_RDWR), os.open(gate, os.O_RDWR)
    threads = [
        threading.Thread(
            target=lambda: results.append(Runner(sandbox=True).run(command, shared, timeout=60))
        )
        for _ in range(2)
    ]
    try:
        for thread in threads:
            thread.start()
        seen = b""
        while seen.count(b"\n") < 2:
            seen += os.read(reader, 100)
    finally:
        os.write(writer, b"go\ngo\n")
        for thread in threads:
            thread.join()
        os.close(reader)
        os.close(writer)
    first, second = (int(uid) for uid in seen.split())
    assert first != second and {first, second} <= set(SLOT_IDS)
    assert [r.exit_code for r in results] == [0, 0]


@root_only
def test_files_planted_in_world_writable_places_are_removed(shared: Path) -> None:
    name = f"planted-{uuid.uuid4().hex}"
    planted = [Path(top, name) for top in ("/tmp", "/var/tmp", "/dev/shm")]
    link = Path("/tmp", f"{name}-link")
    result = Runner(sandbox=True).run(
        f"touch {planted[0]}; mkdir -p {planted[1]}/deep; touch {planted[1]}/deep/file;"
        f" echo x > {planted[2]}; ln -s /etc/passwd {link}; ls -d /tmp/{name}*",
        shared,
        timeout=30,
    )
    assert len(result.stdout.split()) == 2  # it planted them
    assert [path for path in (*planted, link) if os.path.lexists(path)] == []
    assert Path("/etc/passwd").is_file()  # the link was removed, not what it points to


@root_only
def test_a_writable_tree_is_handed_over_and_nothing_else(shared: Path) -> None:
    tree, other = shared / "tree", shared / "other"
    for directory in (tree, other):
        (directory / "sub").mkdir(parents=True)
        (directory / "sub" / "file").write_text("old\n")
    outside = shared / "outside"
    outside.write_text("root's\n")
    (tree / "link").symlink_to(outside)
    os.link(outside, tree / "hardlink")  # another name of a file outside the tree
    result = Runner(sandbox=True).run(
        f"id -u; echo new > sub/file && echo new > sub/added && echo ok;"
        f" echo new > {other}/sub/file",
        tree,
        timeout=30,
        writable=[tree],
    )
    uid = uid_of(result)
    assert result.stdout.splitlines()[1] == "ok"
    assert (tree / "sub" / "added").stat().st_uid == uid
    assert (other / "sub" / "file").read_text() == "old\n"
    assert outside.stat().st_uid == 0 and outside.read_text() == "root's\n"


@root_only
def test_a_locked_tree_is_read_only_to_the_commands(shared: Path) -> None:
    tree = shared / "baseline"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "bench.py").write_text("print('base')\n")
    (tree / "sub").chmod(0o777)
    (tree / "sub" / "bench.py").chmod(0o666)
    runner = Runner(sandbox=True)
    runner.lock(tree)
    result = runner.run(
        "cat sub/bench.py; echo 'sleep' >> sub/bench.py; touch sub/conftest.py", tree, timeout=30
    )
    assert result.stdout == "print('base')\n"
    # Denied by the modes, and (sealed) by a read-only mount before them.
    refusals = result.stderr.count("Permission denied") + result.stderr.count("Read-only")
    assert refusals == 2, result.stderr
    assert stat.S_IMODE((tree / "sub").stat().st_mode) == 0o755
    assert stat.S_IMODE((tree / "sub" / "bench.py").stat().st_mode) == 0o644


@root_only
def test_a_lock_directory_that_others_can_write_is_refused(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locks = shared / "locks"
    locks.mkdir(mode=0o755)
    locks.chmod(0o755)
    monkeypatch.setattr(_sandbox, "lock_directory_path", lambda: locks)
    with pytest.raises(SandboxError) as raised:
        Runner(sandbox=True).run("true", shared, timeout=30)
    assert str(raised.value) == (
        f"repogym: {locks} must be a directory owned by root with mode 0700 (it is uid 0's,"
        " mode 0755); remove it and run again"
    )


@root_only
@pytest.mark.parametrize("planted", ["open to all", "a link"])
def test_a_node_cache_directory_that_others_could_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    """What the grading processes of a machine share (the base's runs, issue 23) is read
    back unchecked: its directory must be root's alone, or a command could plant a value
    there for the next job's grade."""
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    monkeypatch.setattr(_sandbox, "lock_directory_path", lambda: locks)
    if planted == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        (locks / "node-cache").symlink_to(tmp_path / "elsewhere")
    else:
        (locks / "node-cache").mkdir()
        (locks / "node-cache").chmod(0o777)
    with pytest.raises(SandboxError) as raised:
        _sandbox.private_directory("node-cache")
    assert str(raised.value) == (
        f"repogym: {locks}/node-cache must be a directory owned by root with mode 0700; "
        "remove it and run again"
    )
    shutil.rmtree(locks / "node-cache", ignore_errors=True)
    (locks / "node-cache").unlink(missing_ok=True)
    made = _sandbox.private_directory("node-cache")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700 and made.stat().st_uid == 0


# A grader in a process of its own, with a secret in the environment it was started with
# (what /proc/<pid>/environ shows). "drop": it drops to nobody before it grades, with all
# it needs imported first (this test's python may be where nobody cannot go, as /root),
# and dumpable, as a process started by that user is.
GRADER = """
import ctypes, json, os, shutil, subprocess, sys, tempfile, weakref
from pathlib import Path
from repogym.run.host import Runner

if sys.argv[1] == "drop":
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
peek = f"cat /proc/{os.getpid()}/environ"
before = subprocess.run(["sh", "-c", peek], capture_output=True).stdout
work = Path(tempfile.mkdtemp())
(work / "file").write_text("x\\n")
work.chmod(0o755)
runner = Runner(sandbox=True)
runner.lock(work)
runs = [
    runner.run(f"{peek}; echo; id -u; echo $HOME; echo y >> file", work, timeout=30)
    for _ in range(2)
]
json.dump({
    "before": "canary-5f1e" in before.decode(),
    "after": ["canary-5f1e" in run.stdout for run in runs],
    "errors": [run.stderr for run in runs],
    "uids": [int(run.stdout.splitlines()[-2]) for run in runs],
    "homes": [run.stdout.splitlines()[-1] for run in runs],
    "file": (work / "file").read_text(),
}, sys.stdout)
subprocess.run(["chmod", "-R", "u+w", str(work)])
shutil.rmtree(work)
"""


def grade_in_a_process(user: str) -> tuple[dict[str, Any], str]:
    """What the grader above saw, and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", GRADER, user],
        env={**os.environ, "REPOGYM_TEST_CANARY": "canary-5f1e"},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@root_only
def test_the_graders_environment_is_out_of_reach() -> None:
    seen, _ = grade_in_a_process("root")
    assert seen["after"] == [False, False]
    assert all("Permission denied" in errors for errors in seen["errors"])
    assert all(uid in SLOT_IDS for uid in seen["uids"])


@root_only
def test_not_root_the_grader_says_so_once_and_keeps_its_environment_closed() -> None:
    seen, stderr = grade_in_a_process("drop")
    assert seen["uids"] == [NOBODY, NOBODY]
    # A child of the same uid reads the grader's environment until it is made not dumpable.
    assert seen["before"] is True
    assert seen["after"] == [False, False]
    assert all("Permission denied" in errors for errors in seen["errors"])
    assert stderr == _sandbox.NOT_ROOT_NOTICE + "\n"
    first, second = seen["homes"]
    assert first != second and not Path(first).exists()
    assert seen["file"] == "x\n"  # the locked tree was not written


def test_slot_ids_that_name_a_user_or_group_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    # A slot's clean-up kills every process of its uid: never a real account's.
    monkeypatch.setattr(_sandbox, "_base", lambda: NOBODY - 2)
    ids = _sandbox._ids.__wrapped__()  # type: ignore[attr-defined]
    assert NOBODY - 2 in ids and NOBODY not in ids
