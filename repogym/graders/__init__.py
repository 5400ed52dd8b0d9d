"""Graders: the protocol, the composite, and the built-in graders."""

from repogym.graders.base import Grader
from repogym.graders.composite import CompositeGrader
from repogym.graders.constraints import ConstraintGrader
from repogym.graders.perf.grader import PerfGrader
from repogym.graders.quality import QualityGrader
from repogym.graders.tests.grader import TestGrader

# Which built-in graders a task runs, and in what order, is repogym.task.BUILTIN_GRADERS.

__all__ = [
    "CompositeGrader",
    "ConstraintGrader",
    "Grader",
    "PerfGrader",
    "QualityGrader",
    "TestGrader",
]
