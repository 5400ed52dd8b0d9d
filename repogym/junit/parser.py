"""JUnit XML reports: a safe, streaming parser that yields one record per ``<testcase>``
(:class:`~repogym.junit.records.Case`, defined with the other data types in
``repogym.junit.records``).

Mapping a record to the canonical test id of a task is ``repogym.junit.testids``' job.

The parser is the standard library's expat, fed the file in chunks: memory stays flat
whatever the report's size, and each case is handed out as soon as its end tag is read.
Reports come from the code under grading, so they are untrusted input: a report that
declares a DTD is refused outright (entity-expansion bombs and external entities both
need one); the path is opened without following a symlink and must be a regular file;
and what a report may cost in bytes, depth, testcases, names, token size and time is
capped (:class:`~repogym.junit.records.Limits`), each cap named in the error that a report
over it gets.

One reader, in Python, turns expat's events into cases. A reader in C was tried and
removed (issue 8): it was about 1.7 times as fast, but parsing is a small part of any
grade, and the report is written by the code under grading, in the process that may
hold a token, which is no place for hand-written C against expat's ABI.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from xml.parsers import expat

from repogym.errors import JUnitError
from repogym.junit.file import open_report, read_chunk, too_large
from repogym.junit.records import LIMITS, MAX_MESSAGE, Case, Limits, Outcome


def iter_cases(path: Path, *, limits: Limits = LIMITS) -> Iterator[Case]:
    """Every ``<testcase>`` of the report at ``path``, in document order.

    A generator: the file is checked (exists, is a regular file and not a symlink, is not
    empty, is within ``limits.max_bytes``) when iteration starts, then read and parsed in
    chunks, and each case is yielded once its end tag has been parsed. So
    :class:`JUnitError` is raised while iterating, possibly after some cases were yielded:
    a DTD, malformed XML (with its line and column), a truncated file or a report over one
    of ``limits`` is found where it occurs, and a report without any ``<testcase>`` is only
    known, and raised, at the end.
    """
    descriptor = open_report(path, limits.max_bytes)
    try:
        yield from _parse(path, descriptor, limits)
    finally:  # also when the caller stops early: a generator is closed when dropped
        os.close(descriptor)


def _parse(path: Path, descriptor: int, limits: Limits) -> Iterator[Case]:
    reader = _Reader(path, limits)
    deadline = time.monotonic() + limits.deadline
    read = found = 0
    while True:
        chunk = read_chunk(path, descriptor, _chunk_size(reader.pending(read)))
        read += len(chunk)
        if read > limits.max_bytes:  # it grew since it was measured
            raise JUnitError(too_large(path, read, limits.max_bytes))
        cases = reader.feed(chunk)
        found += len(cases)
        if found > limits.max_cases:
            raise JUnitError(_too_many_cases(path, limits.max_cases))
        if time.monotonic() > deadline:
            raise JUnitError(_too_slow(path, read, limits.deadline))
        yield from cases
        if not chunk:
            break
    if not found:
        raise JUnitError(
            f"JUnit report {path} ({read:,} bytes) contains no <testcase> element: "
            "did the test command collect and run any test?"
        )


# Read this much at a time. Memory does not grow with the report; and 64 KiB parsed
# measurably faster than 1 MiB or more (bench/junit.py), the cases made from one chunk
# staying in the CPU's caches until they are handed out.
_CHUNK = 1 << 16
# An unfinished token longer than this is fed in chunks as long as itself (_chunk_size).
_LONG_TOKEN = 1 << 20

# Direct children of <testcase> that decide its outcome, and how bad each is: with several
# (pytest writes a call failure and a teardown error in one testcase), the worst wins.
_VERDICTS = {
    "skipped": (Outcome.SKIPPED, 1),
    "failure": (Outcome.FAILED, 2),
    "error": (Outcome.ERROR, 3),
}
# Reruns that failed before a later run decided the outcome (Maven Surefire and
# pytest-rerunfailures): they mark the case flaky and leave its outcome alone.
_RERUNS = frozenset({"flakyFailure", "flakyError", "rerunFailure", "rerunError"})


def _chunk_size(pending: int) -> int:
    """How much to read next, given the bytes of an unfinished token expat holds.

    Expat before 2.6 (the one in Python 3.11) scans an unfinished token again from its
    start on every call, so a long attribute value fed 64 KiB at a time costs time in the
    square of its length (a 32 MiB one took 41 s). Past _LONG_TOKEN, feeding as many bytes
    as it already holds doubles them each time, which makes the rescans linear.
    """
    return pending if pending > _LONG_TOKEN else _CHUNK


def _too_many_cases(path: Path, max_cases: int) -> str:
    return (
        f"JUnit report {path} has more than {max_cases:,} <testcase> elements, the limit: "
        "run fewer tests in one test command"
    )


def _too_slow(path: Path, read: int, deadline: float) -> str:
    return (
        f"JUnit report {path} was not read within {deadline:g} seconds, the limit "
        f"(stopped after {read:,} bytes): write a smaller report"
    )


class _FirstLine:
    """The message of a failure, error or skip without a ``message`` attribute: the
    first non-empty line of its text, stripped, at most ``MAX_MESSAGE`` characters.

    Precisely ``text.lstrip()[:MAX_MESSAGE].split("\n", 1)[0].rstrip()``, computed from
    the text fed in pieces of any size: it keeps only what that needs, and :meth:`add`
    says when more text cannot change the line.
    """

    __slots__ = ("full", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0  # characters in parts
        self.full = False  # the line is settled: more text cannot change it

    def add(self, data: str) -> bool:
        """Take the next piece of text; whether the line is settled."""
        if self.full:
            return True
        if not self.parts:
            data = data.lstrip()
            if not data:
                return False
        self.parts.append(data)
        self.size += len(data)
        self.full = "\n" in data or self.size >= MAX_MESSAGE
        return self.full

    def line(self) -> str:
        return "".join(self.parts)[:MAX_MESSAGE].split("\n", 1)[0].rstrip()


def _attribute_message(message: str) -> str | None:
    """A ``message`` attribute as the case's message, or None when it is blank (then the
    element's text is used)."""
    return message[:MAX_MESSAGE] if message.strip() else None


