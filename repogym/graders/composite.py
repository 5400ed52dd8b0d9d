"""CompositeGrader: runs graders in order and folds their components into one grade.

Spec, "Objectives and gates"::

    score  = Σ wᵢ · sᵢ / Σ wᵢ     over objectives
    score  = 0                   if any gate failed
    passed = all(passedᵢ) and score ≥ grading.pass_threshold
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from repogym import progress
from repogym.errors import CommandNotFound, TaskError
from repogym.graders.base import Grader
from repogym.graders.builtin import builtin_grader
from repogym.graders.custom import load_custom_grader
from repogym.models import Finding, GradeComponent, GradeResult, Role

if TYPE_CHECKING:
    from repogym.task import Task
    from repogym.workspace import Workspace


class CompositeGrader:
    """Runs ``graders`` in the order given and combines their components.

    ``weights`` apply to objectives only, keyed by grader name (default 1). A grader that
    raises becomes a failed component with score 0; the others still run. Except
    :class:`~repogym.errors.CommandNotFound`, which stops the grade: no change could pass
    on a machine without the task's program.
    """

    def __init__(
        self,
        graders: Sequence[Grader],
        *,
        weights: Mapping[str, float] | None = None,
        pass_threshold: float = 0.0,
    ) -> None:
        names = [grader.name for grader in graders]
        for grader in graders:
            if not grader.name:
                raise ValueError(f"{type(grader).__name__} has no `name`; set one on the class")
            if names.count(grader.name) > 1:
                raise ValueError(f"two graders are called {grader.name!r}; names must be unique")
        self.weights = dict(weights or {})
        unknown = sorted(set(self.weights) - set(names))
        if unknown:
            raise ValueError(
                f"weights name no grader: {', '.join(unknown)} (graders: {', '.join(names)})"
            )
        for name, weight in self.weights.items():
            if not weight > 0:
                raise ValueError(f"weight of {name!r} ({weight!r}) must be positive")
        if not 0.0 <= pass_threshold <= 1.0:
            raise ValueError(f"pass_threshold {pass_threshold!r} must be in [0, 1]")
        self.graders = tuple(graders)
        self.pass_threshold = pass_threshold

    @classmethod
    def from_task(
        cls,
        task: Task,
        *,
        baseline: Path | None = None,
        submission: Path | None = None,
        hidden: str | os.PathLike[str] | None = None,
    ) -> CompositeGrader:
        """The task's own graders in the spec's order (``repogym.task.BUILTIN_GRADERS``),
        then the custom graders of ``grading.graders``, imported from the ``baseline``
        tree or installed packages, never from the ``submission`` tree. ``hidden``, a
        directory of hidden tests from elsewhere, replaces ``tests.hidden``."""
        graders: list[Grader] = [
            builtin_grader(name)(hidden=hidden) for name in task.builtin_roles()
        ]
        for spec in task.grading.graders:
            graders.append(load_custom_grader(spec, baseline, submission, task.source))
        try:
            return cls(
                graders, weights=task.grading.weights, pass_threshold=task.grading.pass_threshold
            )
        except ValueError as error:
            raise TaskError(f"{task.source}: `grading`: {error}") from None

    @classmethod
    def for_workspace(
        cls, workspace: Workspace, *, hidden: str | os.PathLike[str] | None = None
    ) -> CompositeGrader:
        """:meth:`from_task` for ``workspace.task``, with custom graders from the tree of
        the commit the task was read at (the base tip, not the merge base: issue 19) and
        ``hidden`` tests from elsewhere, if given."""
        baseline = workspace.rubric_tree if workspace.task.grading.graders else None
        return cls.from_task(
            workspace.task, baseline=baseline, submission=workspace.root, hidden=hidden
        )

    def grade_result(self, workspace: Workspace) -> GradeResult:
        """Grade ``workspace`` with every grader and fold the components."""
        snapshot = workspace.snapshot()
        try:
            components = [self._grade_one(grader, workspace) for grader in self.graders]
        finally:
            snapshot.store.close_reader()
        objectives = [c for c in components if c.role is Role.OBJECTIVE]
        gates_ok = all(c.passed for c in components if c.role is Role.GATE)
        total_weight = sum(c.weight for c in objectives)
        if gates_ok and total_weight > 0:
            score = sum(c.weight * c.score for c in objectives) / total_weight
        else:
            score = 0.0
        # Without an objective nothing could earn credit, so nothing can pass either.
        passed = (
            bool(objectives) and all(c.passed for c in components) and score >= self.pass_threshold
        )
        return GradeResult(
            score=score,
            passed=passed,
            components=tuple(components),
            patch=workspace.patch(),
            files_changed=workspace.changed_files(),
        )

    def _grade_one(self, grader: Grader, workspace: Workspace) -> GradeComponent:
        told = progress.current()
        if told is not None:
            told.grader_started(grader.name)
        start = time.monotonic()
        component = self._finish(grader, _run(grader, workspace))
        if told is not None:
            told.grader_finished(component, time.monotonic() - start)
        return component

    def _finish(self, grader: Grader, component: GradeComponent) -> GradeComponent:
        role = grader.role or component.role
        weight = self.weights.get(grader.name, 1.0) if role is Role.OBJECTIVE else 0.0
        return replace(component, name=grader.name, role=role, weight=weight)


def _run(grader: Grader, workspace: Workspace) -> GradeComponent:
    try:
        component = grader.grade(workspace)
        if not isinstance(component, GradeComponent):
            raise TypeError(f"grade() returned {type(component).__name__}, not a GradeComponent")
        return component
    except CommandNotFound:
        # The machine lacks a program the task names: no grade at all, not a failed
        # component that blames the change (issue 20).
        raise
    except Exception as error:  # a broken grader must not take the others down (issue 2)
        frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
        message = f"grader {grader.name!r} raised {type(error).__name__}{where}: {error}"
        return GradeComponent(
            name=grader.name,
            score=0.0,
            passed=False,
            role=grader.role or grader.default_role(workspace),
            messages=[message],
            details={"error": f"{type(error).__name__}: {error}"},
            # No place: the frame is in the grader's code, not in the submission.
            findings=[Finding(title="error", message=message)],
        )
