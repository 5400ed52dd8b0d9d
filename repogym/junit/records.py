"""JUnit XML reports' records: what one ``<testcase>`` says (:class:`Case`, with its
:class:`Outcome`) and what reading one report may cost (:class:`Limits`).

The data types alone, apart from the parser that makes them (:mod:`repogym.junit.parser`):
``repogym.junit.testids`` and the graders read cases without needing the parser's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

# Messages are kept for failing, erroring and skipped tests only, and this short.
MAX_MESSAGE = 500


class Outcome(str, Enum):
    """What happened to one test (issue 3)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    MISSING = "missing"  # in the task but not in the report

    def __str__(self) -> str:
        return self.value


class Case(NamedTuple):
    """One ``<testcase>`` element as the report wrote it.

    A named tuple rather than a frozen dataclass: it is as immutable, and a report makes
    one per testcase, where a frozen dataclass's ``__init__`` costs five times as much
    (bench/junit.py).
    """

    name: str
    classname: str
    file: str | None  # its own `file` attribute, else the nearest enclosing suite's (mocha)
    suites: tuple[str, ...]  # names of the enclosing <testsuite> elements, outermost first
    outcome: Outcome  # from its children: failure, error, skipped, or none (passed)
    flaky: bool = False  # had flakyFailure/flakyError/rerunFailure/rerunError children
    message: str = ""  # for a failure, error or skip: its message, at most MAX_MESSAGE chars
    # Its own `line` attribute as written, unchecked: where the test is defined, counted
    # from 0 by pytest and from 1 by xmlrunner (a finding's line: graders/tests/findings.py).
    line: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What reading one report may cost (issue 9). Each bounds the memory or the time a
    hostile report can take; a report over one is refused with a message naming it. The
    defaults are far above what real runs write: bench/junit.py's 200,000 testcases, with
    failures and captured output, are 86 MiB, five elements deep, read in about 3 s.
    """

    # The file's size: a larger report is refused unread. Memory does not grow with the
    # size (the other caps see to that), so this bounds the time a report can take.
    max_bytes: int = 256 << 20
    # Elements open at once: expat keeps a record per open element, and so do we per
    # open <testsuite>. JUnit needs three or four levels; Surefire and mocha nest a few more.
    max_depth: int = 1_000
    # <testcase> elements: the caller keeps a record per case (repogym.junit.testids.collect).
    max_cases: int = 1_000_000
    # One tag with its attributes, or one comment or processing instruction: expat holds
    # an unfinished token whole. The largest legitimate one is a failure's message attribute.
    max_token: int = 4 << 20
    # Distinct element and attribute names: expat and pyexpat keep each for the whole
    # parse (about 200 bytes a name). A JUnit report uses a few dozen.
    max_names: int = 10_000
    # Wall-clock seconds from the first read to the last case handed out, the caller's
    # work on the cases included: the other caps bound this too, this says so in one place.
    deadline: float = 120.0


LIMITS = Limits()