def _not_well_formed(path: Path, reason: str, line: int, column: int) -> JUnitError:
    return JUnitError(
        f"JUnit report {path} is not well-formed XML: {reason} at line {line}, column {column}"
    )


def _unreadable_encoding(path: Path, error: Exception) -> JUnitError:
    # pyexpat decodes an encoding expat lacks with Python's codecs: an unknown name is a
    # LookupError, a multi-byte codec a ValueError.
    return JUnitError(
        f"JUnit report {path} declares an encoding that cannot be read ({error}): "
        "write the report in UTF-8"
    )


def _declares_dtd(path: Path, name: str, line: int) -> JUnitError:
    return JUnitError(
        f"JUnit report {path} declares a DTD (<!DOCTYPE {name}> at line {line}) and repogym "
        "refuses DTDs, since entity expansion and external entities make them unsafe: "
        "write the report without one"
    )


_new_case = tuple.__new__
# The depth of the open testcase when none is open: deeper than any element can be.
_NO_CASE = 1 << 62


class _Reader:
    """Expat handlers that turn parse events into :class:`Case` records.

    Text is collected only inside the failure, error or skipped element that decides a
    case's outcome, and only while it has no ``message`` attribute, so the usually large
    ``<system-out>`` costs nothing beyond expat's own scan. The handlers run once per
    element of the report, so they are kept short.
    """

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self.ready: list[Case] = []
        # Elements open now, whatever they are (the document element is at depth 1), and
        # the limit, copied here since the handlers read it once an element.
        self.depth = 0
        self.max_depth = limits.max_depth
        # The names of the open <testsuite> elements, outermost first, and the `file` of
        # each, inherited from the one around it. Lists, so that opening or closing a suite
        # costs the same at any depth; `suites` is their tuple, made when a case needs it
        # after the stack changed, then shared by the cases of that suite.
        self.suite_names: list[str] = []
        self.suite_files: list[str | None] = [None]
        self.suites: tuple[str, ...] | None = ()
        # The open <testcase>: its depth (_NO_CASE when none is open) and attributes.
        self.case_depth = _NO_CASE
        self.attrs: dict[str, str] = {}
        # What its children said so far.
        self.outcome = Outcome.PASSED
        self.severity = 0
        self.flaky = False
        self.message = ""
        # The deciding child's first line while its text is being collected.
        self.text: _FirstLine | None = None

        # pyexpat interns each element and attribute name in this dict for the parse,
        # which makes its size the count that Limits.max_names caps.
        self.names: dict[str, str] = {}
        parser = expat.ParserCreate(intern=self.names)
        parser.buffer_text = True
        parser.buffer_size = 1 << 16
        parser.StartDoctypeDeclHandler = self._refuse_dtd
        parser.EntityDeclHandler = self._refuse_entity
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        self.parser = parser

    def feed(self, chunk: bytes) -> list[Case]:
        """Parse the next chunk (an empty one ends the document); the cases it completed."""
        try:
            self.parser.Parse(chunk, not chunk)
        except expat.ExpatError as error:
            reason = expat.ErrorString(error.code)
            raise _not_well_formed(self.path, reason, error.lineno, error.offset + 1) from None
        except (LookupError, ValueError) as error:
            raise _unreadable_encoding(self.path, error) from None
        # Checked once a chunk, not once an element: a chunk adds at most a few thousand
        # names, and keeping the handlers short keeps the common report fast.
        if len(self.names) > self.limits.max_names:
            raise self._over_limit(
                f"uses more than {self.limits.max_names:,} distinct element and attribute "
                "names, the limit",
                "a JUnit report uses a few dozen: write a report with the usual elements only",
            )
        ready, self.ready = self.ready, []
        return ready

    def pending(self, fed: int) -> int:
        """Bytes expat holds of a token it has not finished, ``fed`` bytes into the file;
        refused over Limits.max_token."""
        # Between calls, CurrentByteIndex is where the unfinished token starts (or the
        # end of what was fed, when none is).
        pending = fed - max(self.parser.CurrentByteIndex, 0)
        if pending > self.limits.max_token:
            raise self._over_limit(
                f"has a tag or comment longer than {self.limits.max_token:,} bytes, the limit",
                "write long messages as the element's text rather than in an attribute",
            )
        return pending

    def _refuse_dtd(self, name: str, *_: object) -> None:
        raise _declares_dtd(self.path, name, self.parser.CurrentLineNumber)

    def _refuse_entity(self, name: str, *_: object) -> None:
        # Unreachable while DOCTYPE is refused (entities are declared in a DTD); kept so
        # that no entity is ever defined should that handler change.
        raise JUnitError(
            f"JUnit report {self.path} declares the entity {name!r} and repogym refuses "
            "DTDs and entities: write the report without them"
        )

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        depth = self.depth = self.depth + 1
        if depth > self.max_depth:
            self._too_deep()
        if depth > self.case_depth:  # inside the open testcase
            if depth == self.case_depth + 1:  # only the testcase's own children count
                if tag in _VERDICTS:
                    self._verdict(tag, attrs)
                elif tag in _RERUNS:
                    self.flaky = True
        elif tag == "testcase":
            self.case_depth = depth
            self.attrs = attrs
        elif tag == "testsuite":
            self.suite_names.append(attrs.get("name", ""))
            self.suite_files.append(attrs.get("file") or self.suite_files[-1])
            self.suites = None

    def _end(self, tag: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if depth > self.case_depth:  # a child of the open testcase, or deeper
            if depth == self.case_depth + 1 and self.text is not None:
                self._stop_text()
        elif depth == self.case_depth:
            self._emit()
        elif tag == "testsuite":
            self.suite_names.pop()
            self.suite_files.pop()
            self.suites = None

    def _too_deep(self) -> None:
        raise self._over_limit(
            f"nests elements more than {self.limits.max_depth:,} deep, the limit",
            "a JUnit report needs a few levels: write the test suites less deeply nested",
        )

    def _over_limit(self, what: str, fix: str) -> JUnitError:
        parser = self.parser
        where = f"line {parser.CurrentLineNumber:,}, column {parser.CurrentColumnNumber + 1:,}"
        return JUnitError(f"JUnit report {self.path} {what} (at {where}): {fix}")

    def _verdict(self, tag: str, attrs: dict[str, str]) -> None:
        outcome, severity = _VERDICTS[tag]
        if severity <= self.severity:  # of several alike, the first one's message is kept
            return
        self.outcome, self.severity = outcome, severity
        message = _attribute_message(attrs.get("message", ""))
        if message is not None:
            self.message = message
        else:
            self.message = ""
            self.text = _FirstLine()
            self.parser.CharacterDataHandler = self._collect

    def _collect(self, data: str) -> None:
        # The handler is unhooked at the element's end, not once the line is settled:
        # pyexpat would hand the same buffered text to the handler again if it were
        # replaced while running.
        if self.text is not None:
            self.text.add(data)

    def _stop_text(self) -> None:
        assert self.text is not None
        self.message = self.text.line()
        self.text = None
        self.parser.CharacterDataHandler = None

    def _emit(self) -> None:
        attrs = self.attrs
        suites = self.suites
        if suites is None:
            suites = self.suites = tuple(self.suite_names)
        # tuple.__new__ skips the named tuple's Python-level __new__: once per testcase.
        case = _new_case(
            Case,
            (
                attrs.get("name", ""),
                attrs.get("classname", ""),
                attrs.get("file") or self.suite_files[-1],
                suites,
                self.outcome,
                self.flaky,
                self.message,
                attrs.get("line"),
            ),
        )
        self.ready.append(case)
        self.case_depth = _NO_CASE
        if self.severity or self.flaky:
            self.outcome, self.severity, self.flaky, self.message = Outcome.PASSED, 0, False, ""
