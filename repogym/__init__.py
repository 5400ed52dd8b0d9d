"""repogym: grade a code change against a task.

The public API is what ``__all__`` lists; every other name, and every module whose name
starts with an underscore, may change without notice.
"""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("repogym")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

# After __version__, which the modules below read.
from repogym.env import (
    ApplyPatch,
    ReadFile,
    RepoEnv,
    RunCommand,
    Submit,
    WriteFile,
)
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
from repogym.task import Task, load_task, parse_task
from repogym.workspace import Workspace

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
    "TestGrader",
    "UnknownRef",
    "UsageError",
    "Workspace",
    "WorkspaceError",
    "WriteFile",
    "__version__",
    "grade",
    "load_task",
    "parse_task",
]
