"""What the environment and episode tests share (issues 20, 23): a task moved into an
environment, the reference fix, this process's containers and volumes on the engine, and
an agent's command that must succeed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import docker

from repogym._demo import EXAMPLES
from repogym.env.actions import RunCommand
from repogym.env.episode import RepoEnv
from repogym.run.container.engine import LABEL
from tests.support.repo import IDENTITY

FIXED = (EXAMPLES / "bugfix" / "solution" / "src" / "slugify" / "core.py").read_text()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **IDENTITY}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def with_environment(repo: Path, environment: str) -> None:
    """Put ``environment`` (YAML lines) into the task on main, the submission on top."""
    git(repo, "checkout", "--quiet", "main")
    task = repo / ".repogym.yml"
    task.write_text(task.read_text() + environment)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "environment")
    git(repo, "checkout", "--quiet", "submission")
    git(repo, "rebase", "--quiet", "main")


def ours() -> tuple[list[dict[str, Any]], list[str]]:
    """This process's containers (inspected) and volumes on the engine, by their labels."""
    api = docker.from_env().api
    me = f"/{os.getpid()}/"
    listed = api.containers(all=True, filters={"label": f"{LABEL}.owner"})
    found = [api.inspect_container(c["Id"]) for c in listed if me in c["Labels"][f"{LABEL}.owner"]]
    volumes = api.volumes(filters={"label": f"{LABEL}.owner"}).get("Volumes") or []
    return found, [v["Name"] for v in volumes if me in v["Labels"][f"{LABEL}.owner"]]


def run(env: RepoEnv, command: str) -> str:
    """The output of the agent's ``command``, which must succeed."""
    observation, *_ = env.step(RunCommand(command, timeout=120))
    assert observation["error"] is None, observation
    return observation["output"]
