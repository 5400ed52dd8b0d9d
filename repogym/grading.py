"""``grade()``: the one call that grades a work tree, and the :class:`Grading` it returns.

Every way in (``repogym grade``, ``validate``, ``demo``, RepoEnv's submit, the GitHub
Action) goes through :func:`grade`, and every report is built from the :class:`Grading`
alone (``repogym.report.build.report_dict``), so they cannot drift apart.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym import progress as _progress
from repogym.errors import UsageError, WorkspaceError
from repogym.graders.composite import CompositeGrader
from repogym.models import GradeResult
from repogym.progress import Progress
from repogym.run import choose as _choose
from repogym.run import preflight as _preflight
from repogym.task import Task, TaskSource, load_task
from repogym.tree import git as _git
from repogym.workspace import Workspace, files_under


@dataclass(frozen=True, slots=True, kw_only=True)
class Grading:
    """One grade and everything a report needs to say what was graded against what.

    ``base_ref`` is the base as given (a branch, tag or sha) and ``base`` its sha; the
    task was read at ``base`` (or from the file given instead, ``task.source``), and so
    were the tests, their runner configuration, the hidden tests and the custom graders
    (issue 19). The submission, the work tree at ``head``, was compared with
    ``merge_base``, the best common ancestor of ``base`` and ``head``: the diff the
    constraints judge and the perf baseline are the merge base's.
    """

    repo: Path
    base_ref: str
    base: str
    merge_base: str
    head: str
    task: Task
    hidden: Path | None
    result: GradeResult
    environment: dict[str, Any] | None = None  # the image the commands ran in (issue 20)

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def score(self) -> float:
        return self.result.score

    def summary(self) -> str:
        """The result's summary line, ``PASS 1.000 (constraints=1.00✓(gate), ...)``."""
        return self.result.summary()


def grade(
    repo: str | os.PathLike[str] = ".",
    *,
    base: str | None = None,
    task: TaskSource = None,
    hidden: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    outputs: Sequence[str | os.PathLike[str]] = (),
) -> Grading:
    """Grade the work tree of ``repo`` (committed or not, untracked files included)
    against the merge base of ``base`` and HEAD, with the rubric of ``base`` itself.

    ``base`` defaults to the remote's default branch, else ``main``, else ``master``.
    ``task`` is a task file or a loaded :class:`Task`; by default ``.repogym.yml`` as it
    is at ``base``, never the submission's copy. ``hidden`` is a directory of hidden
    tests from outside the repository; it replaces ``tests.hidden``. ``outputs`` are the
    files the caller will write this grade's reports to: an untracked file at one of
    them is left out of the submission, so that the report of one grade is not graded
    by the next (issue 19).

    Raises:
        RepogymError: the repository, a ref or the task cannot be used (the user's to
            fix), the sandbox user cannot reach a command's program (``SandboxError``),
            or a command's program is not on the PATH (``CommandNotFound``); grading
            problems of the submission itself are in the result instead.
    """
    with _progress.reporting(progress):
        return _grade(Path(repo), base=base, task=task, hidden=hidden, outputs=outputs)


def _grade(
    repo: Path,
    *,
    base: str | None,
    task: TaskSource,
    hidden: str | os.PathLike[str] | None,
    outputs: Sequence[str | os.PathLike[str]],
) -> Grading:
    top = _git.toplevel(repo.resolve())
    ref = base if base is not None else default_base(top)
    base_sha = _git.resolve_commit(top, ref)
    head = _git.resolve_commit(top, "HEAD")
    merge_base = _git.merge_base(top, ref, base_sha, head)
    loaded = load_task(task, repo=top, commit=base_sha, ref=ref)
    hidden_dir = _hidden_dir(hidden)
    # The diff is the merge base's; the rubric is the base tip's, where the task was
    # read: the author picks the fork point, not the tests (issue 19).
    workspace = Workspace(
        top,
        merge_base,
        loaded,
        base_ref=ref,
        rubric=base_sha,
        leave_out=_in_tree(top, outputs),
    )
    try:
        grader = CompositeGrader.for_workspace(workspace, hidden=hidden_dir)
        # Chosen once, and the environment's image had, before any grader runs: what
        # keeps it from being had is the user's to fix, not a failing grade (issue 20).
        workspace.runner = _choose.command_runner(loaded, top, base_sha)
        # Before anything runs: a sandbox user that cannot reach the task's programs
        # would fail the change, or run another interpreter (issue 20).
        _preflight.check(loaded, workspace.runner, workspace.snapshot().size)
        result = grader.grade_result(workspace)
        environment = None if workspace.runner.record is None else dict(workspace.runner.record)
    finally:
        if workspace.runner is not None:
            workspace.runner.close()
        workspace.close()
    return Grading(
        repo=top,
        base_ref=ref,
        base=base_sha,
        merge_base=merge_base,
        head=head,
        task=loaded,
        hidden=hidden_dir,
        result=result,
        environment=environment,
    )


def default_base(repo: Path) -> str:
    """The remote's default branch, else ``main``, else ``master``."""
    try:
        ref = _git.git(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], repo)
        return ref.decode().strip()
    except WorkspaceError:
        pass
    for name in ("main", "master"):
        try:
            _git.resolve_commit(repo, name)
            return name
        except WorkspaceError:
            continue
    raise UsageError(
        "no base branch: the repository has no origin/HEAD, main or master; pass --base REF"
    )


def _in_tree(top: Path, paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The ``paths`` that are in the work tree ``top``, relative to it (POSIX)."""
    found = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if top in real.parents:
            found.append(real.relative_to(top).as_posix())
    return found


def _hidden_dir(hidden: str | os.PathLike[str] | None) -> Path | None:
    """The hidden-tests directory given from outside, checked before grading starts."""
    if hidden is None:
        return None
    path = Path(hidden)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise UsageError(
            f"hidden tests {str(path)!r} {what}; pass the directory that holds them "
            "at the paths they take in the repository"
        )
    resolved = path.resolve()
    files_under(resolved)  # a link or a FIFO among them is refused before grading starts
    return resolved
