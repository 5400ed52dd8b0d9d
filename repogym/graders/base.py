"""The grader protocol: a ``name``, a ``role`` and ``grade(workspace)``; and the base the
built-in graders share."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from repogym.models import GradeComponent, Role

if TYPE_CHECKING:
    from repogym.run.protocol import CommandRunner
    from repogym.workspace import Workspace


class Grader:
    """Base of every grader, built-in or custom (spec: "Writing a grader").

    Subclasses set ``name`` and implement :meth:`grade`. ``role`` is None when the
    component decides (the built-in graders derive it from the task); setting it, on the
    class or as ``Grader(role="gate")``, makes the composite count the grader that way.
    """

    name: ClassVar[str] = ""
    role: Role | None = None

    def __init__(self, *, role: Role | str | None = None) -> None:
        if role is not None:
            self.role = Role(role)

    def default_role(self, workspace: Workspace) -> Role:
        """The role of this grader's component when ``role`` is not set (objective)."""
        return Role.OBJECTIVE

    def grade(self, workspace: Workspace) -> GradeComponent:
        raise NotImplementedError(f"{type(self).__name__} must implement grade(workspace)")

    def __repr__(self) -> str:
        role = f"role={self.role.value!r}" if self.role else ""
        return f"{type(self).__name__}({role})"


class BuiltinGrader(Grader):
    """Base of the built-in graders, which share one constructor: ``hidden``, a directory of
    hidden tests from elsewhere that replaces ``tests.hidden`` (the tests grader runs
    them, the constraints grader protects them), and ``runner``, what runs the task's
    commands (default: the workspace's). A grader that has no use for one ignores it. The
    role comes from the task's rule for the grader (``Task.role_of``)."""

    def __init__(
        self,
        *,
        role: Role | str | None = None,
        hidden: str | os.PathLike[str] | None = None,
        runner: CommandRunner | None = None,
    ) -> None:
        super().__init__(role=role)
        self.hidden = None if hidden is None else Path(hidden)
        self.runner = runner

    def default_role(self, workspace: Workspace) -> Role:
        return workspace.task.role_of(self.name)
