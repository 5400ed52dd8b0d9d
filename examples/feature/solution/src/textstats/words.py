"""Word statistics of plain text."""

import re
from collections import Counter


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, without punctuation."""
    return re.findall(r"[a-z0-9']+", text.lower())


def word_count(text: str) -> int:
    return len(words(text))


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    """The ``n`` most frequent words with their counts; ties in alphabetical order."""
    counts = Counter(words(text))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
