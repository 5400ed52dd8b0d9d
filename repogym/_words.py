"""How messages word what they show: counts ("1 Python file", "2 Python files", issue 19)
and paths or test ids (one line, undecodable bytes as ``\\xff``)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, default ``noun + "s"``) unless
    the count is one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def shown_path(path: str) -> str:
    """``path`` as a message shows it: as it is when every character prints, else quoted,
    with an undecodable byte (held as a lone surrogate) written ``\\xff``, as the reports
    write it, and other characters that do not print as Python escapes (``\\n``), so that
    one message stays one line."""
    if path.isprintable():
        return path
    shown = []
    for char in path:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            shown.append(f"\\x{code - 0xDC00:02x}")
        else:
            shown.append(char if char.isprintable() else repr(char)[1:-1])
    return '"' + "".join(shown) + '"'
