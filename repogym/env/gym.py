"""RepoEnv as a Gymnasium environment (issue 23): the optional extra ``repogym[gym]``.

:class:`GymRepoEnv` is a :class:`repogym.env.episode.RepoEnv` and a ``gymnasium.Env``, registered
as ``repogym/RepoEnv-v0`` when this module is imported::

    import gymnasium
    import repogym.env.gym  # registers it (or: "repogym.env.gym:repogym/RepoEnv-v0")

    env = gymnasium.make("repogym/RepoEnv-v0", repo="path/to/repo", base="main")

Its arguments are RepoEnv's. An action is a dict of :data:`ACTION_SPACE`: ``{"kind":
"run", "command": ...}``, ``{"kind": "read", "path": ...}``, ``{"kind": "write", "path":
..., "content": ...}``, ``{"kind": "patch", "patch": ...}`` or ``{"kind": "submit"}``
(keys a kind does not use are ignored; RepoEnv's action classes are accepted too); the
space holds exactly these, and each of its samples is one (:class:`ActionSpace`). An
action that is none of these is an error observation, as a bad path is, never an
exception. Observations are dicts of :data:`OBSERVATION_SPACE`: ``output`` and ``error``
as text (``""`` for no error), ``exit_code`` an integer (:data:`NO_EXIT_CODE` when there
is none: a file action, a timeout). Text that a space's characters cannot hold (outside
printable ASCII and whitespace) is written as backslash escapes (``\\u00e9``), and text
past its space's length is cut, as a command's output is.

:class:`VectorRepoEnv` is a ``gymnasium.vector.VectorEnv`` of many RepoEnvs whose
``step(actions)`` grades the Submits of a step together, as a batch's jobs, through
:func:`repogym.batch.grade_many` and its executors (issue 23).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import shutil
import string
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv
from gymnasium.vector.utils import concatenate

from repogym.batch import Executor, grade_many
from repogym.env.actions import (
    ACTIONS,
    ApplyPatch,
    Observation,
    ReadFile,
    RunCommand,
    Submit,
    WriteFile,
)
from repogym.env.episode import RepoEnv
from repogym.env.vector import job_of, result_of, task_file
from repogym.errors import EnvError, EpisodeLost
from repogym.models import GradeResult
from repogym.run.container.engine import engine_errors

ENV_ID = "repogym/RepoEnv-v0"
CHARSET = string.printable  # letters, digits, punctuation, whitespace
MAX_TEXT = 1_000_000  # characters of a file, a patch, an output
MAX_LINE = 100_000  # characters of a command, a path
NO_EXIT_CODE = -1000
KINDS = ("run", "read", "write", "patch", "submit")

# The keys each kind of action uses.
NEEDS: dict[str, tuple[str, ...]] = {
    "run": ("command",),
    "read": ("path",),
    "write": ("path", "content"),
    "patch": ("patch",),
    "submit": (),
}


class ActionSpace(spaces.Dict):
    """The five actions as one ``Dict`` of ``Text`` spaces, holding what the docs call an
    action (issue 45): a dict with a ``kind`` of :data:`KINDS` and the keys that kind
    uses; keys it does not use may be left out (``{"kind": "submit"}``) or hold any text,
    which is ignored (the full form of five keys, which :meth:`sample` makes with ``""``
    and a vector environment's batch holds). ``sample()`` draws a kind, then its keys:
    every sample is an action."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        text = functools.partial(spaces.Text, min_length=0, charset=CHARSET)
        super().__init__(
            {
                "kind": spaces.Text(max_length=16, charset=CHARSET),
                "command": text(max_length=MAX_LINE),
                "path": text(max_length=MAX_LINE),
                "content": text(max_length=MAX_TEXT),
                "patch": text(max_length=MAX_TEXT),
            },
            seed=seed,
        )

    def contains(self, x: Any) -> bool:
        if not isinstance(x, Mapping) or x.get("kind") not in NEEDS:
            return False
        if not set(x) <= set(self.spaces):
            return False
        needed = NEEDS[x["kind"]]
        return all(k in x for k in needed) and all(self.spaces[k].contains(v) for k, v in x.items())

    def sample(
        self, mask: dict[str, Any] | None = None, probability: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if mask is not None or probability is not None:
            drawn = super().sample(mask=mask, probability=probability)
            if self.contains(drawn):
                return drawn
            raise ValueError(f"the mask drew no action: `kind` must be one of {KINDS}")
        kind = KINDS[int(self.np_random.integers(len(KINDS)))]
        action = dict.fromkeys(self.spaces, "")
        action["kind"] = kind
        for key in NEEDS[kind]:
            action[key] = self.spaces[key].sample()
        return action


ACTION_SPACE = ActionSpace()
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
    needs = NEEDS
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


class _Member(GymRepoEnv):
    """A RepoEnv of a :class:`VectorRepoEnv`: its Submit takes the grade the vector had
    made of it in this step, when it had one; else it grades alone, the other members'
    episode containers paused meanwhile."""

    _graded: GradeResult | None = None
    _others_paused: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self._graded = None  # a grade is of one step of one episode (issue 23)
        return super().reset(seed=seed, options=options)

    def _do_submit(self) -> GradeResult:
        graded, self._graded = self._graded, None
        if graded is not None:
            return graded
        with self._others_paused():
            return super()._do_submit()


class VectorRepoEnv(SyncVectorEnv):
    """``len(envs)`` RepoEnvs, one for each mapping of RepoEnv's arguments in ``envs``,
    stepped together; the Submits of a step are graded together by ``executor``
    (:class:`repogym.batch.Local`, the default, or :class:`repogym.batch.Ray`). See
    docs/env.md, "Many environments"."""

    def __init__(self, envs: Sequence[Mapping[str, Any]], *, executor: Executor | None = None):
        if isinstance(envs, (str, bytes, Mapping)) or not isinstance(envs, Sequence) or not envs:
            raise TypeError(
                "VectorRepoEnv takes a non-empty list of RepoEnv arguments, one dict per "
                f"environment (`[{{'repo': ..., 'base': 'main'}}, ...]`), not {type(envs).__name__}"
            )
        self.executor = executor
        self._tasks = Path(tempfile.mkdtemp(prefix="repogym-vector-"))
        self._remove_tasks = weakref.finalize(self, shutil.rmtree, str(self._tasks), True)
        made: list[_Member] = []
        try:
            for number, arguments in enumerate(envs):
                if not isinstance(arguments, Mapping):
                    raise TypeError(
                        f"VectorRepoEnv: environment {number} is {type(arguments).__name__}, "
                        "not a dict of RepoEnv's arguments"
                    )
                made.append(_Member(**arguments))
            self._task_files = [
                task_file(n, env, self._tasks / f"task-{n}.yml") for n, env in enumerate(made)
            ]
            for env in made:
                env._others_paused = functools.partial(self._paused, made, env)
            super().__init__([functools.partial(_made, env) for env in made])
            self.members = made
        except BaseException:
            for env in made:
                env.close()
            self._remove_tasks()
            raise

    def step(
        self, actions: Any
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Each env's action (a list of them, or the action space's batch: a dict of
        tuples), its Submit graded with the others'; an env that ended last step is
        reset instead (Gymnasium's next-step autoreset)."""
        wanted = self._per_env(actions)
        try:
            self._grade_submits(wanted)
            infos = self._step_each(wanted)
        finally:  # a grade is of this step only, even when an env's step raised (issue 23)
            for env in self.members:
                env._graded = None
        self._observations = concatenate(
            self.single_observation_space, self._env_obs, self._observations
        )
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            copy.deepcopy(self._observations),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def _step_each(self, wanted: list[Any]) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        for i, (action, env) in enumerate(zip(wanted, self.envs, strict=True)):
            if self._autoreset_envs[i]:
                self._env_obs[i], info = env.reset()
                self._rewards[i], self._terminations[i], self._truncations[i] = 0.0, False, False
            else:
                step = env.step(action)
                self._env_obs[i], self._rewards[i] = step[0], step[1]
                self._terminations[i], self._truncations[i], info = step[2], step[3], step[4]
            infos = self._add_info(infos, info, i)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        super().close_extras(**kwargs)
        self._remove_tasks()

    def _per_env(self, actions: Any) -> list[Any]:
        if isinstance(actions, Mapping):  # the batched action space's dict of tuples
            return [{k: v[i] for k, v in actions.items()} for i in range(self.num_envs)]
        if isinstance(actions, (str, bytes)) or not isinstance(actions, Sequence):
            raise EnvError(
                f"VectorRepoEnv.step() takes one action per environment ({self.num_envs}), "
                f"as a list, not {type(actions).__name__}"
            )
        if len(actions) != self.num_envs:
            raise EnvError(
                f"VectorRepoEnv.step() takes one action per environment: {self.num_envs}, "
                f"not {len(actions)}"
            )
        return list(actions)

    def _grade_submits(self, actions: list[Any]) -> None:
        """The grades of this step's Submits, as jobs of one batch, handed to their envs.
        A job that could not be graded (a broken tree, an engine that refused) is left
        to its env, which grades it alone and says why as RepoEnv does. The submitting
        envs' episode containers are removed before the grade (their episodes end), the
        others' paused while it runs (issue 23)."""
        jobs = {}
        for i, (action, env) in enumerate(zip(actions, self.members, strict=True)):
            if self._autoreset_envs[i] or not _submits(action) or env._state != "running":
                continue
            try:
                job = job_of(env, self._task_files[i], self._tasks / f"tree-{i}")
            except EpisodeLost:  # its container is gone: its own step says so
                continue
            if job is not None:
                jobs[i] = {"id": str(i), **job}
                env.runner.stop()
        if not jobs:
            return
        try:
            with self._paused(self.members):
                for line in grade_many(jobs.values(), executor=self.executor):
                    if line.get("error") is None:
                        env = self.members[int(line["id"])]
                        env._graded = result_of(line, env.workspace.patch())
        finally:
            for i in jobs:
                shutil.rmtree(self._tasks / f"tree-{i}", ignore_errors=True)

    @staticmethod
    @contextlib.contextmanager
    def _paused(members: Sequence[RepoEnv], but: RepoEnv | None = None) -> Iterator[None]:
        """Every episode container of ``members`` (but ``but``'s) paused and off the
        bridge while the block runs, back after it: nothing an agent left running there
        takes a step or reaches the network while a grade's tests run on it (issue 23).
        One that cannot be paused is gone: its env's next step says so."""
        with contextlib.ExitStack() as stack:
            for env in members:
                if env is not but:
                    try:
                        stack.enter_context(env.runner.isolated())
                    except Exception as error:  # the engine's only (it is not asked else)
                        if not isinstance(error, engine_errors()):
                            raise
            yield


def _made(env: _Member) -> _Member:
    return env


def _submits(action: Any) -> bool:
    return isinstance(action, Submit) or (
        isinstance(action, Mapping) and action.get("kind") == "submit"
    )


gymnasium.register(ENV_ID, entry_point="repogym.env.gym:GymRepoEnv")
