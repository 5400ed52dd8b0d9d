"""Pull requests that attack the container of a task's ``environment:`` (issue 20), end
to end: ``repogym grade`` as a subprocess grades a real repository whose submission's
``probe.py`` (tests/container/envprobes.py) runs in the container as the rubric's test
runs, tries to get out, and says what it saw (tests/container/envtask.py). Each case
asserts the grade (the probe got nothing, so its test passed, unless the attack is one
the grade must fail), what the probe saw, and the state after: no container or volume
of the grader left in the engine, no process of the attack left on the machine.

The engine may be shared with other graders (a sweep of theirs removes what a killed
grader of ours left): what a case looks for is named by its grader's pid (the owner
label of repogym.run.container.runner) or by a marker of its own.
"""

from __future__ import annotations

import errno
import hashlib
import secrets
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym.run.container.engine import docker_module
from tests.container import envprobes as probes
from tests.container.envtask import (
    HOST,
    LABEL,
    Peak,
    commands,
    disk_use,
    grade,
    marked,
    owned,
    python_image,
    start,
    task_repo,
    wait_for_test_command,
)
from tests.support import docker as cli

KEEPER = "/bin/sh -c 'read -r _'"


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A client of the engine; skips without one (fails where REPOGYM_REQUIRE_DOCKER=1)."""
    cli.engine_or_skip()
    client = docker_module().from_env(timeout=600)
    yield client
    client.close()


@pytest.fixture(scope="session")
def image(engine: Any) -> str:
    """The environment's image, built once per session."""
    return python_image(engine)


@pytest.fixture
def marker() -> str:
    return f"repogym-attack-{secrets.token_hex(6)}"


def assert_nothing_left(engine: Any, pid: int, marker: str) -> None:
    assert owned(engine, pid) == []
    assert marked(marker) == []


