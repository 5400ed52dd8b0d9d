"""What an agent leaves running in its episode container cannot reach a Submit's grade
(issue 23), on a real Docker engine with ``network: all``, where the episode's container
and the grade's test containers share the engine's bridge: the submitting episode's
container is removed before its grade, and in a VectorRepoEnv the other envs' containers
are paused while the step's grade runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym._demo import build_example_repo
from repogym.batch import Local
from repogym.env.actions import RunCommand, Submit, WriteFile
from repogym.env.episode import RepoEnv
from tests.container.episodes import FIXED, git, ours
from tests.support.envimage import python_image

repogym_gym = pytest.importorskip("repogym.env.gym")

# A test of the task's that listens on a port and fails if anyone connects to it.
QUIET = """

def test_quiet_network():
    import socket
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", 9999))
    listener.listen(50)
    listener.settimeout(3)  # a stranger on the bridge finds it well within this
    try:
        stranger, where = listener.accept()
    except socket.timeout:
        return
    raise AssertionError(f"a stranger connected from {where}")
"""
# What the agent leaves running: a connect to port 9999 of every address of its bridge's
# /24, over and over, all at once.
SCAN = r"""cat > /tmp/scan.py <<'P'
import select, socket
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
probe.connect(("10.255.255.255", 1))
net = probe.getsockname()[0].rsplit(".", 1)[0]
while True:
    tries = []
    for host in range(1, 255):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((f"{net}.{host}", 9999))
        tries.append(s)
    select.select([], tries, [], 0.2)
    for s in tries:
        s.close()
P
python /tmp/scan.py >/dev/null 2>&1 &
echo scanning"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = build_example_repo("bugfix", tmp_path / "repo", solution=False)

    git(made, "checkout", "--quiet", "main")
    tests = made / "tests/test_slugify.py"
    tests.write_text(tests.read_text() + QUIET)
    task = (
        (made / ".repogym.yml")
        .read_text()
        .replace(
            "  pass_to_pass:\n",
            "  pass_to_pass:\n    - tests/test_slugify.py::test_quiet_network\n",
        )
    )
    environment = f"environment:\n  image: {python_image()}\n  network: all\n"
    (made / ".repogym.yml").write_text(task + environment)
    git(made, "add", "--all")
    git(made, "commit", "--quiet", "-m", "a test that listens")
    return made


def test_what_the_agent_left_on_the_network_cannot_reach_its_grade(repo: Path) -> None:
    with RepoEnv(repo, base="main") as env:
        env.reset()
        env.step(WriteFile("src/slugify/core.py", FIXED))
        observation, *_ = env.step(RunCommand(SCAN, timeout=60))
        assert observation["output"] == "scanning\n"
        observation, reward, terminated, *_ = env.step(Submit())
        assert terminated and reward == 1.0, observation
    assert ours() == ([], [])


def test_in_a_vector_the_other_envs_are_paused_while_a_grade_runs(repo: Path) -> None:
    """Both agents scan; the first submits the fix (its container removed), the second
    only runs a command (its container paused while the first's tests run)."""
    arguments = [{"repo": repo, "base": "main"}] * 2
    envs = repogym_gym.VectorRepoEnv(arguments, executor=Local(1))
    try:
        envs.reset()
        envs.step([WriteFile("src/slugify/core.py", FIXED), RunCommand(SCAN, timeout=60)])
        envs.step([RunCommand(SCAN, timeout=60), RunCommand("true")])
        observations, rewards, *_ = envs.step([Submit(), RunCommand("echo thawed")])
        assert rewards[0] == 1.0, observations["output"][0]
        assert observations["output"][1] == "thawed\n"
    finally:
        envs.close()
