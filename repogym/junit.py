"""JUnit XML reports: a safe, streaming parser that yields one record per ``<testcase>``.

Mapping a record to the canonical test id of a task is ``repogym._testids``' job.

The parser is the standard library's expat, fed the file in chunks: memory stays flat
whatever the report's size, and each case is handed out as soon as its end tag is read.
Reports come from the code under grading, so they are untrusted input: a report that
declares a DTD is refused outright (entity-expansion bombs and external entities both
need one), and a report over ``max_bytes`` is refused before it is read.

One reader, in Python, turns expat's events into cases. A reader in C was tried and
removed (issue 8): it was about 1.7 times as fast, but parsing is a small part of any
grade, and the report is written by the code under grading, in the process that may
hold a token, which is no place for hand-written C against expat's ABI.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from stat import S_ISREG
from typing import NamedTuple
from xml.parsers import expat

from repogym.errors import JUnitError

# A report larger than this is rejected unread (a runaway suite, or an attack on memory).
DEFAULT_MAX_BYTES = 512 << 20
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
    # from 0 by pytest and from 1 by xmlrunner (a finding's line: graders/_test_findings.py).
    line: str | None = None


def iter_cases(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[Case]:
    """Every ``<testcase>`` of the report at ``path``, in document order.

    A generator: the file is checked (exists, is a regular file, is not empty, is at most
    ``max_bytes``) when iteration starts, then read and parsed in chunks, and each case is
    yielded once its end tag has been parsed. So :class:`JUnitError` is raised while
    iterating, possibly after some cases were yielded: a DTD, malformed XML (with its line
    and column) or a truncated file is found where it occurs, and a report without any
    ``<testcase>`` is only known, and raised, at the end.
    """
    size = _checked_size(path, max_bytes)
    reader = _Reader(path)
    found = 0
    for chunk in _chunks(path, max_bytes):
        cases = reader.feed(chunk)
        found += len(cases)
        yield from cases
    if not found:
        raise JUnitError(
            f"JUnit report {path} ({size:,} bytes) contains no <testcase> element: "
            "did the test command collect and run any test?"
        )


# Read this much at a time. Memory does not grow with the report; and 64 KiB parsed
# measurably faster than 1 MiB or more (bench/junit.py), the cases made from one chunk
# staying in the CPU's caches until they are handed out.
_CHUNK = 1 << 16

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


def _checked_size(path: Path, max_bytes: int) -> int:
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise JUnitError(
            f"JUnit report {path} does not exist: did the test command write its report there?"
        ) from None
    except OSError as error:
        raise JUnitError(f"JUnit report {path} cannot be read: {error.strerror}") from None
    if not S_ISREG(stat.st_mode):
        raise JUnitError(f"JUnit report {path} is not a regular file")
    if stat.st_size == 0:
        raise JUnitError(
            f"JUnit report {path} is empty: the test command probably stopped before writing it"
        )
    if stat.st_size > max_bytes:
        raise JUnitError(_too_large(path, stat.st_size, max_bytes))
    return stat.st_size


def _chunks(path: Path, max_bytes: int) -> Iterator[bytes]:
    """The file's content in chunks, then an empty one to mark its end."""
    try:
        with path.open("rb") as report:
            read = 0
            while chunk := report.read(_CHUNK):
                read += len(chunk)
                if read > max_bytes:  # it grew since it was measured
                    raise JUnitError(_too_large(path, read, max_bytes))
                yield chunk
    except OSError as error:
        raise JUnitError(f"JUnit report {path} cannot be read: {error.strerror}") from None
    yield b""


def _too_large(path: Path, size: int, max_bytes: int) -> str:
    return (
        f"JUnit report {path} is {size:,} bytes, over the limit of {max_bytes:,}: "
        "reduce the captured output in the report, or raise the limit"
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


class _Reader:
    """Expat handlers that turn parse events into :class:`Case` records.

    Text is collected only inside the failure, error or skipped element that decides a
    case's outcome, and only while it has no ``message`` attribute, so the usually large
    ``<system-out>`` costs nothing beyond expat's own scan. The handlers run once per
    element of the report, so they are kept short.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ready: list[Case] = []
        self.suites: tuple[str, ...] = ()
        # The `file` of each open <testsuite>, inherited from the one around it.
        self.suite_files: list[str | None] = [None]
        # The open <testcase>: its attributes, and how deep inside it the parser is.
        self.in_case = False
        self.inner = 0
        self.attrs: dict[str, str] = {}
        # What its children said so far.
        self.outcome = Outcome.PASSED
        self.severity = 0
        self.flaky = False
        self.message = ""
        # The deciding child's first line while its text is being collected.
        self.text: _FirstLine | None = None

        parser = expat.ParserCreate()
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
        ready, self.ready = self.ready, []
        return ready

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
        if self.in_case:
            self.inner += 1
            if self.inner == 1:  # only the testcase's own children count
                if tag in _VERDICTS:
                    self._verdict(tag, attrs)
                elif tag in _RERUNS:
                    self.flaky = True
        elif tag == "testcase":
            self.in_case = True
            self.attrs = attrs
        elif tag == "testsuite":
            self.suites = (*self.suites, attrs.get("name", ""))
            self.suite_files.append(attrs.get("file") or self.suite_files[-1])

    def _end(self, tag: str) -> None:
        if self.inner:  # a child of the open testcase, or deeper
            self.inner -= 1
            if not self.inner and self.text is not None:
                self._stop_text()
        elif self.in_case:
            self._emit()
        elif tag == "testsuite":
            self.suites = self.suites[:-1]
            self.suite_files.pop()

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
        # tuple.__new__ skips the named tuple's Python-level __new__: once per testcase.
        case = _new_case(
            Case,
            (
                attrs.get("name", ""),
                attrs.get("classname", ""),
                attrs.get("file") or self.suite_files[-1],
                self.suites,
                self.outcome,
                self.flaky,
                self.message,
                attrs.get("line"),
            ),
        )
        self.ready.append(case)
        self.in_case = False
        if self.severity or self.flaky:
            self.outcome, self.severity, self.flaky, self.message = Outcome.PASSED, 0, False, ""
