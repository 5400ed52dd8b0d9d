"""RepoEnv, an agent's episode on a task (docs/env.md): the environment
(:mod:`repogym.env.episode`), its actions and what it sees (:mod:`repogym.env.actions`),
the Gymnasium wrappers (:mod:`repogym.env.gym`, the ``gym`` extra), the batch jobs a
vector of them grades with (:mod:`repogym.env.vector`) and the submission rebuilt from
the agent's files (:mod:`repogym.env.submission`)."""

from __future__ import annotations

from repogym.env import actions as _actions
from repogym.env.actions import *  # noqa: F403 (the actions and what the agent sees)
from repogym.env.episode import RepoEnv

__all__ = [*_actions.__all__, "RepoEnv"]
