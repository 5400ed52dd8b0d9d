"""Per-function length and cyclomatic complexity of Python source, for the quality grader.

The rules are in ``docs/metrics.md``. In short: every function and method is reported
with its qualified name as Python writes ``__qualname__``, its length in lines and its
complexity: 1, plus one for each ``if``/``elif``, loop, ``except``, conditional
expression, comprehension clause, ``assert`` and ``match`` case, plus one for each extra
operand of ``and``/``or``. Nested functions and classes are measured apart; lambdas and
comprehensions count toward the function that holds them; code outside functions counts
toward nothing.

The walk must stay cheap next to ``ast.parse`` (``bench/metrics.py`` holds it to 1.2
times the parse), so it avoids ``ast.walk`` and visitors: it walks statements with an
explicit stack, and only looks inside a simple statement (an assignment, a call, a
``return``...) when the statement's lines hold ``and``, ``or``, ``if`` or ``for``:
without one of those keywords no expression can count, and most statements have none.
"""

from __future__ import annotations

import ast
import importlib.util
import operator
import pathlib
import re
import warnings
from dataclasses import dataclass

__all__ = ["FunctionMetrics", "measure_file", "measure_source"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionMetrics:
    """One function or method: where it is, what Python calls it, and its two measures."""

    path: str  # as given by the caller (POSIX relative path)
    line: int  # the ``def`` line; decorators are not included
    qualname: str  # ``f``, ``C.m``, ``f.<locals>.g``, ``f.<locals>.C.m``
    length: int  # lines from ``def`` to the last line of the body
    complexity: int


_Function = ast.FunctionDef | ast.AsyncFunctionDef
_Scope = ast.Module | ast.ClassDef | _Function
_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})

# Decision points that add one each wherever they stand. ``BoolOp`` and
# ``comprehension`` are weighed in ``_expression_complexity``.
_DECISIONS = frozenset(
    {ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case, ast.Assert}
)

# Fields that never hold a node that can count: identifiers, constants, flags, comments,
# imported names, and the operator and context singletons (``Add``, ``Load``...).
_NOT_NODES = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "asname", "names", "module",
     "kwd_attrs", "rest", "kind", "type_comment", "is_async", "simple", "conversion",
     "level", "tag"}
)  # fmt: skip
# Fields that hold statements (or handlers and cases, which hold statements).
_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})

_NODE_CLASSES = [c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST)]
# Per class, the fields worth descending into. ``Constant.value`` and
# ``MatchSingleton.value`` are constants, not nodes. ``None`` stands in the stacks for
# absent optional fields and for the gaps of ``Dict.keys`` and ``kw_defaults``.
_CHILDREN: dict[type, tuple[str, ...]] = {
    c: tuple(f for f in c._fields if f not in _NOT_NODES) for c in _NODE_CLASSES
}
_CHILDREN.update({ast.Constant: (), ast.MatchSingleton: (), type(None): ()})
# Per statement class (handlers and cases included): what it adds to complexity, the
# fields that hold statements, and the other fields (the header: a test, a target, a
# signature...). Functions and classes have ``None`` for blocks: they are measured apart.
_STATEMENT_RULES: dict[type, tuple[int, tuple[str, ...] | None, tuple[str, ...]]] = {
    c: (
        1 if c in _DECISIONS else 0,
        None if c in _SCOPES else tuple(f for f in _CHILDREN[c] if f in _BLOCKS),
        tuple(f for f in _CHILDREN[c] if f not in _BLOCKS),
    )
    for c in _NODE_CLASSES
    if issubclass(c, ast.stmt | ast.excepthandler | ast.match_case)
}

# A BoolOp, an IfExp or a comprehension cannot be written without ``and``, ``or``,
# ``if`` or ``for`` (which ends in ``or``). A keyword must end before a character that
# cannot continue a name (the tokenizer takes any non-ASCII character as part of a
# name), but may follow anything: ``1if x else 2`` and ``0xfor`` are valid Python. So
# text without a match holds nothing that counts; a match in a string or a comment
# only costs time. Plain ``in`` tests come first: they are several times faster.
_KEYWORD = re.compile(r"(?:and|or|if)\b")
_search = _KEYWORD.search


def measure_source(source: str | bytes, path: str) -> list[FunctionMetrics]:
    """Measure every function and method in ``source``, in source order.

    ``source`` is text, or bytes decoded as Python does (BOM, encoding cookie).
    ``path`` is only copied into the results and used in error messages.

    Raises:
        SyntaxError: the source does not parse, is not decodable, or holds null bytes.
    """
    text = _decode(source)
    tree = _parse(text, path)
    # Python counts lines after turning \r\n and \r into \n; str.splitlines() would
    # also split at form feeds and other separators and shift the line numbers.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    found: list[tuple[int, int, FunctionMetrics]] = []
    scopes: list[tuple[_Scope, str]] = [(tree, "")]  # a scope and its qualname
    while scopes:
        scope, qualname = scopes.pop()
        kind = type(scope)
        measured = kind is not ast.Module and kind is not ast.ClassDef
        complexity, nested, declared_global = _walk_scope(scope, lines, measured)
        if measured:
            metrics = FunctionMetrics(
                path=path,
                line=scope.lineno,  # type: ignore[union-attr]
                qualname=qualname,
                length=scope.end_lineno - scope.lineno + 1,  # type: ignore[operator,union-attr]
                complexity=complexity,
            )
            found.append((scope.lineno, scope.col_offset, metrics))  # type: ignore[union-attr]
        if nested:
            prefix = f"{qualname}.<locals>." if measured else f"{qualname}." if qualname else ""
            for child in nested:
                # A name declared ``global`` where the child is defined is named as at
                # the top level, as CPython's compiler does (``compiler_set_qualname``).
                name = child.name  # type: ignore[union-attr]
                scopes.append((child, name if name in declared_global else prefix + name))
    found.sort(key=_position)
    return [metrics for _, _, metrics in found]


