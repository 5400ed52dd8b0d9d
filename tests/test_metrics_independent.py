"""measure_source against an independent implementation of the same rules, written the
other way round (a recursive walk over ``ast.iter_child_nodes``), on every file of the
CPython standard library; and its qualnames against the ones Python's compiler writes."""

from __future__ import annotations

import ast
import inspect
import sysconfig
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import CodeType

import pytest

from repogym.metrics import measure_source

Row = tuple[str, int, str, int, int]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def independent(tree: ast.Module, path: str) -> list[Row]:
    """The rules of docs/metrics.md, implemented without looking at repogym/metrics.py."""
    rows: list[Row] = []

    def find(node: ast.AST, prefix: str, declared_global: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                # As CPython's compiler: a name declared `global` in the enclosing
                # function or class gets no prefix (PEP 3155).
                qualname = child.name if child.name in declared_global else prefix + child.name
                inner = globals_of(child)
                if isinstance(child, ast.ClassDef):
                    find(child, qualname + ".", inner)
                    continue
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                rows.append((path, child.lineno, qualname, length, complexity(child)))
                find(child, qualname + ".<locals>.", inner)
            else:
                find(child, prefix, declared_global)

    find(tree, "", set())
    return sorted(rows)


def globals_of(scope: ast.AST) -> set[str]:
    return {
        name for node in own_nodes(scope) if isinstance(node, ast.Global) for name in node.names
    }


def own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``function``, its decorators, defaults and annotations included,
    but not the nodes of a def or class nested in it (those belong to the nested one)."""
    for child in ast.iter_child_nodes(function):
        if isinstance(child, _SCOPES):
            continue
        yield child
        yield from own_nodes(child)


def complexity(function: ast.AST) -> int:
    total = 1
    for node in own_nodes(function):
        if isinstance(
            node,
            ast.If
            | ast.For
            | ast.AsyncFor
            | ast.While
            | ast.ExceptHandler
            | ast.IfExp
            | ast.Assert
            | ast.match_case,
        ):
            total += 1
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            total += 1 + len(node.ifs)
    return total


def stdlib_sources() -> list[tuple[str, bytes]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return [
        (path.relative_to(root).as_posix(), path.read_bytes())
        for path in sorted(root.rglob("*.py"))
        if "site-packages" not in path.parts
    ]


def parse(source: bytes) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError):
            return None


@pytest.fixture(scope="module")
def stdlib() -> list[tuple[str, bytes, ast.Module]]:
    parsed = [(p, s, parse(s)) for p, s in stdlib_sources()]
    return [(p, s, t) for p, s, t in parsed if t is not None]


def test_the_whole_standard_library_agrees(stdlib: list[tuple[str, bytes, ast.Module]]) -> None:
    assert len(stdlib) > 1000
    functions = 0
    for path, source, tree in stdlib:
        ours = sorted(
            (m.path, m.line, m.qualname, m.length, m.complexity)
            for m in measure_source(source, path)
        )
        theirs = independent(tree, path)
        assert ours == theirs, f"{path}: first difference {_first_difference(ours, theirs)}"
        functions += len(ours)
    assert functions > 50_000


def _first_difference(ours: list[Row], theirs: list[Row]) -> object:
    for a, b in zip(ours, theirs, strict=False):
        if a != b:
            return (a, b)
    return (len(ours), len(theirs))


def compiled_qualnames(code: CodeType) -> Iterator[str]:
    for const in code.co_consts:
        if isinstance(const, CodeType):
            name = const.co_qualname
            anonymous = name.rsplit(".", 1)[-1].startswith("<")
            if const.co_flags & inspect.CO_NEWLOCALS and not anonymous:
                yield name
            yield from compiled_qualnames(const)


def test_qualnames_are_the_ones_python_writes(stdlib: list[tuple[str, bytes, ast.Module]]) -> None:
    # co_qualname is what __qualname__ of the function objects will be.
    for path, _source, tree in stdlib[::7]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                code = compile(tree, path, "exec")
            except SyntaxError:
                continue  # parses but does not compile (e.g. a misplaced `return`)
        ours = sorted(m.qualname for m in measure_source(_source, path))
        assert ours == sorted(compiled_qualnames(code)), path
