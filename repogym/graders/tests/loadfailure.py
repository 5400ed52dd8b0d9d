"""Why a test file could not be loaded, found in what the test runner printed.

A report records a test file that failed to load (a SyntaxError, a missing module) as one
testcase named after the file, but its message rarely says why: pytest writes `collection
failure`, Node 20 `test failed`, and xmlrunner's message is a traceback that XML folds onto
one line and the reader cuts to 500 characters. Every runner prints the traceback, though:
pytest and Node on stdout, unittest on stderr. So the cause is looked for there: after a
line that mentions the file, the first line that is an exception (`SyntaxError: invalid
syntax`), and the last line number given for the file on the way (issue 8).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An exception as Python and Node print it, after pytest's `E   ` or a TAP `# `:
# `SyntaxError: invalid syntax`, `ModuleNotFoundError: No module named 'x'`, `Error: no`.
_EXCEPTION = re.compile(
    r"(?:E\s+|#\s*)?((?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt)"
    r"(?::\s.*)?)"
)
# Lines searched after a mention of the file: a traceback is shorter than this, and a
# later exception belongs to something else.
_WINDOW = 40
_MAX_LINES = 200_000  # of one output; the output is the submission's, so it is bounded
_MAX_CAUSE = 300  # characters of the cause kept


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadFailure:
    """The exception that kept a test file from loading, and the file's line if given."""

    cause: str
    line: int | None

    def describe(self) -> str:
        """``SyntaxError: invalid syntax (line 2)``."""
        return f"{self.cause} (line {self.line})" if self.line else self.cause


def load_failure(path: str, *outputs: str) -> LoadFailure | None:
    """The cause printed for the test file ``path`` (POSIX, relative to the tree the tests
    ran in) in the first of ``outputs`` that has one, or None."""
    mention = re.compile(
        r"(?:^|(?<=[\s/'\"(\[\\]))" + re.escape(path) + r"(?![\w.-])(?:\", line |:)?(\d+)?"
    )
    for output in outputs:
        found = _in_output(output.splitlines()[:_MAX_LINES], mention)
        if found is not None:
            return found
    return None


def _in_output(lines: list[str], mention: re.Pattern[str]) -> LoadFailure | None:
    """One pass: an exception within ``_WINDOW`` lines of the last mention of the file."""
    last = -_WINDOW
    line = None
    for index, text in enumerate(lines):
        at = mention.search(text)
        if at is not None:
            if index - last >= _WINDOW:
                line = None  # a new traceback: a line number from an old one is stale
            last = index
            line = int(at[1]) if at[1] else line
            continue
        if index - last < _WINDOW:
            exception = _EXCEPTION.fullmatch(text.strip())
            if exception is not None:
                return LoadFailure(cause=exception[1][:_MAX_CAUSE], line=line)
    return None
