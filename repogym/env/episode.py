"""RepoEnv: an agent edits a fresh checkout of a task's base commit, then submits it.

Gymnasium's API shape without depending on it: ``reset() -> (observation, info)`` and
``step(action) -> (observation, reward, terminated, truncated, info)``. Bad paths and
patches that do not apply are error observations; stepping out of order raises
:class:`EnvError`. The whole contract is in docs/env.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from repogym.env.actions import (
    ACTIONS,
    Action,
    ApplyPatch,
    Observation,
    ReadFile,
    RunCommand,
    Step,
    Submit,
    WriteFile,
)
from repogym.env.submission import grade_rebuilt
from repogym.errors import EnvError, EpisodeLost, WorkspaceError
from repogym.models import CommandResult, GradeComponent, GradeResult
from repogym.run import choose as _choose
from repogym.run.protocol import AgentRunner
from repogym.sandbox import scratch
from repogym.shown import counted
from repogym.task import TaskSource, load_task
from repogym.tree import git as _git
from repogym.tree.atomic import write_atomic
from repogym.tree.clones import own_history_at
from repogym.tree.links import LinkInTree, open_regular
from repogym.workspace import Workspace

_APPLY_TIMEOUT = 60.0
_Outcome = tuple[Observation, float, dict[str, Any]]  # a step before the episode bookkeeping
_State = Literal["new", "running", "ended", "closed"]
_NOT_RUNNING = {
    "new": "before reset(): call env.reset() to start an episode",
    "ended": (
        "after the episode ended (it was submitted or truncated): call env.reset() for a new "
        "one, or pass keep_workspace=True to keep the workspace"
    ),
    "closed": "after close(): call env.reset() to start a new episode",
}


class RepoEnv:
    """An episode is a fresh workspace of ``base``, edited by actions, ended by
    :class:`Submit` (graded) or by reaching ``max_steps`` (truncated, not graded).

    ``task`` is a task file path or a :class:`Task`; by default ``.repogym.yml`` as it is
    at ``base``, read once here. With ``keep_workspace`` the workspace stays on disk after
    the episode (and after ``reset()`` and ``close()``); removing it is then yours to do.
    """

    def __init__(
        self,
        repo: str | Path,
        *,
        base: str,
        task: TaskSource = None,
        keep_workspace: bool = False,
        max_steps: int | None = None,
    ) -> None:
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps {max_steps!r} must be at least 1, or None for no limit")
        self.repo = _git.toplevel(Path(repo).resolve())
        self.base = _git.resolve_commit(self.repo, base)
        self.base_ref = base
        self.task = load_task(task, repo=self.repo, commit=self.base, ref=base)
        # In the task's environment when it names one: the image had here, once, so that
        # what keeps it from being had is said before the first step (issue 20); each
        # episode's container made at reset() and removed at the next and at close()
        # (issue 23).
        self.runner: AgentRunner = _choose.agent_runner(self.task, self.repo, self.base)
        self._close_runner = weakref.finalize(self, self.runner.close)
        self.keep_workspace = keep_workspace
        self.max_steps = max_steps
        self.steps = 0
        self._state: _State = "new"
        self._root: Path | None = None
        self._left_out = ""  # what the last copy of the tree back from its container left out
        self._cleanup: Callable[[], object] | None = None

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Discard the previous workspace (unless kept) and check out a fresh one.

        ``seed`` and ``options`` are accepted for Gymnasium's sake and ignored: an
        episode is deterministic.
        """
        self._discard()
        self._root = _clone_at(self.repo, self.base)
        if not self.keep_workspace:
            holder = str(self._root.parent)
            self._cleanup = weakref.finalize(self, shutil.rmtree, holder, True)
        try:
            self.runner.start(self._root)
        except BaseException:
            self._discard()
            raise
        self._state = "running"
        self.steps = 0
        output = f"A fresh checkout of {self.base_ref} ({self.base[:12]}), {self.task.type} task."
        return _observation(output), {"workspace": self._root, "base": self.base}

    def step(self, action: Action) -> Step:
        """Carry out ``action``; see docs/env.md for what each one returns."""
        self._check_can_step(action)
        try:
            observation, reward, info = self._dispatch(action)
            lost = False
        except EpisodeLost as error:  # its container stopped: the episode cannot go on
            observation, reward, info, lost = _observation(error=str(error)), 0.0, {}, True
        if self._left_out:  # the copy of the tree back from the container was cut short
            said = [observation["error"] or "", self._left_out.strip()]
            observation["error"], self._left_out = "; ".join(filter(None, said)), ""
        self.steps += 1
        terminated = isinstance(action, Submit) and not lost
        truncated = lost or (
            not terminated and self.max_steps is not None and self.steps >= self.max_steps
        )
        info["step"] = self.steps
        if terminated or truncated:
            self._end()
        return observation, reward, terminated, truncated, info

    def _end(self) -> None:
        """The episode ended: its container goes (no command can run any more), its
        workspace too unless it is kept."""
        self._state = "ended"
        self.runner.stop()
        if not self.keep_workspace:
            self._discard()

    def close(self) -> None:
        """Remove the workspace (unless kept) and the episode's container. Calling it
        again does nothing."""
        self._discard()
        self._close_runner()
        self._state = "closed"

    def __enter__(self) -> RepoEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def workspace(self) -> Workspace:
        """The current workspace against ``base``, a new :class:`Workspace` on each
        access (so its diff is never stale). :class:`EnvError` when there is none."""
        if self._root is None:
            raise EnvError(f"RepoEnv.workspace: none {_NOT_RUNNING[self._state]}")
        # The commands' tree is copied back from their container, if they ran in one,
        # when it is read (issue 23); EpisodeLost when it cannot be.
        self._left_out = self.runner.sync() or self._left_out
        return Workspace(self._root, self.base, self.task, base_ref=self.base_ref, shared=False)

    def _do_submit(self) -> GradeResult:
        """Grade ``self.workspace``, rebuilt in a clone of ``repo`` (never through the
        workspace's git, which the agent writes: repogym.env.submission); the result's score
        is the reward. Override it to grade differently (spec: "Writing a grader"). It
        runs before the workspace is removed. A :class:`WorkspaceError` it raises scores
        0; anything else reaches the caller of ``step()``, with the episode still running.
        """
        with contextlib.closing(self.workspace) as workspace:  # its store, now, not at exit
            return grade_rebuilt(workspace, self.repo, self.task)

    def _dispatch(self, action: Action) -> _Outcome:
        if isinstance(action, Submit):
            return self._submit()
        if isinstance(action, RunCommand):
            return self._run_command(action)
        if isinstance(action, ApplyPatch):
            return self._apply_patch(action)
        return self._file_action(action)

    def _run_command(self, action: RunCommand) -> _Outcome:
        run = self._run_agent(action.command, action.timeout)
        error = (
            f"`{action.command}` timed out after {action.timeout:g} s" if run.timed_out else None
        )
        observation = _observation(_output(run), exit_code=run.exit_code, error=error)
        return observation, 0.0, {"command": run}

    def _run_agent(
        self, command: str, timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """Run one of the agent's commands in its tree, which is its own for the run and
        read-only to every other command afterwards: the tests a Submit runs cannot plant
        anything in it for the next episode (issue 9)."""
        root = self._root
        if root is None:
            raise EnvError(f"RepoEnv.step() {_NOT_RUNNING[self._state]}")
        return self.runner.run_agent(command, root, timeout=timeout, env=env)

    def _file_action(self, action: ReadFile | WriteFile) -> _Outcome:
        """Read or write a file of the agent's tree, from the grader's process (root,
        where the commands run as a sandbox user). Its earlier commands may have left a
        symlink or a FIFO anywhere in the tree: the path is resolved in the tree (a link
        out of it refused), and the file then read or written through directories opened
        one at a time without following a link, a new file renamed into place, so that
        nothing outside the tree is read or written and no open blocks (issue 19)."""
        verb = "read" if isinstance(action, ReadFile) else "write"
        root = self.workspace.root
        try:
            target = self._target(action.path)
            if isinstance(action, ReadFile):
                if target.is_dir():
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
                relative = target.relative_to(root).as_posix()
                with os.fdopen(open_regular(root, relative), "rb") as file:
                    text = file.read().decode("utf-8", "replace")
                return _observation(text), 0.0, {}
            data = action.content.encode() if isinstance(action.content, str) else action.content
            write_atomic(target, data, tree=root)
            self.runner.add(root, [target.relative_to(root).as_posix()])
            return _observation(f"wrote {counted(len(data), 'byte')} to {action.path}"), 0.0, {}
        except WorkspaceError as error:
            return _observation(error=str(error)), 0.0, {}
        except LinkInTree as error:
            # A file on the way (`a/b` with `a` a file), or what changed since the path was
            # resolved (no command of the agent's runs meanwhile).
            why = error.problem if verb == "read" else "a symlink or a file is on its way"
            return _observation(error=f"{action.path}: cannot {verb}: {why}"), 0.0, {}
        except OSError as error:
            return _observation(error=f"{action.path}: cannot {verb}: {error.strerror}"), 0.0, {}

    def _apply_patch(self, action: ApplyPatch) -> _Outcome:
        """The patch goes in with the tree, into its ``.git`` (not part of the submission),
        and is applied and removed by one command of the agent's, through the runner: the
        workspace's git config is the agent's to edit, and git itself refuses paths that
        leave the tree, go through a symlink or into ``.git`` (in a container, the image
        needs git)."""
        root = self.workspace.root
        name = ".git/repogym-action.patch"
        try:
            write_atomic(root / name, action.patch.encode(), tree=root)
        except (LinkInTree, OSError) as failed:
            return _observation(error=f"git apply: cannot write the patch: {failed}"), 0.0, {}
        self.runner.add(root, [name])
        command = f"git apply --verbose -- {name}; status=$?; rm -f {name}; exit $status"
        run = self._run_agent(command, _APPLY_TIMEOUT, {"LC_ALL": "C"})
        error = None if run.ok else f"git apply: {_git_errors(run)}"
        return _observation(_output(run), exit_code=run.exit_code, error=error), 0.0, {}

    def _submit(self) -> _Outcome:
        # The tree as the last command left it, then the episode stopped before the grade
        # (its container removed): nothing the agent left running takes a step while the
        # tests run, on the network `network: all` gives both (issue 23).
        _ = self.workspace
        self.runner.stop()
        try:
            result = self._do_submit()
        except WorkspaceError as error:
            # The agent can break the tree beyond grading (say, `rm -rf .git`): that scores 0.
            component = GradeComponent(
                name="submission", score=0.0, passed=False, messages=[f"cannot grade: {error}"]
            )
            result = GradeResult(score=0.0, passed=False, components=(component,))
        if not isinstance(result, GradeResult):
            raise TypeError(f"_do_submit() returned {type(result).__name__}, not a GradeResult")
        return _observation(result.summary()), result.score, {"result": result}

    def _check_can_step(self, action: object) -> None:
        if self._state != "running":
            raise EnvError(f"RepoEnv.step() {_NOT_RUNNING[self._state]}")
        if not isinstance(action, ACTIONS):
            names = ", ".join(kind.__name__ for kind in ACTIONS)
            raise EnvError(f"RepoEnv.step() takes {names}; got {type(action).__name__}")

    def _target(self, path: str) -> Path:
        """Where ``path`` really is; WorkspaceError if that is outside the tree or in .git."""
        target = self.workspace.resolve(path)
        git_dir = self.workspace.root / ".git"
        if target == git_dir or git_dir in target.parents:
            raise WorkspaceError(f"{path}: inside .git, which is not part of the submission")
        try:
            mode = target.lstat().st_mode
        except OSError:
            return target  # missing: written new, or an error when read
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            # A FIFO a command made would block the open for good (issue 19).
            raise WorkspaceError(
                f"{path}: not a regular file (a FIFO or a socket); remove it or use another path"
            )
        return target

    def _discard(self) -> None:
        self.runner.stop()  # nothing of the episode left in the engine (issue 23)
        if self._cleanup is not None:
            self._cleanup()  # removes the tree, once
            self._cleanup = None
        self._root = None


def _clone_at(repo: Path, sha: str) -> Path:
    """A work tree checked out (detached) at ``sha`` in a new temporary directory, with
    ``sha``'s history and nothing more of ``repo`` (:func:`own_history_at`). The tree is
    a directory of its own inside that one, which stays the grader's: the
    sandbox user, whose the tree is while the agent's commands run, loses what it owns
    at the top of /tmp when a run ends."""
    holder = scratch.holder("repogym-env-", commands=True).resolve()
    root = holder / "repo"
    try:
        if root == repo or repo in root.parents:
            raise EnvError(
                f"{root}: the temporary directory is inside {repo}; "
                "set TMPDIR to a directory outside the repository"
            )
        own_history_at(repo, sha, root)
    except BaseException:
        shutil.rmtree(holder, ignore_errors=True)
        raise
    return root


def _observation(
    output: str = "", *, exit_code: int | None = None, error: str | None = None
) -> Observation:
    return {"output": output, "exit_code": exit_code, "error": error}


def _output(run: CommandResult) -> str:
    """stdout then stderr, each saying how much of its start the runner cut."""
    parts = []
    for text, cut in ((run.stdout, run.stdout_cut), (run.stderr, run.stderr_cut)):
        parts.append(f"[{counted(cut, 'byte')} cut]\n{text}" if cut else text)
    return "".join(parts)


def _git_errors(run: CommandResult) -> str:
    """git's ``error:`` lines on one line, e.g. ``patch failed: f.py:3; f.py: patch does
    not apply``."""
    if run.timed_out:
        return run.describe()
    lines = run.stderr.strip().splitlines()
    errors = [
        line.removeprefix("error: ")
        for line in lines
        if line.startswith("error: ") and not line.endswith("while searching for:")
    ]
    return "; ".join(errors or lines[-1:] or [run.describe()])
