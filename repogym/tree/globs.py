"""Gitignore-style globs (``src/**``, ``*.py``, ``tests/``), as the task file writes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pathspec


def compile_globs(globs: Sequence[str]) -> pathspec.PathSpec[Any]:
    """A matcher for ``globs``; raises ValueError naming the first invalid one."""
    for glob in globs:
        try:
            pathspec.PathSpec.from_lines("gitignore", [glob])
        except Exception as error:  # pathspec raises several types for bad patterns
            raise ValueError(
                f"glob {glob!r} is not a valid gitignore-style pattern: {error}"
            ) from None
    return pathspec.PathSpec.from_lines("gitignore", globs)


def matching(spec: pathspec.PathSpec[Any], paths: Iterable[str]) -> list[str]:
    """The paths ``spec`` matches, in the order given."""
    return [path for path in paths if spec.match_file(path)]
