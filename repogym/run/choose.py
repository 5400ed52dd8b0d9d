"""The one place a task's commands are given a place to run (issue 46): on the host as a
sandbox user (:class:`repogym.run.host.Runner`), or in containers of the task's image
(:class:`repogym.run.container.runner.ContainerRunner`, or for an agent's episode
:class:`repogym.run.container.episode.EpisodeRunner`). ``grade()`` and RepoEnv choose
here once and hand the runner down; nothing else asks which kind it has."""

from __future__ import annotations

from pathlib import Path

from repogym.run.host import Runner
from repogym.run.image import prepare
from repogym.run.protocol import AgentRunner, CommandRunner
from repogym.sandbox.cgroup import Caps
from repogym.task import Task

__all__ = ["agent_runner", "command_runner", "host_runner"]


def host_runner(task: Task) -> Runner:
    """A runner of ``task``'s commands on the host: its variables, and its ``limits`` as
    a cgroup of each command's own where the grader can make one (issue 43)."""
    limits = task.command_limits
    caps = Caps(memory=limits.memory, pids=limits.pids, cpus=limits.cpus)
    return Runner(pass_env=task.pass_env, set_env=task.env, limits=caps)


def command_runner(task: Task, repo: Path, rubric: str) -> CommandRunner:
    """What runs a grade's commands: containers of the task's environment when it names
    one (its image had now, from ``repo`` at ``rubric``, so that what keeps it from being
    had is said before any grader runs, issue 20), else the host."""
    if task.environment is None:
        return host_runner(task)
    return prepare(task, repo, rubric).runner(task)


def agent_runner(task: Task, repo: Path, rubric: str) -> AgentRunner:
    """What runs an agent's commands in RepoEnv: one container of the task's environment
    per episode when it names one, else the host."""
    if task.environment is None:
        return host_runner(task)
    return prepare(task, repo, rubric).episode_runner(task)
