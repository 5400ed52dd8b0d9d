"""``measure_source`` against an independent reading of the rules, over the stdlib.

The reference below is written the other way round on purpose: a recursive
``ast.NodeVisitor`` with one ``visit_`` method per decision point and a stack of scopes,
which looks at every node and takes ``global`` declarations from ``symtable``, where
``repogym.metrics`` walks statements with tables, skips expressions by their text and
finds ``global`` statements itself. CPython's compiler checks the qualnames once more.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import inspect
import io
import symtable
import sys
import tokenize
import types
import warnings
from collections.abc import Iterator

import pytest

from repogym.metrics import measure_source
from tests.support.stdlib import parse, stdlib_sources

Row = tuple[str, int, str, int, int]  # path, line, qualname, length, complexity


@dataclasses.dataclass
class _Scope:
    qualname: str
    table: symtable.SymbolTable | None  # None: not worth looking up (no ``global``)
    is_function: bool
    private: str  # the name of the innermost class, which mangles ``__names``
    complexity: int = 1

    def declares_global(self, name: str) -> bool:
        if self.table is None:
            return False
        stripped = self.private.lstrip("_")
        if stripped and name.startswith("__") and not name.endswith("__"):
            name = f"_{stripped}{name}"  # the symbol table holds mangled names
        return self.table.lookup(name).is_declared_global()


class ReferenceMetrics(ast.NodeVisitor):
    """The rules of ``docs/metrics.md``, read one node at a time."""

    def __init__(self, path: str, table: symtable.SymbolTable | None) -> None:
        self.path = path
        self.scopes = [_Scope("", table, is_function=False, private="")]
        self.rows: list[Row] = []

    def add(self, amount: int) -> None:
        scope = self.scopes[-1]
        if scope.is_function:  # module and class code counts toward nothing
            scope.complexity += amount

    def enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> _Scope:
        parent = self.scopes[-1]
        table = None
        if parent.table is not None:
            tables = parent.table.get_children()
            same = (t for t in tables if (t.get_name(), t.get_lineno()) == (node.name, node.lineno))
            table = next(same, None)
        if parent.declares_global(node.name):
            qualname = node.name
        elif parent.is_function:
            qualname = f"{parent.qualname}.<locals>.{node.name}"
        elif parent.qualname:
            qualname = f"{parent.qualname}.{node.name}"
        else:
            qualname = node.name
        is_function = not isinstance(node, ast.ClassDef)
        private = parent.private if is_function else node.name
        scope = _Scope(qualname, table, is_function, private)
        self.scopes.append(scope)
        # Everything under the node belongs to it: decorators, defaults, annotations,
        # bases, keywords and body.
        self.generic_visit(node)
        self.scopes.pop()
        return scope

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope = self.enter(node)
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        self.rows.append((self.path, node.lineno, scope.qualname, length, scope.complexity))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.enter(node)

    def count_one(self, node: ast.AST) -> None:
        self.add(1)
        self.generic_visit(node)

    visit_If = visit_For = visit_AsyncFor = visit_While = count_one
    visit_ExceptHandler = visit_IfExp = visit_Assert = visit_match_case = count_one

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self.add(len(node.values) - 1)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.add(1 + len(node.ifs))
        self.generic_visit(node)


def reference_rows(path: str, source: bytes) -> list[Row]:
    tree = parse(source)
    table = None
    if b"global" in source:  # symtable costs a second parse: only where it can matter
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = symtable.symtable(source.decode(encoding), path, "exec")
    visitor = ReferenceMetrics(path, table)
    visitor.visit(tree)
    return sorted(visitor.rows, key=lambda row: row[1])


def measured_rows(path: str, source: bytes) -> list[Row]:
    return [
        (m.path, m.line, m.qualname, m.length, m.complexity) for m in measure_source(source, path)
    ]


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    found = stdlib_sources()
    assert len(found) > 500, "the standard library was not found"
    return found


def _differences(files: list[tuple[str, bytes]]) -> Iterator[str]:
    for path, source in files:
        expected = reference_rows(path, source)
        actual = measured_rows(path, source)
        if actual != expected:
            only_expected = sorted(set(expected) - set(actual))[:3]
            only_actual = sorted(set(actual) - set(expected))[:3]
            yield f"{path}: reference {only_expected}, measured {only_actual}"


def test_every_stdlib_function_matches_the_reference(files: list[tuple[str, bytes]]) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # the reference recurses into deep expressions
    try:
        differences = list(_differences(files))
    finally:
        sys.setrecursionlimit(limit)
    assert not differences, f"{len(differences)} files differ:\n" + "\n".join(differences[:20])


@pytest.mark.skipif(sys.version_info < (3, 11), reason="co_qualname is new in Python 3.11")
def test_every_stdlib_qualname_is_the_compilers(files: list[tuple[str, bytes]]) -> None:
    compared = 0
    differences = []
    for path, source in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                code = compile(source, path, "exec")
        except SyntaxError:  # parses, but does not compile: ``return`` outside a function...
            continue
        expected = collections.Counter(_function_qualnames(code))
        measured = measure_source(source, path)
        actual = collections.Counter(m.qualname for m in measured)
        if actual != expected:  # the compiler may have dropped unreachable functions
            dropped = _unreachable_lines(parse(source))
            actual = collections.Counter(m.qualname for m in measured if m.line not in dropped)
        compared += 1
        if actual != expected:
            differences.append(f"{path}: {sorted((actual - expected) | (expected - actual))[:5]}")
    assert compared > 500
    assert not differences, "\n".join(differences[:20])


def _function_qualnames(code: types.CodeType) -> Iterator[str]:
    """The qualnames of the functions compiled into ``code``, at any depth."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _function_qualnames(const)
    # Functions get fresh locals; class bodies and the module do not. Lambdas and
    # comprehensions are functions too, but are not measured apart.
    if code.co_flags & inspect.CO_NEWLOCALS and not code.co_name.startswith("<"):
        yield code.co_qualname


def _unreachable_lines(tree: ast.Module) -> set[int]:
    """Lines of the ``def`` statements the compiler drops: those after a ``return``,
    ``raise``, ``break`` or ``continue`` in the same block (one in the 3.11 stdlib)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            ends = [i for i, s in enumerate(block) if isinstance(s, _JUMPS)]
            for statement in block[ends[0] + 1 :] if ends else ():
                lines.update(n.lineno for n in ast.walk(statement) if isinstance(n, _DEFS))
    return lines


_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
