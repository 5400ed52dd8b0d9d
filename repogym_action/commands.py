"""Workflow commands on stdout, and the file commands (``GITHUB_OUTPUT``, the job summary).

The runner reads every line a step prints. A line that starts (after blanks) with
``::name props::data`` is a command: the runner unescapes ``%0D``, ``%0A`` and ``%25`` in
the data, and in a property also ``%3A`` and ``%2C``, after splitting the properties on
``,`` and ending them at the first ``::``. :func:`escape_data` and :func:`escape_property`
are the inverse, ``%`` first so that nothing is unescaped twice.

The runner still reads the old syntax too, ``##[name props]data``, found anywhere in a
line (actions/runner, ``ActionCommand.TryParse``). Every text this module writes goes
through :func:`inert` (issue 19): a line of ours quotes a report's summary, a git error,
an exception's message, and in publish mode the report is a fork's, read in a job that
can write. :func:`inert` puts a zero-width space (U+200B, which the runner's
``TrimStart`` keeps, since .NET does not count it as white space) into every ``##[`` and
before a line's leading ``::``, so that no line is a command in either syntax and the log
shows the text unchanged to a reader. It breaks lines where the runner does (LF, CR,
CRLF), and shows an undecodable byte of a file name (a lone surrogate, which the log's
UTF-8 cannot hold) as ``\xe9``, as the reports do. The data of a command is made inert
too, though the runner reads no second command in a line it has read as one: one path
for every text. The value of ``add-mask`` is the exception, left exact, or the secret
would not be masked.

Text the submission controls (its test output) may hold such lines, so it is printed
between ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a random token that the
submission cannot know: while stopped, the runner runs no command but the one that
resumes (in either syntax), and it masks the token itself in the log.

``GITHUB_OUTPUT`` holds ``name<<DELIMITER`` blocks: the value is every line up to the
first line that is exactly the delimiter, without the line break before it. The
delimiter is ``ghadelimiter_`` and random hex, drawn again while it occurs in the value.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TextIO

from repogym.shown import show_undecodable

__all__ = [
    "SUMMARY_LIMIT",
    "Commands",
    "append_summary",
    "escape_data",
    "escape_property",
    "inert",
    "write_outputs",
]

# The runner drops a step's summary file larger than this (bytes), with an error.
SUMMARY_LIMIT = 1024 * 1024


_ZWSP = "\u200b"
# Where the runner ends a line it reads from a step's output (.NET's ReadLine).
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
# A line the runner would read as a ``::`` command: blanks, then ``::``. Python's idea of
# a blank (str.isspace) holds every character .NET's TrimStart strips, and more.
_COMMAND_START = re.compile(r"^(\s*)::")


def inert(text: str) -> str:
    """``text`` with no line the runner reads as a workflow command, in the ``::`` syntax
    (at a line's start) or the old ``##[`` one (anywhere): a zero-width space inside
    each, which a reader of the log does not see; an undecodable byte shown ``\xe9``.
    Line breaks are kept."""
    parts = _LINE_BREAK.split(show_undecodable(text).replace("##[", f"##{_ZWSP}["))
    return "".join(
        part if index % 2 else _COMMAND_START.sub(rf"\1{_ZWSP}::", part)
        for index, part in enumerate(parts)
    )


def escape_data(text: str) -> str:
    """``text`` as the data of a workflow command, on one line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """``text`` as a property value of a workflow command: also no ``:`` nor ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _token() -> str:
    return secrets.token_hex(16)


class Commands:
    """Writes workflow commands and log lines to ``stream`` (standard output by default,
    looked up at each write), flushing each, so that they keep their order with the output
    of the processes the grade starts."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._in_group = False

    def _write(self, text: str) -> None:
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write(text)
        stream.flush()

    def _command(
        self,
        name: str,
        data: str,
        properties: Mapping[str, str] | None = None,
        *,
        exact: bool = False,
    ) -> None:
        """``::name props::data``; ``exact``: ``data`` as it is (a value to mask), else
        inert (:func:`inert`) like every other text."""
        pairs = (properties or {}).items()
        props = ",".join(f"{key}={escape_property(inert(value))}" for key, value in pairs)
        data = escape_data(data if exact else inert(data))
        self._write(f"::{name}{' ' + props if props else ''}::{data}\n")

    def _annotate(
        self, level: str, message: str, title: str | None, file: str | None, line: int | None
    ) -> None:
        properties = {}
        if title:
            properties["title"] = title
        if file:
            properties["file"] = file
            if line is not None and line >= 1:  # a line without a file is not shown
                properties["line"] = str(line)
        self._command(level, message, properties)

    def error(
        self,
        message: str,
        *,
        title: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        """An error annotation (of ``file`` at ``line`` when given); it does not fail the step."""
        self._annotate("error", message, title, file, line)

    def warning(
        self,
        message: str,
        *,
        title: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        """A warning annotation."""
        self._annotate("warning", message, title, file, line)

    def notice(
        self,
        message: str,
        *,
        title: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        """A notice annotation."""
        self._annotate("notice", message, title, file, line)

    def mask(self, value: str) -> None:
        """Masks ``value`` in the rest of the log, and each of its lines on its own (the
        runner matches a secret line by line in what processes print)."""
        lines = [part.strip() for part in value.splitlines()]
        for part in dict.fromkeys([value.strip(), *lines]):
            if part:
                self._command("add-mask", part, exact=True)

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A collapsible group of the log around the block, closed even on an exception.

        The log does not nest groups: inside a group, the title is a plain line.
        """
        opened = self.open_group(title)
        try:
            yield
        finally:
            if opened:
                self.close_group()

    def open_group(self, title: str) -> bool:
        """Starts a group of the log, unless one is open (then ``title`` is a plain
        line); whether it started one, which :meth:`close_group` ends."""
        if self._in_group:
            self.line(title)
            return False
        self._command("group", title)
        self._in_group = True
        return True

    def close_group(self) -> None:
        """Ends the open group, if any."""
        if self._in_group:
            self._in_group = False
            self._command("endgroup", "")

    def internal_error(
        self, error: BaseException, what: str, *, group: str = "repogym-action: traceback"
    ) -> str:
        """The one place a traceback is folded: ``error``'s traceback in a group of the log
        called ``group``, and the line that says what failed (``what: Type: message``)."""
        with self.group(group):
            self.untrusted("".join(traceback.format_exception(error)))
        return f"{what}: {type(error).__name__}: {error}"

    def line(self, text: str) -> None:
        """Lines of the log that we wrote, which may quote text from elsewhere (a report,
        git, an exception): inert (:func:`inert`). Not for the submission's output
        (:meth:`untrusted`), which may be long and is shown as it is."""
        text = inert(text)
        self._write(text if text.endswith("\n") else text + "\n")

    def untrusted(self, text: str) -> None:
        """Text the submission controls, printed with every workflow command in it inert
        (an undecodable byte shown ``\xe9``, as everywhere)."""
        if not text:
            return
        text = show_undecodable(text)
        token = _token()
        while token in text:
            token = _token()
        body = text if text.endswith("\n") else text + "\n"
        self._write(f"::stop-commands::{token}\n{body}::{token}::\n")


def _append(path: Path, text: str) -> None:
    """Appends ``text`` to ``path`` (created if missing) in one write()."""
    data = text.encode("utf-8", errors="replace")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:  # a regular file takes it whole; a short write is finished, not lost
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _output_block(name: str, value: str) -> str:
    if not name or any(bad in name for bad in ("=", "<<", "\n", "\r")):
        raise ValueError(f"output name {name!r} cannot be written to GITHUB_OUTPUT")
    delimiter = f"ghadelimiter_{_token()}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{_token()}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def write_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Sets the step's outputs ``values`` through the file ``GITHUB_OUTPUT`` at ``path``,
    any value (line breaks included) as it is; ``None`` (a run outside the runner) sets
    nothing."""
    if path is None or not values:
        return
    _append(path, "".join(_output_block(name, value) for name, value in values.items()))


def append_summary(path: Path | None, markdown: str) -> bool:
    """Appends ``markdown`` to the job summary file at ``path`` (``GITHUB_STEP_SUMMARY``).

    The runner drops a summary over :data:`SUMMARY_LIMIT` bytes whole; one that would go
    over is left out and a line saying so is appended instead. Returns whether
    ``markdown`` was written; ``None`` (a run outside the runner) writes nothing.
    """
    if path is None:
        return False
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    size = len(text.encode("utf-8", errors="replace"))
    with contextlib.suppress(FileNotFoundError):
        size += path.stat().st_size
    if size > SUMMARY_LIMIT:
        _append(
            path,
            f"\nThis step's job summary was left out: with it the file would hold {size} bytes, "
            f"over the {SUMMARY_LIMIT} a step's summary may have.\n",
        )
        return False
    _append(path, text)
    return True
