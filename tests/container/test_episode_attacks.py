"""RepoEnv's episode container under an agent that attacks it (issue 23), on a real Docker
engine: a file that changes while the tree is copied back, a /tmp filled past the memory
limit, a flood of files, a directory WriteFile makes, a command that closes its output, a
container that disappears, a kill that cannot run, and an engine that does not answer."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from repogym._demo import build_example_repo
from repogym.env.actions import ReadFile, RunCommand, WriteFile
from repogym.env.episode import RepoEnv
from repogym.errors import EngineError, EnvError
from repogym.run.container.command import UID
from repogym.run.container.episode import EpisodeRunner
from tests.container.episodes import ours, run, with_environment
from tests.support.envimage import python_image

LOST = "the episode's container is lost: "
ENDS = "; the episode ends, truncated: call env.reset() for a new one"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    made = build_example_repo("bugfix", tmp_path / "repo", solution=False)
    with_environment(made, f"environment:\n  image: {python_image()}\n")
    return made


def _limited(repo: Path, limits: str) -> Path:
    """``repo`` (its task in the test image) with the environment's ``limits`` lines."""
    with_environment(repo, f"  limits:\n{limits}")
    return repo


def test_a_file_that_changes_while_the_tree_is_copied_back_is_no_error(repo: Path) -> None:
    """A process rewrites a file over and over; each copy of the tree back (the
    container paused) is whole, and the host's tree never half there."""
    rewrite = "(while :; do head -c 20000000 /dev/zero > big; : > big; done) >/dev/null 2>&1 &"
    with RepoEnv(repo, base="main") as env:
        env.reset()
        run(env, rewrite)
        for _ in range(6):
            run(env, "true")
            observation, *_ = env.step(ReadFile("pytest.ini"))
            assert observation["error"] is None, observation
        files = {p.name for p in env.workspace.root.iterdir()}
        assert {".git", ".repogym.yml", "pytest.ini", "src", "tests", "big"} <= files


def test_tmp_and_the_tree_fill_up_before_the_memory_does(repo: Path) -> None:
    """Both are in memory: writing more than the memory limit into them says "no space
    left", and the container (its first process) lives on."""
    _limited(repo, "    memory: 256m\n    disk: 1g\n")
    with RepoEnv(repo, base="main") as env:
        env.reset()
        said = run(
            env, "head -c 300000000 /dev/zero > /tmp/fill; head -c 300000000 /dev/zero > fill"
        )
        assert said.count("No space left on device") == 2, said
        assert run(env, "rm fill /tmp/fill; echo alive") == "alive\n"


def test_writefile_makes_its_directories_the_commands_users(repo: Path) -> None:
    with RepoEnv(repo, base="main") as env:
        env.reset()
        observation, *_ = env.step(WriteFile("new/sub/note.txt", "hi\n"))
        assert observation["error"] is None
        said = run(env, "stat -c %u new new/sub new/sub/note.txt; echo more > new/sub/other")
        assert said == f"{UID}\n{UID}\n{UID}\n"


def test_a_flood_of_files_stops_at_the_entries_and_is_copied_back_only_when_read(
    repo: Path,
) -> None:
    with RepoEnv(repo, base="main") as env:
        assert isinstance(env.runner, EpisodeRunner)
        env.runner.entries = 2000
        env.reset()
        api = env.runner.client.api
        copies: list[str] = []
        fetch = api.get_archive
        api.get_archive = lambda *a, **k: copies.append(a[1]) or fetch(*a, **k)
        flood = "mkdir f && cd f && for i in $(seq 5000); do echo > $i || exit 3; done"
        observation, *_ = env.step(RunCommand(flood, timeout=120))
        assert observation["exit_code"] == 3 and "No space left" in observation["output"]
        run(env, "true")
        assert copies == []  # no copy back after a command
        env.step(ReadFile("pytest.ini"))
        assert copies == [str(env.workspace.root)]
        assert 1000 < len(list((env.workspace.root / "f").iterdir())) < 2000


def test_a_command_that_closes_its_output_and_goes_on_times_out(repo: Path) -> None:
    """Its exit code is waited for (the engine's exec_die event), never made up."""
    with RepoEnv(repo, base="main") as env:
        env.reset()
        observation, *_ = env.step(RunCommand("exec >&- 2>&-; sleep 600", timeout=1))
        assert observation["exit_code"] is None
        assert observation["error"] == "`exec >&- 2>&-; sleep 600` timed out after 1 s"
        observation, *_ = env.step(RunCommand("exec >&- 2>&-; exit 7", timeout=60))
        assert observation["exit_code"] == 7 and observation["error"] is None


def _lost(env: RepoEnv, observation: Any, truncated: bool) -> str:
    """The error of a step that lost the container: the episode ended, nothing left."""
    assert truncated and env._state == "ended"
    error = observation["error"]
    assert error.startswith(LOST) and error.endswith(ENDS) and "\n" not in error, error
    with pytest.raises(EnvError, match="after the episode ended"):
        env.step(RunCommand("true"))
    assert ours() == ([], [])
    return str(error)


def test_a_container_that_is_gone_ends_the_episode_as_truncated(repo: Path) -> None:
    with RepoEnv(repo, base="main") as env:
        env.reset()
        (container,), _ = ours()
        docker.from_env().api.kill(container["Id"])
        observation, reward, terminated, truncated, _ = env.step(RunCommand("true"))
        assert reward == 0.0 and not terminated
        assert "the command could not start in it" in _lost(env, observation, truncated)
        env.reset()
        assert run(env, "echo again") == "again\n"


def test_a_command_whose_kill_cannot_run_takes_the_container_with_it(repo: Path) -> None:
    """At the timeout the command's processes are killed from another exec; when that
    exec cannot be had, the container is killed through the engine."""
    with RepoEnv(repo, base="main") as env:
        env.reset()
        assert isinstance(env.runner, EpisodeRunner)
        api = env.runner.client.api
        create = api.exec_create

        def refuse_kills(container: str, cmd: list[str], **kwargs: Any) -> Any:
            if "kill -9" in cmd[-1]:
                raise docker.errors.APIError("no pid left to run the kill")
            return create(container, cmd, **kwargs)

        api.exec_create = refuse_kills
        observation, _, _, truncated, _ = env.step(RunCommand("sleep 600", timeout=1))
        assert "its processes could not be killed" in _lost(env, observation, truncated)


def test_an_engine_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no.sock", version="1.41")
    with warnings.catch_warnings():  # the SDK leaves the socket of a refused connection
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            EpisodeRunner(client, "any").start(tmp_path)
        except EngineError as error:
            said = str(error)
        client.close()
        del client
        gc.collect()
    assert said.startswith("the episode's container of any cannot start: ") and "\n" not in said
