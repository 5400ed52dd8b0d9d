"""The registry of the built-in graders: each class by its name.

Which of them a task runs, in what order and with what role, is the task's rule
(``repogym.task.BUILTIN_GRADERS``, the one place the spec's grading order is written); a
test keeps the two sets of names equal.
"""

from __future__ import annotations

from repogym.graders.base import BuiltinGrader
from repogym.graders.constraints import ConstraintGrader
from repogym.graders.perf.grader import PerfGrader
from repogym.graders.quality import QualityGrader
from repogym.graders.tests.grader import TestGrader

BUILTIN: dict[str, type[BuiltinGrader]] = {
    grader.name: grader for grader in (ConstraintGrader, TestGrader, QualityGrader, PerfGrader)
}


def builtin_grader(name: str) -> type[BuiltinGrader]:
    """The class of the built-in grader ``name``."""
    return BUILTIN[name]
