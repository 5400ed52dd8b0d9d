"""repogym's version, read from its installed metadata when first asked (importlib.metadata
costs ~50 ms to import: not at start-up, the Action's first log line, bench/image.py)."""

from __future__ import annotations

import functools

__all__ = ["version"]


@functools.cache
def version() -> str:
    """The installed distribution's version, ``0.0.0+unknown`` in a source tree that is
    not installed."""
    import importlib.metadata as metadata

    try:
        return metadata.version("repogym")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"
