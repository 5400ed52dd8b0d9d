"""Order-preserving de-duplication."""


def unique(items):
    """The items in first-seen order, each once."""
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
