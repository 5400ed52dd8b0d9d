"""RepoEnv as a Gymnasium environment (issue 23): registered, made by id with RepoEnv's
arguments, passing Gymnasium's own environment checker, stepped with dict actions on a
real repository to a graded submission."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym._demo import EXAMPLES, build_example_repo
from repogym.batch import Local
from repogym.env.actions import ReadFile, RunCommand, Submit, WriteFile
from repogym.env.episode import RepoEnv
from repogym.errors import EnvError
from repogym.task import Task, load_task

gymnasium = pytest.importorskip("gymnasium", reason="pip install -e '.[dev]' installs it")
repogym_gym = pytest.importorskip("repogym.env.gym")
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


def test_the_action_space_holds_the_documented_actions() -> None:
    # docs/env.md's actions, each with the keys its kind uses (issue 45: the Dict space
    # wanted all five keys, so a library checking actions against it refused them all).
    space = repogym_gym.ACTION_SPACE
    documented = [
        {"kind": "run", "command": "pytest -q"},
        {"kind": "read", "path": "src/a.py"},
        {"kind": "write", "path": "src/a.py", "content": "x = 1\n"},
        {"kind": "patch", "patch": "--- a/x\n+++ b/x\n"},
        {"kind": "submit"},
        {"kind": "submit", "command": "", "path": "", "content": "", "patch": ""},
        {"kind": "read", "path": "a", "content": "ignored"},
    ]
    assert [space.contains(a) for a in documented] == [True] * len(documented)
    refused = [
        {"kind": "write", "path": "src/a.py"},  # no content
        {"kind": "dance"},
        {"kind": "run", "command": "echo \u00e9"},  # outside the space's characters
        {"kind": "submit", "mood": "good"},
        ["submit"],
    ]
    assert [space.contains(a) for a in refused] == [False] * len(refused)
    space.seed(3)
    samples = [space.sample() for _ in range(40)]
    assert all(space.contains(a) for a in samples)
    assert {a["kind"] for a in samples} == set(repogym_gym.KINDS)


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


class _Recording:
    """The local executor, noting the jobs it is given."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def run(self, jobs: list[Any]) -> Iterator[dict[str, Any]]:
        self.ids += [job.id for job in jobs]
        yield from Local(2).run(jobs)


def _edits(number: int) -> list[Any]:
    """What the agent of env ``number`` does before it submits: the fix, nothing, the
    fix and an edit of a protected test (a gate that fails)."""
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    return [
        [WriteFile("src/slugify/core.py", fixed)],
        [],
        [WriteFile("src/slugify/core.py", fixed), WriteFile("tests/test_more.py", "x = 1\n")],
    ][number]


def test_a_vector_grades_its_submits_together_as_each_env_alone(repo: Path) -> None:
    task_file = repo.parent / "task.yml"
    task_file.write_text((EXAMPLES / "bugfix/repo/.repogym.yml").read_text())
    arguments: list[dict[str, Any]] = [
        {"repo": repo, "base": "main"},
        {"repo": repo, "base": "main", "task": load_task(task_file)},
        {"repo": repo, "base": "main", "task": task_file},
    ]
    alone = []
    for number, given in enumerate(arguments):
        with RepoEnv(**given) as env:
            env.reset()
            for action in _edits(number):
                env.step(action)
            alone.append(env.step(Submit()))
    executor = _Recording()
    envs = repogym_gym.VectorRepoEnv(arguments, executor=executor)  # type: ignore[arg-type]
    try:
        envs.reset()
        for round_ in range(2):
            steps = [
                _edits(n)[round_] if round_ < len(_edits(n)) else ReadFile("README.md")
                for n in range(3)
            ]
            envs.step(steps)
        observations, rewards, terminated, truncated, infos = envs.step([Submit()] * 3)
        assert sorted(executor.ids) == ["0", "1", "2"]  # one batch, every env a job
        assert list(rewards) == [step[1] for step in alone]
        assert list(terminated) == [True] * 3 and not truncated.any()
        for number, step in enumerate(alone):
            together = infos["result"][number]
            assert together.summary() == step[4]["result"].summary()
            assert observations["output"][number] == repogym_gym._text(step[0]["output"])
            scores = {c.name: (c.score, c.passed) for c in together.components}
            assert scores == {c.name: (c.score, c.passed) for c in step[4]["result"].components}
            assert together.patch == step[4]["result"].patch
        assert list(rewards)[:1] == [1.0] and rewards[1] < 1.0 and rewards[2] == 0.0
        # The next step starts new episodes (Gymnasium's next-step autoreset).
        observations, rewards, terminated, _, _ = envs.step([Submit()] * 3)
        assert list(rewards) == [0.0] * 3 and not terminated.any()
        assert observations["output"][0].startswith("A fresh checkout of main")
    finally:
        envs.close()


