"""How counts are worded in messages: "1 Python file", "2 Python files" (issue 19)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, default ``noun + "s"``) unless
    the count is one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
