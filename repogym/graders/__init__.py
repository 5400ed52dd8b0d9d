"""Graders: the protocol, the composite, and the built-in graders in grading order."""

from repogym.graders.base import Grader
from repogym.graders.composite import CompositeGrader
from repogym.graders.constraints import ConstraintGrader
from repogym.graders.perf import PerfGrader
from repogym.graders.quality import QualityGrader
from repogym.graders.tests import TestGrader

# The built-in graders, in the spec's grading order; a task runs those it declares.
BUILTIN_GRADERS: dict[str, type[Grader]] = {
    "constraints": ConstraintGrader,
    "tests": TestGrader,
    "quality": QualityGrader,
    "perf": PerfGrader,
}

__all__ = [
    "BUILTIN_GRADERS",
    "CompositeGrader",
    "ConstraintGrader",
    "Grader",
    "PerfGrader",
    "QualityGrader",
    "TestGrader",
]
