"""JUnit XML: reading a report the submission's commands wrote (:mod:`.reader`, through
:mod:`.file`, which opens it safely), and naming its cases as test ids (:mod:`.testids`)."""

from repogym.errors import JUnitError
from repogym.junit.reader import LIMITS, MAX_MESSAGE, Case, Limits, Outcome, iter_cases

__all__ = ["LIMITS", "MAX_MESSAGE", "Case", "JUnitError", "Limits", "Outcome", "iter_cases"]
