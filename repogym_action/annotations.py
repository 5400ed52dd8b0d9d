"""A report's findings as a check run's annotations.

A finding may come from the submission (a path, a message its tests printed), so what
GitHub is sent is checked the way GitHub checks it: a path relative to the repository
(never absolute, never ``..``), a line of at least 1, a title of at most 255 characters
and a message of at most 64 KiB; text is cut with a note of how much was left out. A
title is one line: its line breaks and control characters become spaces first (GitHub
shows it as one line, and a title may come from a test's output or a forged report). A
finding without a path stays in the summary only.

A file name that is not UTF-8 comes from git as bytes, read with ``surrogateescape``: its
undecodable bytes are lone surrogates, which are no Unicode and which GitHub's JSON cannot
carry (issue 19). In a title or a message such a byte is shown ``\xe9``, as the reports
show it (:func:`repogym.shown.show_undecodable`). An annotation on such a file is left
out, its finding kept in the summary and the comment: the API names a file by its path
in UTF-8, so an escaped path would name another file, or none.
"""

from __future__ import annotations

import re
from typing import Any

from repogym.report.schema import Finding, Report
from repogym.shown import show_undecodable

MAX_TITLE = 255  # characters
MAX_MESSAGE = 64 * 1024  # bytes
MAX_PATH = 1024  # characters
# Sent at most: 20 requests of 50; a report with more says so in the summary.
MAX_ANNOTATIONS = 1000

LEVELS = {"failure": "failure", "warning": "warning", "notice": "notice"}
_UNSAFE_PATH = re.compile(r"[\x00-\x1f\x7f\\\ud800-\udfff]")  # a lone surrogate: see above
# Line breaks (also U+2028, U+2029 and NEL) and other control characters, C0 and C1.
_NOT_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def to_annotations(report: Report) -> tuple[list[dict[str, Any]], int]:
    """The annotations of every finding with a usable path, in component order, at most
    :data:`MAX_ANNOTATIONS`; and how many findings with a path were left out."""
    made: list[dict[str, Any]] = []
    left = 0
    for component in report.components:
        for finding in component.findings:
            annotation = _annotation(component.name, finding)
            if annotation is None:
                continue
            if len(made) < MAX_ANNOTATIONS:
                made.append(annotation)
            else:
                left += 1
    return made, left


def _annotation(component: str, finding: Finding) -> dict[str, Any] | None:
    path = finding.path
    if path is None or not _usable(path):
        return None
    line = finding.line if finding.line is not None and finding.line >= 1 else 1
    title = one_line(finding.title, MAX_TITLE) or one_line(component, MAX_TITLE) or "repogym"
    annotation: dict[str, Any] = {
        "path": path,
        "start_line": line,
        "end_line": line,
        "annotation_level": LEVELS.get(finding.level, "failure"),
        "message": cut_bytes(show_undecodable(finding.message or title), MAX_MESSAGE),
        "title": title,
    }
    return annotation


def _usable(path: str) -> bool:
    parts = path.split("/")
    return (
        0 < len(path) <= MAX_PATH
        and not path.startswith("/")
        and not _UNSAFE_PATH.search(path)
        and all(part not in ("", ".", "..") for part in parts)
    )


def one_line(text: str, limit: int) -> str:
    """``text`` as a one-line field GitHub shows (an annotation's or a check run's title):
    every run of line breaks and control characters one space, the ends stripped, then
    cut to ``limit`` characters with a note of how many were cut; an undecodable byte
    shown ``\xe9``."""
    return cut_chars(show_undecodable(_NOT_ONE_LINE.sub(" ", text)).strip(), limit)


def cut_chars(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, ending with how many were cut."""
    if len(text) <= limit:
        return text
    for keep in range(limit, -1, -1):
        note = f"… ({len(text) - keep} more characters)"
        if keep + len(note) <= limit:
            return text[:keep] + note
    return text[:limit]  # pragma: no cover - a limit shorter than the note


def cut_bytes(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` bytes of UTF-8, cut between characters, ending
    with how many characters were cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note_room = 64
    kept = data[: limit - note_room].decode("utf-8", "ignore")
    return f"{kept}… ({len(text) - len(kept)} more characters)"
