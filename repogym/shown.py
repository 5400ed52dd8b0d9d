"""How repogym shows a value in a message, a report or a log (issue 46, one way): counts
("1 Python file", "2 Python files", issue 19), and text that must stay one readable line:
an undecodable byte of a file name (held as a lone surrogate, as ``os.fsdecode`` and git's
names decoded with ``surrogateescape`` give it) as ``\\xff``, a character that does not
print as an escape. This module imports nothing of repogym, so that the Action's log
(repogym_action.commands) shows a name as the report does without loading the engine."""

from __future__ import annotations

import re

__all__ = ["counted", "escape", "show_undecodable", "shown_path"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, default ``noun + "s"``) unless
    the count is one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def escape(char: str, *, python: bool = False) -> str:
    """One character as an escape: the surrogate that stands for an undecodable byte as
    that byte (``\\xff``); any other as Python's ``repr`` writes it (``\\n``, ``\\x1b``,
    ``\\u202e``) with ``python``, else ``\\xNN`` below 0x100 and ``\\uNNNN`` above."""
    point = ord(char)
    if 0xDC80 <= point <= 0xDCFF:
        return f"\\x{point - 0xDC00:02x}"
    if python:
        return repr(char)[1:-1]
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def show_undecodable(text: str) -> str:
    """``text`` with every surrogate written as an escape (:func:`escape`), so that the
    text can be encoded as UTF-8."""
    return _SURROGATE.sub(lambda found: escape(found[0]), text)


def shown_path(path: str) -> str:
    """``path`` as a message shows it: as it is when every character prints, else quoted,
    each character that does not print written as an escape (:func:`escape`, Python's
    way), so that one message stays one line."""
    if path.isprintable():
        return path
    return '"' + "".join(c if c.isprintable() else escape(c, python=True) for c in path) + '"'
