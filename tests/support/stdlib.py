"""The standard library's Python files, the corpus that tests/test_metrics_stdlib.py checks
the metrics on and bench/metrics.py times them on."""

from __future__ import annotations

import ast
import pathlib
import sys
import sysconfig
import warnings


def parse(source: bytes) -> ast.Module:
    """``ast.parse``, without the SyntaxWarnings some stdlib files raise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def stdlib_sources() -> list[tuple[str, bytes]]:
    """Every ``.py`` file of the standard library that parses, read up front, with its path
    relative to the library's root.

    Installed packages (``site-packages``) live under the same directory on most
    installations but are not the standard library, so they are left out: the base
    interpreter's too, which a virtual environment's own paths do not name (there they
    were six times the standard library, and most of the test suite's time).
    """
    paths = sysconfig.get_paths()
    root = pathlib.Path(paths["stdlib"])
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    installed = {pathlib.Path(p[key]) for p in (paths, base) for key in ("purelib", "platlib")}
    sources = []
    for path in sorted(root.rglob("*.py")):
        if installed.intersection(path.parents):
            continue
        source = path.read_bytes()
        try:
            parse(source)
        except (SyntaxError, ValueError):  # test data written not to parse, Python 2 code
            continue
        sources.append((path.relative_to(root).as_posix(), source))
    return sources