@pytest.mark.parametrize(
    ("network", "in_setup", "in_tests"),
    [("none", False, False), ("setup", True, False), ("all", True, True)],
)
def test_network(
    image: str,
    engine: Any,
    tmp_path: Path,
    marker: str,
    network: str,
    in_setup: bool,
    in_tests: bool,
) -> None:
    """Only ``lo`` without network, and the host's 127.0.0.1 is not the container's:
    a listener there gets no connection. With network, an interface besides ``lo``
    (no traffic is sent to it), in ``setup`` only for ``network: setup``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    repo = task_repo(
        tmp_path / marker,
        probes.NETWORK.replace("PORT", str(port)).replace("MARKER", marker),
        environment=f"{{image: {image}, network: {network}}}",
        setup="ls /sys/class/net > .setup-net",
    )
    graded = grade(repo, tmp_path / "report.json")
    with listener, pytest.raises(BlockingIOError):
        listener.accept()  # nothing came, not even a connection closed at once
    assert graded.passed, graded.output
    seen = graded.seen
    assert seen["errno"] == errno.ECONNREFUSED  # the container's own lo: nobody listens
    assert "lo" in seen["interfaces"] and "lo" in seen["setup_interfaces"]
    assert (set(seen["setup_interfaces"]) != {"lo"}) is in_setup
    assert (set(seen["interfaces"]) != {"lo"}) is in_tests
    assert graded.report["environment"]["network"] == network
    assert "names no digest" in graded.report["environment"]["warnings"][0]
    assert_nothing_left(engine, graded.pid, marker)


def test_no_engine_socket_and_no_secret_of_the_grader(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """No socket of the engine inside, nor ``DOCKER_HOST``, though the grader has it;
    no variable of the grader's (a canary token) in any process's environment."""
    canary = f"canary{secrets.token_hex(16)}"
    repo = task_repo(tmp_path / marker, probes.SECRETS)
    env = {
        "GITHUB_TOKEN": canary,
        "ACTIONS_RUNTIME_TOKEN": canary,
        "DOCKER_HOST": "unix:///var/run/docker.sock",  # the grader's own way to the engine
    }
    graded = grade(repo, tmp_path / "report.json", env)
    assert graded.passed, graded.output
    # The runner's, the image's, the engine's (HOSTNAME), Python's (PEP 538) and pytest's.
    given = {"HOME", "TMPDIR", "USER", "LOGNAME", "PATH", "HOSTNAME", "LC_CTYPE"}
    assert set(graded.seen["variables"]) <= given | {"PWD", "PYTEST_CURRENT_TEST"}
    assert canary not in (tmp_path / "report.json").read_text() + graded.stdout + graded.stderr
    assert_nothing_left(engine, graded.pid, marker)


def test_no_host_file_and_no_host_process(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """Canaries in the host's /root and /tmp are neither readable nor anywhere in the
    container; its host name is its own; its /proc holds its own processes only (the
    grader's command line names the repository, whose directory is the marker)."""
    canaries = [
        Path("/root") / f"repogym-canary-{marker}",
        Path("/tmp") / f"repogym-canary-{marker}",
    ]
    for canary in canaries:
        canary.write_text(marker)
    try:
        probe = probes.HOST_FILES.replace("CANARIES", repr([str(c) for c in canaries]))
        repo = task_repo(tmp_path / marker, probe.replace("MARKER", marker))
        graded = grade(repo, tmp_path / "report.json")
    finally:
        for canary in canaries:
            canary.unlink()
    assert graded.passed, graded.output
    seen = graded.seen
    assert seen["hostname"] and seen["hostname"] != socket.gethostname()
    assert seen["hostname"] != Path("/etc/hostname").read_text().strip()
    # The test command (sh, or pytest when sh execs it) is pid 1, and little else runs.
    assert "pytest" in seen["processes"]["1"], seen["processes"]
    assert len(seen["processes"]) <= 3, seen["processes"]
    assert_nothing_left(engine, graded.pid, marker)


def test_a_fork_bomb_is_held_by_the_pids_limit(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """``limits.pids: 64``: the probe's forks are refused (EAGAIN) before 64, the bomb
    after them never has more than 64 processes on the machine, the test command is
    killed at its timeout, and nothing of it is left."""
    repo = task_repo(
        tmp_path / marker,
        probes.FORK_BOMB.replace("MARKER", marker),
        environment=f"{{image: {image}, limits: {{pids: 64}}}}",
        timeout=8,
    )
    with Peak(lambda: len(marked(marker))) as bomb:
        graded = grade(repo, tmp_path / "report.json")
    assert graded.seconds < 8 + 15
    assert graded.tests["details"]["command"]["timed_out"] is True
    assert not graded.passed
    assert graded.seen["refused"] == errno.EAGAIN
    assert 0 < graded.seen["forked"] < 64
    assert 0 < bomb.most <= 64
    assert_nothing_left(engine, graded.pid, marker)


def test_a_memory_bomb_is_killed_at_the_memory_limit(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    repo = task_repo(
        tmp_path / marker,
        probes.MEMORY_BOMB,
        environment=f"{{image: {image}, limits: {{memory: 64m}}}}",
    )
    graded = grade(repo, tmp_path / "report.json")
    assert not graded.passed
    assert graded.seconds < 30
    said = "killed: the command went over its memory limit (64 MiB, limits.memory)"
    assert said in graded.output
    assert any(said in m for m in graded.tests["messages"]), graded.tests["messages"]
    assert_nothing_left(engine, graded.pid, marker)


def test_a_process_left_running_goes_with_the_container(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """Daemons the test command leaves die with it: the grade does not wait for them
    (nor time out), and no container, volume or process of it is left."""
    repo = task_repo(tmp_path / marker, probes.DAEMONS.replace("MARKER", marker))
    graded = grade(repo, tmp_path / "report.json")
    assert graded.passed, graded.output
    assert graded.seconds < 15
    assert_nothing_left(engine, graded.pid, marker)


def test_the_base_dockerfile_is_built_and_then_reused(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """The pull request's copy of ``.repogym/Dockerfile`` is never built: the image has
    the base's variable and file. The second grade reuses the image the first built."""
    dockerfile = probes.DOCKERFILE.replace("IMAGE", image)
    repo = task_repo(
        tmp_path / marker,
        probes.BUILT_FROM.replace("MARKER", marker),
        environment="{dockerfile: .repogym/Dockerfile}",
        base={".repogym/Dockerfile": dockerfile.replace("SIDE", f"base-{marker}")},
        pull_request={".repogym/Dockerfile": dockerfile.replace("SIDE", f"pr-{marker}")},
    )
    graded = [grade(repo, tmp_path / f"report-{n}.json") for n in (1, 2)]
    built = {g.report["environment"]["id"] for g in graded}
    try:
        assert [g.report["environment"]["how"] for g in graded] == ["built", "reused"]
        assert all(g.passed for g in graded), graded[0].output
        assert graded[0].seen["env"] == f"base-{marker}"
        assert len(built) == 1
    finally:
        for found in built:
            engine.images.remove(found, force=True)
    for one in graded:
        assert_nothing_left(engine, one.pid, marker)


def test_a_killed_grader_leaves_nothing_after_the_next_grade(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """SIGKILL while the test command runs leaves its container running; the next
    grade's sweep removes it and the volumes (and so the attack's process)."""
    repo = task_repo(tmp_path / marker, probes.SLEEPER.replace("MARKER", marker), timeout=60)
    process = start(repo, tmp_path / "killed.json")
    try:
        wait_for_test_command(engine, process.pid, marker)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate()
    left = commands(engine, process.pid)
    assert any("pytest" in x and x.endswith(" running") for x in left), left
    # The keeper, left too, runs a binary of the image's: as confined as a command,
    # with no network of the host's (issue 44).
    mine = engine.api.containers(all=True, filters={"label": f"{LABEL}.owner"})
    [keeper] = [
        c
        for c in mine
        if c["Command"] == KEEPER
        and c["Labels"][f"{LABEL}.owner"].startswith(f"{HOST}/{process.pid}/")
    ]
    host = engine.api.inspect_container(keeper["Id"])["HostConfig"]
    assert (host["NetworkMode"], host["ReadonlyRootfs"], host["CapDrop"]) == ("none", True, ["ALL"])
    graded = grade(task_repo(tmp_path / "next", probes.NOTHING), tmp_path / "report.json")
    assert graded.passed, graded.output
    assert owned(engine, process.pid) == []
    assert_nothing_left(engine, graded.pid, marker)


@pytest.mark.parametrize("spoil", list(probes.SPOILS))
def test_the_write_back_of_the_report_is_not_followed(
    image: str, engine: Any, tmp_path: Path, marker: str, spoil: str
) -> None:
    """What the test command leaves in the reports directory is copied to the host
    without following a link, odd names included, and no more than ``limits.disk``:
    the grade fails with a line that says why, or passes on the report pytest wrote."""
    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    repo = task_repo(
        tmp_path / marker,
        probes.WRITE_BACK.replace("SPOIL", probes.SPOILS[spoil]),
        environment=f"{{image: {image}, limits: {{disk: 64m}}}}",
    )
    copies = tmp_path / "copies"  # where the grader makes its copies, to be watched
    copies.mkdir()
    with Peak(lambda: disk_use(copies)) as use:
        graded = grade(repo, tmp_path / "report.json", {"REPOGYM_COPIES": str(copies)})
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() == passwd
    assert use.most < 64 << 20
    first = graded.tests["messages"][0]
    if spoil.startswith("symlink"):
        assert not graded.passed
        assert "\n" not in first
        assert first.endswith(
            "junit.xml is a symbolic link, not a regular file: the test command must write "
            "its report there as a file"
        )
    elif spoil.endswith("sparse file"):
        said = "its files hold more than 64 MiB (environment.limits.disk), the rest was left out"
        assert said in graded.output
    elif spoil.endswith("empty files"):
        # Empty files take no room: unpacking 200,000 took 49 s before entries were capped.
        assert "back to the grader stopped after 10000 entries, the rest was left out" in (
            graded.output
        )
    else:
        assert graded.passed, graded.tests["messages"]
    assert_nothing_left(engine, graded.pid, marker)


def test_a_read_only_root_and_no_new_privileges(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    """Writing the image's root fails with EROFS (even where every user may write),
    the command has no capability, and a setuid program (``su`` asking for root's
    password) runs with the command's uid, 10001, effective and saved too."""
    repo = task_repo(tmp_path / marker, probes.PRIVILEGES.replace("MARKER", marker))
    graded = grade(repo, tmp_path / "report.json")
    assert graded.passed, graded.output
    seen = graded.seen
    assert seen["uid"] == 10001
    assert set(seen["errno"].values()) == {errno.EROFS}, seen["errno"]
    assert seen["NoNewPrivs"] == "1"
    assert {seen["CapEff"], seen["CapPrm"], seen["CapBnd"]} == {"0" * 16}
    assert seen["setuid"]["su"] == ["10001"] * 4  # the image has su; sudo, if it has it
    assert_nothing_left(engine, graded.pid, marker)


# Issue 44 in an environment's container: the test fails (the probe says the bug is still
# there) unless something of the pull request's makes pytest pass it.
STILL_BROKEN = 'def attack():\n    return {"worked": ["the bug is still there"]}\n'
FLIP = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
# Imported before the tests: a report in which the test passed, and pytest ended before
# it writes its own.
FORGE = (
    "import os, sys\n"
    "for a in sys.argv:\n"
    "    if a.startswith('--junitxml='):\n"
    "        open(a.split('=', 1)[1], 'w').write('<testsuites><testsuite name=\"pytest\" "
    'tests="1"><testcase classname="tests.test_probe" name="test_probe" '
    'file="tests/test_probe.py"/></testsuite></testsuites>\')\n'
    "        os._exit(0)\n"
)
REWRITE = (
    "import pathlib\n"
    "pathlib.Path('tests/conftest.py').write_text(open('evil.py').read())\n"
    "pathlib.Path('tests/test_probe.py').write_text('def test_probe():\\n    pass\\n')\n"
)
RUNNER_ATTACKS = {
    # What a list of file names missed: a plugin through an upper-case DIST-INFO, and a
    # pygments that pytest imports at start-up, both from the top of the tree.
    "start-up": {
        "evil.py": FLIP,
        "evil-1.0.DIST-INFO/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        "evil-1.0.DIST-INFO/entry_points.txt": "[pytest11]\nevil = evil\n",
        "pygments/__init__.py": FORGE,
        "org/__init__.py": "",
        "org/python/__init__.py": "",
        "org/python/core.py": FORGE,
    },
    # setup, the pull request's code, adds a conftest.py and hollows the test out.
    "setup": {"evil.py": FLIP, "prepare.py": REWRITE},
    # The task's `env: PYTHONPATH: src`: a package there that `copy` tries as pytest starts.
    "pythonpath": {
        "src/org/__init__.py": "",
        "src/org/python/__init__.py": "",
        "src/org/python/core.py": FORGE,
    },
}


@pytest.mark.parametrize("attack", sorted(RUNNER_ATTACKS))
def test_the_runner_is_the_bases_in_the_container(
    image: str, engine: Any, tmp_path: Path, marker: str, attack: str
) -> None:
    repo = task_repo(
        tmp_path / marker,
        STILL_BROKEN,
        environment=f"{{image: {image}}}"
        + ("\nenv: {PYTHONPATH: src}" if attack == "pythonpath" else ""),
        setup="python3 prepare.py" if attack == "setup" else None,
        base={"prepare.py": "print('ready')\n"},
        pull_request=RUNNER_ATTACKS[attack],
    )
    graded = grade(repo, tmp_path / "report.json")
    assert not graded.passed, graded.output
    said = " ".join(graded.tests["messages"])
    if attack == "setup":  # copied in again over what setup made, the conftest refused
        assert "tests/conftest.py: pytest would read this conftest.py" in said, said
    else:
        assert "the bug is still there" in said, said
    assert_nothing_left(engine, graded.pid, marker)


# Tries to write into the directory the grader starts pytest from (its sitecustomize, the
# guard, the guard's manifest), found from the guard this process imported.
START_WRITER = """
import errno
import os
import sys


def attack():
    guard = sys.modules["repogym_pytest_guard"]
    where = os.path.dirname(guard.__file__)
    worked, refused = [], {}
    for name in ("sitecustomize.py", "repogym_pytest_guard.py", "manifest.json", "new.py"):
        try:
            with open(os.path.join(where, name), "a") as out:
                out.write("# planted")
            worked.append(name)
        except OSError as error:
            refused[name] = errno.errorcode.get(error.errno, str(error.errno))
    return {"worked": worked, "refused": refused}
"""


def test_the_start_up_directory_is_read_only_in_the_container(
    image: str, engine: Any, tmp_path: Path, marker: str
) -> None:
    # On the host a build step appended to the grader's sitecustomize when it was in the
    # report's (writable) directory; in a container it is mounted read-only.
    repo = task_repo(tmp_path / marker, START_WRITER, environment=f"{{image: {image}}}")
    graded = grade(repo, tmp_path / "report.json")
    assert graded.passed, graded.output
    refused = graded.seen["refused"]
    assert set(refused) == {
        "sitecustomize.py",
        "repogym_pytest_guard.py",
        "manifest.json",
        "new.py",
    }
    assert set(refused.values()) <= {"EROFS", "EACCES"}, refused
    assert_nothing_left(engine, graded.pid, marker)
