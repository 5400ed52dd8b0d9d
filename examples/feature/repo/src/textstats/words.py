"""Word statistics of plain text."""

import re


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, without punctuation."""
    return re.findall(r"[a-z0-9']+", text.lower())


def word_count(text: str) -> int:
    return len(words(text))
