"""URL slugs from titles."""

import re


def slugify(title: str) -> str:
    """Lower-case words joined by hyphens: "Hello, World!" -> "hello-world"."""
    ascii_only = title.encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_only.lower())
    return "-".join(words)
