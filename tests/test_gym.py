"""RepoEnv as a Gymnasium environment (issue 23): registered, made by id with RepoEnv's
arguments, passing Gymnasium's own environment checker, stepped with dict actions on a
real repository to a graded submission."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym._demo import EXAMPLES, build_example_repo
from repogym.actions import ReadFile

gymnasium = pytest.importorskip("gymnasium", reason="pip install -e '.[dev]' installs it")
repogym_gym = pytest.importorskip("repogym.gym")
env_checker = pytest.importorskip("gymnasium.utils.env_checker")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_example_repo("bugfix", tmp_path / "bugfix", solution=False)


def test_made_by_id_it_passes_gymnasiums_checker(repo: Path) -> None:
    env = gymnasium.make("repogym/RepoEnv-v0", repo=repo, base="main")
    try:
        assert isinstance(env.unwrapped, repogym_gym.GymRepoEnv)
        env_checker.check_env(env.unwrapped)
    finally:
        env.close()


def test_dict_actions_solve_the_example(repo: Path) -> None:
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    env = gymnasium.make("repogym/RepoEnv-v0", repo=repo, base="main")
    try:
        observation, _ = env.reset(seed=0)
        assert observation in env.observation_space
        observation, *_ = env.step({"kind": "read", "path": "src/slugify/core.py"})
        assert "def slugify" in observation["output"]
        assert observation["exit_code"] == repogym_gym.NO_EXIT_CODE
        observation, reward, *_ = env.step({"kind": "dance"})
        assert reward == 0.0
        assert observation["error"] == "`kind` 'dance' is none of run, read, write, patch, submit"
        env.step({"kind": "write", "path": "src/slugify/core.py", "content": fixed})
        observation, *_ = env.step({"kind": "run", "command": "echo crème"})
        assert observation["output"] == "cr\\xe8me\n" and observation["exit_code"] == 0
        assert observation in env.observation_space
        env.step(ReadFile("src/slugify/core.py"))  # RepoEnv's own actions too
        observation, reward, terminated, truncated, info = env.step({"kind": "submit"})
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["result"].passed
    finally:
        env.close()
