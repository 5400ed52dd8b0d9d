"""Order-preserving de-duplication."""


def unique(items):
    """The items in first-seen order, each once."""
    return list(dict.fromkeys(items))
