"""Runs RepoEnv episodes in a process of its own, as an agent-training loop would: the
grader's process, whose environment, virtual environment and files the agent's actions
must not reach. Run by the attack tests with the grader venv's python.

Usage: ``python _env_driver.py SPEC.json OUT.json``. SPEC holds ``repo``, ``base``,
``hidden`` (a directory outside the repository, or null), ``keep_workspace`` and
``episodes``: a list of lists of actions, each ``["run", command]``,
``["write", path, text]``, ``["read", path]`` or ``["submit"]``. OUT gets, per episode,
the ``[output, reward, error]`` of each step.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repogym.env.actions import ReadFile, RunCommand, Submit, WriteFile
from repogym.env.episode import RepoEnv
from repogym.env.submission import rebuilt
from repogym.graders import CompositeGrader, ConstraintGrader, TestGrader
from repogym.models import GradeResult


def main(spec_path: str, out_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    hidden = spec["hidden"]

    class HiddenTestsEnv(RepoEnv):
        # docs/env.md: hidden tests kept out of the repository, graded in _do_submit.
        def _do_submit(self) -> GradeResult:
            graders = [ConstraintGrader(), TestGrader(hidden=hidden)]
            with rebuilt(self.workspace, self.repo) as submission:
                return CompositeGrader(graders).grade_result(submission)

    kind = HiddenTestsEnv if hidden else RepoEnv
    episodes = []
    with kind(spec["repo"], base=spec["base"], keep_workspace=spec["keep_workspace"]) as env:
        for actions in spec["episodes"]:
            env.reset()
            steps = []
            for action in actions:
                observation, reward, *_ = env.step(_action(action))
                steps.append([observation["output"], reward, observation["error"]])
            episodes.append(steps)
    Path(out_path).write_text(json.dumps(episodes))


def _action(spec: list[str]) -> object:
    verb, *args = spec
    if verb == "run":
        return RunCommand(args[0], timeout=60)
    if verb == "write":
        return WriteFile(args[0], args[1])
    if verb == "read":
        return ReadFile(args[0])
    return Submit()


if __name__ == "__main__":
    main(*sys.argv[1:])