def test_a_vector_says_what_is_wrong_with_its_arguments(repo: Path) -> None:
    with pytest.raises(TypeError, match=r"^VectorRepoEnv takes a non-empty list of RepoEnv"):
        repogym_gym.VectorRepoEnv({"repo": repo, "base": "main"})  # type: ignore[arg-type]
    envs = repogym_gym.VectorRepoEnv([{"repo": repo, "base": "main"}], executor=Local(1))
    try:
        envs.reset()
        with pytest.raises(EnvError, match=r"one action per environment: 1, not 2$"):
            envs.step([Submit(), Submit()])
    finally:
        envs.close()


def test_a_grade_is_not_reused_after_a_step_that_raised(repo: Path) -> None:
    """Env 1's Submit was graded in a step that env 0's step broke off; its next
    episode's Submit, of a tree that cannot be graded, scores 0, not that grade."""
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    envs = repogym_gym.VectorRepoEnv([{"repo": repo, "base": "main"}] * 2, executor=Local(1))
    try:
        envs.reset()
        envs.step([ReadFile("README.md"), WriteFile("src/slugify/core.py", fixed)])
        envs.members[0].close()  # its next step raises
        with pytest.raises(EnvError, match="after close"):
            envs.step([ReadFile("README.md"), Submit()])
        envs.reset()
        envs.step([ReadFile("README.md"), RunCommand("rm -rf .git")])
        _, rewards, terminated, _, _ = envs.step([ReadFile("README.md"), Submit()])
        assert list(rewards) == [0.0, 0.0] and terminated[1]
    finally:
        envs.close()


def _alone_and_together(
    arguments: dict[str, Any], actions: list[Any], executor: Any = None
) -> tuple[float, float]:
    """The reward of ``actions`` then a Submit, by RepoEnv alone and in a vector."""
    with RepoEnv(**arguments) as env:
        env.reset()
        for action in actions:
            env.step(action)
        alone = env.step(Submit())[1]
    envs = repogym_gym.VectorRepoEnv([arguments], executor=executor or Local(1))
    try:
        envs.reset()
        for action in actions:
            observation, *_ = envs.step([action])
            assert observation["error"][0] == "", observation
        together = float(envs.step([Submit()])[1][0])
    finally:
        envs.close()
    return alone, together


def test_an_untracked_nested_repository_is_graded_as_the_env_alone_grades_it(repo: Path) -> None:
    """The fix lives in a nested repository the agent made: not the submission's, for
    the env alone and for the vector's job alike."""
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    actions = [
        WriteFile("src/slugify/helper/impl.py", fixed),
        WriteFile("src/slugify/helper/__init__.py", ""),
        RunCommand("cd src/slugify/helper && git init -q ."),
        WriteFile("src/slugify/core.py", "from slugify.helper.impl import slugify  # noqa\n"),
    ]
    alone, together = _alone_and_together({"repo": repo, "base": "main"}, actions)
    assert alone == together < 1.0


def test_a_task_built_in_code_goes_to_the_jobs_as_json(repo: Path) -> None:
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    built = Task.model_validate(load_task(repo / ".repogym.yml").model_dump())
    assert not built.raw
    executor = _Recording()
    arguments = {"repo": repo, "base": "main", "task": built}
    alone, together = _alone_and_together(
        arguments, [WriteFile("src/slugify/core.py", fixed)], executor
    )
    assert executor.ids == ["0"] and alone == together == 1.0
    unreadable = built.model_copy(update={"type": "nonsense"})
    with pytest.raises(EnvError) as raised:
        repogym_gym.VectorRepoEnv([{"repo": repo, "base": "main", "task": unreadable}])
    assert str(raised.value) == (
        "VectorRepoEnv: environment 0's task was built in code and does not read back from "
        "a task file: pass RepoEnv the task file's path"
    )


def test_a_submit_that_is_no_job_is_graded_by_its_env_alone(repo: Path) -> None:
    """A HEAD moved off base's history is graded against the merge base, by the env."""
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    executor = _Recording()
    moved = "git checkout -q --orphan other && git -c user.name=a -c user.email=a@b commit -qm x"
    actions = [WriteFile("src/slugify/core.py", fixed), RunCommand(moved)]
    alone, together = _alone_and_together({"repo": repo, "base": "main"}, actions, executor)
    assert executor.ids == [] and alone == together
