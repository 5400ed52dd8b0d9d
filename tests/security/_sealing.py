"""The attacks of the sealed runs (issue 43), shared by the seal's tests
(tests/security/test_sealed.py) and Landlock's (tests/security/test_confined.py): each a
pull request graded end to end on a real repository."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

from repogym.sandbox import users as _sandbox
from tests.security._harness import BUGFIX_TASK, Case, Graded
from tests.support.batching import git, lines_of, run_batch

# The bugfix example's task with the pull request's own new tests as its targets (and
# the base's passing tests kept): an attack need not touch the base's tests.
_START, _END = BUGFIX_TASK.index("  fail_to_pass:"), BUGFIX_TASK.index("  timeout:")
ADDED_TASK = (
    BUGFIX_TASK[:_START]
    + "  fail_to_pass: added\n  pass_to_pass: baseline\n"
    + BUGFIX_TASK[_END:].split("constraints:")[0]
    + "constraints:\n  protected: [src/**]\n"
)


def key(case: Case) -> int:
    return zlib.crc32(case.marker.encode()) & 0x7FFFFFFF


# A test that passes the first time it runs and fails every time after: a "fix" with no
# code in it, if anything of its first run reaches its second (the head's tests run
# first, then the added ones against the base's code, where they must fail to count).
# keyctl(KEYCTL_SEARCH) and add_key(2) by their numbers (x86_64, aarch64).
_KEYCTL, _ADD_KEY = {"aarch64": (219, 217)}.get(os.uname().machine, (250, 248))
KEYS = """\
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def test_remembered():
    seen = libc.syscall(KEYCTL, 10, {keyring}, b"user", b"{{marker}}", 0) >= 0
    libc.syscall(ADD_KEY, b"user", b"{{marker}}", b"seen", 4, {keyring})
    assert not seen
""".replace("KEYCTL", str(_KEYCTL)).replace("ADD_KEY", str(_ADD_KEY))


def join_a_session_keyring(channel: str) -> None:
    """For ``session-keyring``: this process (and the grader it starts) in a session
    keyring of its own, as runc starts every process of a container (the Action's)."""
    if channel == "session-keyring":
        ctypes.CDLL(None, use_errno=True).syscall(_KEYCTL, 1, b"repogym-grader")


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
    # Found by the red team: keys outlive every command, in no namespace and under no path.
    "user-keyring": KEYS.format(keyring=-4),  # the uid's own: every command of the uid
    "session-keyring": KEYS.format(keyring=-3),  # the grader's, which each command held
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


def segment(key: int) -> bool:
    listed = subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True)
    return f"0x{key:08x}" in listed.stdout


def remove_segment(key: int) -> None:
    subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)


def segments_of_sandbox_users() -> list[str]:
    """The host's System V memory segments whose owner is a sandbox uid."""
    listed = subprocess.run(["ipcs", "-m", "-c"], capture_output=True, text=True, check=True)
    first, last = _sandbox.UID_BASE, _sandbox.UID_BASE + _sandbox.SLOTS
    return [
        line
        for line in listed.stdout.splitlines()
        if len(line.split()) > 2
        and line.split()[2].isdigit()
        and first <= int(line.split()[2]) < last
    ]


# A task with no runner configuration of its own: pytest looks for one in the copy's
# parent directories, up to the top of the temporary directory where the copies are.
CROSS_TASK = """\
version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: [tests/test_value.py::test_value]
  timeout: 60
"""
# Job A's code, imported by its tests: a runner configuration and a plugin that passes
# every test, where the other job's pytest looks, held there until that job's tests ran
# (they write a FIFO that the test shows to both through the seal).
PLANT = """\
import os

PLUGIN = '''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
'''
for top in ("/tmp", "/dev/shm", os.environ.get("REPOGYM_COPIES", "/tmp")):
    try:
        with open(os.path.join(top, "pytest.ini"), "w") as f:
            f.write("[pytest]\\naddopts = -p repogym_planted\\npythonpath = " + top + "\\n")
        with open(os.path.join(top, "repogym_planted.py"), "w") as f:
            f.write(PLUGIN)
    except OSError:
        pass
with open({release!r}) as f:
    f.read()  # until the other job's tests ran


def value():
    return 1
"""


def batch_with_a_planter(tmp_path: Path) -> None:
    """``repogym batch --jobs 2``: job A plants a runner configuration and a plugin in the
    shared temporary directories while job B, a broken change, runs its tests: B must
    fail, and the grades leave nothing in /dev/shm."""
    shown = Path(tempfile.mkdtemp(prefix="repogym-planter-"))
    shown.chmod(0o755)
    release = shown / "release"
    os.mkfifo(release)
    release.chmod(0o666)
    plant = PLANT.replace("{release!r}", repr(str(release)))
    broken = f"with open({str(release)!r}, 'w') as f:\n    f.write('ran')\n\n\n"
    broken += "def value():\n    return 3\n"
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / ".repogym.yml").write_text(CROSS_TASK)
    (repo / "value.py").write_text("def value():\n    return 1\n")
    (repo / "tests/test_value.py").write_text(
        "from value import value\n\n\ndef test_value():\n    assert value() == 2\n"
    )
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "base")
    for branch, code in (("planter", plant), ("broken", broken)):
        git(repo, "checkout", "--quiet", "-b", branch, "main")
        (repo / "value.py").write_text(code)
        git(repo, "commit", "--quiet", "-am", branch)
    jobs = tmp_path / "jobs.jsonl"
    # The second worker grades the base itself three times first, so that the planter's
    # tests have planted by the time the broken change's run (unsealed, they had).
    fillers = [
        json.dumps({"id": f"base-{n}", "repo": str(repo), "base": "main", "ref": "main"})
        for n in range(3)
    ]
    jobs.write_text(
        "\n".join(
            [
                json.dumps({"id": "planter", "repo": str(repo), "base": "main", "ref": "planter"}),
                *fillers,
                json.dumps({"id": "broken", "repo": str(repo), "base": "main", "ref": "broken"}),
            ]
        )
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    before = set(Path("/dev/shm").glob("repogym-*"))
    done = run_batch(jobs, "--output", out, "--jobs", "2", env={"REPOGYM_SEAL_SHOW": str(shown)})
    try:
        lines = lines_of(out)
        assert lines["broken"]["passed"] is False, done.stdout + done.stderr
        assert lines["planter"]["passed"] is False
        # Each grade removes what it made there when it ends, not when its worker's
        # process exits (a pool's worker never runs its exit handlers): 65 MB a job before.
        assert not set(Path("/dev/shm").glob("repogym-*")) - before
    finally:
        shutil.rmtree(shown)
        for top in ("/tmp", "/dev/shm"):
            for name in ("pytest.ini", "repogym_planted.py"):
                if Path(top, name).is_file() and "planted" in Path(top, name).read_text():
                    Path(top, name).unlink()


def remembering_attack(case: Case, channel: str) -> Graded:
    """The pull request whose added target passes only when an earlier run left a mark
    through ``channel`` (:data:`REMEMBERS`), graded; it must FAIL and leave no segment.
    Checked here, the mark removed after."""
    case.base(task=ADDED_TASK)
    join_a_session_keyring(channel)
    test = REMEMBERS[channel].replace("{key}", str(key(case)))
    case.submit({"tests/test_remembered.py": test})
    graded = case.grade()
    try:
        graded.check("FAIL")
        assert "test_remembered" in graded.output
        assert not segment(key(case)), "the segment outlived the grade"
    finally:
        remove_segment(key(case))
        shutil.rmtree(f"/var/tmp/{case.marker}", ignore_errors=True)
    return graded
