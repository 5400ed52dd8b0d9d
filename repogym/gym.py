"""RepoEnv as a Gymnasium environment (issue 23): the optional extra ``repogym[gym]``.

:class:`GymRepoEnv` is a :class:`repogym.env.RepoEnv` and a ``gymnasium.Env``, registered
as ``repogym/RepoEnv-v0`` when this module is imported::

    import gymnasium
    import repogym.gym  # registers it (or: gymnasium.make("repogym.gym:repogym/RepoEnv-v0", ...))

    env = gymnasium.make("repogym/RepoEnv-v0", repo="path/to/repo", base="main")

Its arguments are RepoEnv's. An action is a dict of :data:`ACTION_SPACE`: ``{"kind":
"run", "command": ...}``, ``{"kind": "read", "path": ...}``, ``{"kind": "write", "path":
..., "content": ...}``, ``{"kind": "patch", "patch": ...}`` or ``{"kind": "submit"}``
(keys a kind does not use are ignored; RepoEnv's action classes are accepted too). An
action that is none of these is an error observation, as a bad path is, never an
exception. Observations are dicts of :data:`OBSERVATION_SPACE`: ``output`` and ``error``
as text (``""`` for no error), ``exit_code`` an integer (:data:`NO_EXIT_CODE` when there
is none: a file action, a timeout). Text that a space's characters cannot hold (outside
printable ASCII and whitespace) is written as backslash escapes (``\\u00e9``), and text
past its space's length is cut, as a command's output is.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from repogym.actions import (
    ACTIONS,
    ApplyPatch,
    Observation,
    ReadFile,
    RunCommand,
    Submit,
    WriteFile,
)
from repogym.env import RepoEnv

ENV_ID = "repogym/RepoEnv-v0"
CHARSET = string.printable  # letters, digits, punctuation, whitespace
MAX_TEXT = 1_000_000  # characters of a file, a patch, an output
MAX_LINE = 100_000  # characters of a command, a path
NO_EXIT_CODE = -1000
KINDS = ("run", "read", "write", "patch", "submit")

ACTION_SPACE = spaces.Dict(
    {
        "kind": spaces.Text(max_length=16, charset=CHARSET),
        "command": spaces.Text(max_length=MAX_LINE, min_length=0, charset=CHARSET),
        "path": spaces.Text(max_length=MAX_LINE, min_length=0, charset=CHARSET),
        "content": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
        "patch": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
    }
)
OBSERVATION_SPACE = spaces.Dict(
    {
        "output": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
        "exit_code": spaces.Box(low=NO_EXIT_CODE, high=2**31 - 1, shape=(), dtype=np.int64),
        "error": spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET),
    }
)
_ALLOWED = frozenset(CHARSET)


class GymRepoEnv(RepoEnv, gymnasium.Env):  # type: ignore[misc]
    """RepoEnv with Gymnasium's spaces; see the module."""

    metadata = {"render_modes": []}  # noqa: RUF012  # gymnasium's class attribute
    action_space = ACTION_SPACE
    observation_space = OBSERVATION_SPACE

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        gymnasium.Env.reset(self, seed=seed)
        observation, info = RepoEnv.reset(self, seed=seed, options=options)
        return _shown(observation), info

    def step(  # type: ignore[override]
        self, action: Any
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        made = action if isinstance(action, ACTIONS) else _action(action)
        if isinstance(made, str):  # not an action: an error observation, nothing done
            self._check_can_step(Submit())
            self.steps += 1
            error = Observation(output="", exit_code=None, error=made)
            truncated = self.max_steps is not None and self.steps >= self.max_steps
            if truncated:
                self._end()
            return _shown(error), 0.0, False, truncated, {"step": self.steps}
        observation, reward, terminated, truncated, info = RepoEnv.step(self, made)
        return _shown(observation), reward, terminated, truncated, info


def _action(action: Any) -> Any:
    """The RepoEnv action a dict of the action space stands for, or why it is none."""
    if not isinstance(action, Mapping):
        return (
            f"an action is a dict with a `kind` ({', '.join(KINDS)}), not {type(action).__name__}"
        )
    kind = action.get("kind")
    needs = {"run": ("command",), "read": ("path",), "write": ("path", "content")}
    needs |= {"patch": ("patch",), "submit": ()}
    if kind not in needs:
        return f"`kind` {str(kind)[:40]!r} is none of {', '.join(KINDS)}"
    missing = [key for key in needs[kind] if not isinstance(action.get(key), str)]
    if missing:
        return f"a `{kind}` action needs `{missing[0]}` (text)"
    try:
        if kind == "run":
            return RunCommand(action["command"])
        if kind == "read":
            return ReadFile(action["path"])
        if kind == "write":
            return WriteFile(action["path"], action["content"])
        if kind == "patch":
            return ApplyPatch(action["patch"])
    except (TypeError, ValueError) as error:
        return f"a `{kind}` action: {error}"
    return Submit()


def _shown(observation: Observation) -> dict[str, Any]:
    code = observation["exit_code"]
    return {
        "output": _text(observation["output"]),
        "exit_code": np.array(NO_EXIT_CODE if code is None else code, dtype=np.int64),
        "error": _text(observation["error"] or ""),
    }


def _text(text: str) -> str:
    """``text`` in the spaces' characters and length."""
    if not _ALLOWED.issuperset(text):
        text = "".join(c if c in _ALLOWED else c.encode("unicode_escape").decode() for c in text)
    if len(text) > MAX_TEXT:  # the end is kept, as a command's output tail is
        kept = MAX_TEXT - 64
        text = f"[{len(text) - kept} characters cut]\n" + text[-kept:]
    return text


gymnasium.register(ENV_ID, entry_point="repogym.gym:GymRepoEnv")
