"""URL slugs from titles."""

import re
import unicodedata


def slugify(title: str) -> str:
    """Lower-case words joined by hyphens: "Crème brûlée" -> "creme-brulee"."""
    decomposed = unicodedata.normalize("NFKD", title)
    ascii_only = decomposed.encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_only.lower())
    return "-".join(words)
