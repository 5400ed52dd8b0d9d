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
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.sandbox import cgroup, seal
from tests.security._harness import BUGFIX_TASK, Case

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the seal is root's (docs/security.md)"),
    pytest.mark.skipif(seal.unavailable() is not None, reason=f"{seal.unavailable()}"),
]

# The bugfix example's task with the pull request's own new tests as its targets (and
# the base's passing tests kept): an attack need not touch the base's tests.
_START, _END = BUGFIX_TASK.index("  fail_to_pass:"), BUGFIX_TASK.index("  timeout:")
ADDED_TASK = (
    BUGFIX_TASK[:_START]
    + "  fail_to_pass: added\n  pass_to_pass: baseline\n"
    + BUGFIX_TASK[_END:].split("constraints:")[0]
    + "constraints:\n  protected: [src/**]\n"
)


def _key(case: Case) -> int:
    return zlib.crc32(case.marker.encode()) & 0x7FFFFFFF


# A test that passes the first time it runs and fails every time after: a "fix" with no
# code in it, if anything of its first run reaches its second (the head's tests run
# first, then the added ones against the base's code, where they must fail to count).
REMEMBERS = {
    "sysv-shm": """\
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def test_remembered():
    seen = libc.shmget({key}, 0, 0) != -1
    libc.shmget({key}, 4096, 0o1666)  # IPC_CREAT | 0666: outlives the process
    assert not seen
""",
    "dev-shm": """\
from pathlib import Path


def test_remembered():
    mark = Path("/dev/shm/{marker}")
    seen = mark.exists()
    mark.write_text("seen")
    assert not seen
""",
    "tmp-deep": """\
import os
from pathlib import Path


def test_remembered():
    # Under a directory of the test's own: the old clean-up swept the top of /tmp only
    # of the uid's entries, and this directory is the uid's: a sticky world-writable one
    # made inside another user's would not be.
    mark = Path("/var/tmp/{marker}/seen")
    seen = mark.exists()
    mark.parent.mkdir(exist_ok=True)
    mark.write_text("seen")
    assert not seen
""",
}


@pytest.mark.parametrize("channel", sorted(REMEMBERS))
def test_nothing_of_one_run_reaches_the_next(case: Case, channel: str) -> None:
    """A target that passes only when an earlier run left it a mark. Unsealed:
    ``sysv-shm`` PASS 1.000 (the segment outlives every clean-up)."""
    case.base(task=ADDED_TASK)
    test = REMEMBERS[channel].replace("{key}", str(_key(case)))
    case.submit({"tests/test_remembered.py": test})
    graded = case.grade()
    try:
        graded.check("FAIL")
        assert "test_remembered" in graded.output
        assert not _segment(_key(case)), "the segment outlived the grade"
    finally:
        _remove_segment(_key(case))
        shutil.rmtree(f"/var/tmp/{case.marker}", ignore_errors=True)


def _segment(key: int) -> bool:
    listed = subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True)
    return f"0x{key:08x}" in listed.stdout


def _remove_segment(key: int) -> None:
    subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)


@pytest.fixture
def readable_secret() -> Iterator[Path]:
    """A file any user may read, outside every tree a grade makes: another user's
    checkout, the source repository of a batch, another grade's copy."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-elsewhere-"))
    holder.chmod(0o755)
    secret = holder / "solution.py"
    secret.write_text("ANSWER = 42\n")
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(holder)


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
    test = REMEMBERS["sysv-shm"].replace("{key}", str(_key(case)))
    case.submit({"tests/test_remembered.py": test})
    try:
        graded = case.grade()
    finally:
        _remove_segment(_key(case))
    assert graded.returncode == 0, graded.output
    assert graded.stdout.startswith("PASS 1.000") or "PASS 1.000" in graded.stdout
