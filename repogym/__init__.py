"""repogym: grade a code change against a task.

The public API is what ``__all__`` lists; every other name, and every module whose name
starts with an underscore, may change without notice.
"""

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

# `python -m repogym grade` in a pull request's checkout puts that checkout first on
# sys.path, and every module the grader imports after this one would be looked for there
# first: an `org/python/core.py` of the pull request's runs when `copy` tries it (issue
# 44). Out, before anything else is imported; the package itself is found already.
if sys.argv[:1] == ["-m"] and sys.path and sys.path[0] in (os.getcwd(), ""):  # noqa: PTH109
    del sys.path[0]


# The API is imported when first used (PEP 562), so that `import repogym.junit` alone,
# say, does not load the task schema and its dependencies.
_EXPORTS = {
    "ApplyPatch": "repogym.env.actions",
    "CompositeGrader": "repogym.graders",
    "ConstraintGrader": "repogym.graders",
    "EnvError": "repogym.errors",
    "Finding": "repogym.models",
    "GradeComponent": "repogym.models",
    "GradeResult": "repogym.models",
    "Grader": "repogym.graders",
    "Grading": "repogym.grading",
    "JUnitError": "repogym.errors",
    "PerfGrader": "repogym.graders",
    "QualityGrader": "repogym.graders",
    "ReadFile": "repogym.env.actions",
    "RepoEnv": "repogym.env.episode",
    "RepogymError": "repogym.errors",
    "Role": "repogym.models",
    "RunCommand": "repogym.env.actions",
    "Submit": "repogym.env.actions",
    "Task": "repogym.task",
    "TaskFile": "repogym.task",
    "TaskError": "repogym.errors",
    "TestGrader": "repogym.graders",
    "UnknownRef": "repogym.errors",
    "UsageError": "repogym.errors",
    "Workspace": "repogym.workspace",
    "WorkspaceError": "repogym.errors",
    "WriteFile": "repogym.env.actions",
    "grade": "repogym.grading",
    "grade_many": "repogym.batch",
    "grade_many_async": "repogym.batch",
    "load_task": "repogym.task",
    "parse_task": "repogym.task",
}

if TYPE_CHECKING:
    __version__: str
    from repogym.batch import grade_many, grade_many_async
    from repogym.env.actions import ApplyPatch, ReadFile, RunCommand, Submit, WriteFile
    from repogym.env.episode import RepoEnv
    from repogym.errors import (
        EnvError,
        JUnitError,
        RepogymError,
        TaskError,
        UnknownRef,
        UsageError,
        WorkspaceError,
    )
    from repogym.graders import (
        CompositeGrader,
        ConstraintGrader,
        Grader,
        PerfGrader,
        QualityGrader,
        TestGrader,
    )
    from repogym.grading import Grading, grade
    from repogym.models import Finding, GradeComponent, GradeResult, Role
    from repogym.task import Task, TaskFile, load_task, parse_task
    from repogym.workspace import Workspace


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # importlib.metadata is read when first asked (repogym._version), not at start-up.
        globals()[name] = version = importlib.import_module("repogym._version").version()
        return version
    if name not in _EXPORTS:
        raise AttributeError(f"module 'repogym' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "ApplyPatch",
    "CompositeGrader",
    "ConstraintGrader",
    "EnvError",
    "Finding",
    "GradeComponent",
    "GradeResult",
    "Grader",
    "Grading",
    "JUnitError",
    "PerfGrader",
    "QualityGrader",
    "ReadFile",
    "RepoEnv",
    "RepogymError",
    "Role",
    "RunCommand",
    "Submit",
    "Task",
    "TaskError",
    "TaskFile",
    "TestGrader",
    "UnknownRef",
    "UsageError",
    "Workspace",
    "WorkspaceError",
    "WriteFile",
    "__version__",
    "grade",
    "grade_many",
    "grade_many_async",
    "load_task",
    "parse_task",
]