_position = operator.itemgetter(0, 1)


def measure_file(path: pathlib.Path, display: str | None = None) -> list[FunctionMetrics]:
    """Measure the Python file at ``path``; results carry ``display`` (default: ``path``)."""
    shown = display if display is not None else path.as_posix()
    return measure_source(path.read_bytes(), shown)


def _decode(source: str | bytes) -> str:
    """Decode bytes as the interpreter does, so that line numbers match the text."""
    if isinstance(source, str):
        return source
    try:
        return importlib.util.decode_source(source)
    except (LookupError, ValueError) as exc:  # an unknown codec, undecodable bytes
        raise SyntaxError(f"cannot decode the source: {exc}") from exc


def _parse(text: str, path: str) -> ast.Module:
    # Invalid escapes and the like warn while parsing: the metrics must print nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=path)
        except ValueError as exc:  # null bytes, before Python 3.12
            raise SyntaxError(str(exc)) from exc


def _walk_scope(
    scope: _Scope, lines: list[str], measured: bool
) -> tuple[int, list[_Scope], set[str]]:
    """Complexity of ``scope``, the functions and classes directly in it, and its globals.

    Nested functions and classes are returned, not entered: they are measured apart,
    with their decorators, defaults, annotations and, for a class, bases (the spec).
    Unless ``measured`` (a module or a class), only statements that hold statements are
    looked at: nothing else counts or holds a function.
    """
    complexity = 1
    nested: list[_Scope] = []
    declared_global: set[str] = set()
    statements: list[ast.AST] = list(scope.body)
    expressions: list[ast.AST | None] = []
    rules, search, global_ = _STATEMENT_RULES, _search, ast.Global
    if measured and _signature_may_count(scope, lines):  # type: ignore[arg-type]
        _push_fields(expressions, scope, rules[type(scope)][2])
    pop, push = statements.pop, expressions.append
    while statements:
        node = pop()
        weight, blocks, header = rules[type(node)]
        if blocks:
            complexity += weight
            for field in blocks:
                statements += getattr(node, field)
            if measured:
                for field in header:
                    value = getattr(node, field)
                    if type(value) is list:
                        expressions += value
                    else:
                        push(value)
        elif blocks is None:
            nested.append(node)  # type: ignore[arg-type]
        elif measured and header:  # a simple statement: only expressions below it
            complexity += weight
            first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
            text = lines[first - 1] if first == last else "\n".join(lines[first - 1 : last])
            if ("or" in text or "if" in text or "and" in text) and search(text):
                push(node)
        elif type(node) is global_:
            declared_global.update(node.names)  # type: ignore[attr-defined]
    if expressions:
        complexity += _expression_complexity(expressions)
    return complexity, nested, declared_global


def _signature_may_count(function: _Function, lines: list[str]) -> bool:
    """Whether the decorators, defaults or annotations of ``function`` may count.

    The text read runs from the first decorator to where the body begins. ``col_offset``
    counts UTF-8 bytes, never fewer than characters, so on a line with non-ASCII text
    the span can only be too long, never too short.
    """
    first = function.decorator_list[0].lineno if function.decorator_list else function.lineno
    body = function.body[0]
    text = "\n".join(lines[first - 1 : body.lineno - 1] + [lines[body.lineno - 1][: body.col_offset]])
    return ("or" in text or "if" in text or "and" in text) and _search(text) is not None


def _push_fields(stack: list[ast.AST | None], node: ast.AST, fields: tuple[str, ...]) -> None:
    for field in fields:
        value = getattr(node, field)
        if type(value) is list:
            stack += value
        else:
            stack.append(value)


def _expression_complexity(stack: list[ast.AST | None]) -> int:
    """What the expressions in ``stack`` (and everything under them) add to complexity.

    No function or class can stand in an expression, so the walk need not look for them.
    """
    complexity = 0
    pop, push, extend = stack.pop, stack.append, stack.extend
    children, bool_op, if_exp, comprehension = _CHILDREN, ast.BoolOp, ast.IfExp, ast.comprehension
    while stack:
        node = pop()
        kind = type(node)
        if kind is bool_op:
            complexity += len(node.values) - 1  # type: ignore[union-attr]
        elif kind is if_exp:
            complexity += 1
        elif kind is comprehension:
            complexity += 1 + len(node.ifs)  # type: ignore[union-attr]
        for field in children[kind]:
            child = getattr(node, field)
            if type(child) is list:
                extend(child)
            else:
                push(child)
    return complexity
