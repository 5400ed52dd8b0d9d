"""RepoEnv's episode container (issue 23), on a real Docker engine: one container per
episode, which the agent's commands share (a file in /tmp, a process in the background)
and the next episode does not; confined as a grade's commands are; gone with its volume
at reset() and close(); and out of reach of the grade of a Submit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import pytest

from repogym._demo import build_example_repo
from repogym.env.actions import RunCommand, Submit, WriteFile
from repogym.env.episode import RepoEnv
from repogym.errors import EngineError
from repogym.run.container.command import UID
from repogym.run.container.engine import LABEL
from repogym.run.container.episode import HOLDER, EpisodeRunner
from tests.container.episodes import FIXED, ours, run, with_environment
from tests.support.envimage import python_image

# Every process's command line in the container, one a line.
PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"


@pytest.fixture(scope="module")
def image() -> str:
    return python_image()


@pytest.fixture
def repo(tmp_path: Path, image: str) -> Path:
    made = build_example_repo("bugfix", tmp_path / "repo", solution=False)
    with_environment(made, f"environment:\n  image: {image}\n")
    return made


def test_an_episode_keeps_its_container_and_the_next_one_starts_clean(repo: Path) -> None:
    with RepoEnv(repo, base="main") as env:
        env.reset()
        (first,), volumes = ours()
        assert len(volumes) == 1
        _confined(first)
        started = "id -u; echo kept > /tmp/note; echo made > made.txt; sleep 600 >/dev/null 2>&1 &"
        assert run(env, started) == f"{UID}\n"
        assert "kept\n" in run(env, "cat /tmp/note")
        assert "sleep 600 \n" in run(env, PROCESSES).splitlines(keepends=True)
        # A command that times out is killed with what it started, the others' live on.
        observation, *_ = env.step(RunCommand("sleep 900 & sleep 800", timeout=1))
        assert observation["error"] == "`sleep 900 & sleep 800` timed out after 1 s"
        running = run(env, PROCESSES)
        assert "sleep 600" in running and "sleep 8" not in running and "sleep 9" not in running

        env.reset()
        (second,), (volume,) = ours()
        assert second["Id"] != first["Id"] and volume not in volumes
        assert run(env, "cat /tmp/note 2>/dev/null || echo none") == "none\n"
        assert "sleep 600" not in run(env, PROCESSES)
        assert "made.txt" not in run(env, "ls")  # a fresh tree too
    assert ours() == ([], [])


def _confined(container: dict[str, Any]) -> None:
    """The episode's container is confined as a grade's command's (repogym.run.container)."""
    host, config = container["HostConfig"], container["Config"]
    assert config["User"] == f"{HOLDER}:{HOLDER}"
    assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"] and host["NetworkMode"] == "none"
    assert host["Memory"] > 0 and host["PidsLimit"] > 0 and host["NanoCpus"] > 0
    assert "/tmp" in host["Tmpfs"] and host["Init"]
    assert {f"{LABEL}.owner", f"{LABEL}.expires"} <= set(config["Labels"])


def test_what_the_agent_leaves_running_cannot_touch_the_grade(repo: Path) -> None:
    """A process the agent leaves behind kills every process it may, over and over: the
    grade's tests, in containers of their own, pass all the same."""
    with RepoEnv(repo, base="main") as env:
        env.reset()
        env.step(WriteFile("src/slugify/core.py", FIXED))
        env.step(RunCommand("(while :; do kill -9 -1; done) >/dev/null 2>&1 &", timeout=120))
        (episode,), _ = ours()
        processes = docker.from_env().api.top(episode["Id"])["Processes"]
        assert any("kill -9 -1" in " ".join(p) for p in processes), processes  # still at it
        observation, reward, terminated, _, _ = env.step(Submit())
        assert terminated and reward == 1.0, observation
        assert ours() == ([], [])  # the episode ended: its container went with it


def test_a_container_the_engine_cannot_start_is_one_line(tmp_path: Path, image: str) -> None:
    client = docker.from_env()
    runner = EpisodeRunner(client, "sha256:" + "0" * 64)
    with pytest.raises(EngineError) as raised:
        runner.start(tmp_path)
    said = str(raised.value)
    assert said.startswith("the episode's container of sha256:000") and "\n" not in said
    assert said.endswith(
        "check that the engine runs (docker info) and has room for environment.limits"
    )
    assert ours() == ([], [])
