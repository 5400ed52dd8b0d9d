"""Per-function length and cyclomatic complexity of Python source, for the quality grader.

Every function and method is reported with its qualified name as Python writes
``__qualname__``, its length in lines, and its complexity: 1, plus one for each
``if``/``elif``, loop, ``except``, conditional expression, comprehension ``for`` and
``if``, ``assert`` and ``match`` case, plus one for each operand of ``and``/``or``
after the first. Nested functions and classes are measured apart, with their
decorators, defaults and annotations; lambdas and comprehensions count toward the
function that holds them; code outside functions counts toward nothing. The rules in
full are in ``docs/metrics.md``.

Measuring must cost little more than parsing, which any tool does anyway:
``bench/metrics.py`` holds ``measure_source`` to 1.2 times ``ast.parse`` over the
standard library. So the walk never uses ``ast.walk`` or a visitor: it walks statements
with explicit stacks and tables built once per node class, and reads the source text to
skip most expressions (see ``_KEYWORD``).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib.util
import operator
import pathlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["FunctionMetrics", "measure_file", "measure_source", "measuring_many"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionMetrics:
    """One function or method: where it is, what Python calls it, and its two measures."""

    path: str  # as given by the caller (POSIX relative path)
    line: int  # the ``def`` line; decorators are not included
    qualname: str  # ``f``, ``C.m``, ``f.<locals>.g``, ``f.<locals>.C.m``
    length: int  # lines from ``def`` to the end of the body
    complexity: int


def measure_source(source: str | bytes, path: str) -> list[FunctionMetrics]:
    """Measure every function and method in ``source``, in source order.

    ``source`` is text, or bytes that are decoded as Python does (BOM, encoding
    cookie). ``path`` is copied into the results and names the file in errors.

    Raises:
        SyntaxError: ``source`` does not parse, cannot be decoded, holds null bytes, or
            is nested too deeply for Python's parser (``TOO_DEEP``, at line 1).
    """
    try:
        return _measure(source, path)
    except (RecursionError, MemoryError):  # CPython's parser and our walk both recurse
        raise SyntaxError(TOO_DEEP, (path, 1, 1, None)) from None


TOO_DEEP = "too deeply nested for Python's parser"


def _measure(source: str | bytes, path: str) -> list[FunctionMetrics]:
    text = _decode(source)
    tree = _parse(text, path)
    # Python numbers lines after turning \r\n and \r into \n. str.splitlines() would
    # also split at form feeds and other separators, and shift the numbers.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    found: list[FunctionMetrics] = []
    scopes: list[tuple[Any, str]] = [(tree, "")]  # a scope and its qualname
    while scopes:
        scope, qualname = scopes.pop()
        is_function = type(scope) in _FUNCTIONS
        complexity, nested, declared_global = _walk_scope(scope, lines, is_function)
        if is_function:
            length = scope.end_lineno - scope.lineno + 1
            found.append(_new_metrics(path, scope.lineno, qualname, length, complexity))
        if nested:
            prefix = f"{qualname}.<locals>." if is_function else f"{qualname}." if qualname else ""
            for child in nested:
                # A name declared ``global`` where the child is defined is named as at
                # the top level, as CPython's compiler does (``compiler_set_qualname``).
                name = child.name
                scopes.append((child, name if name in declared_global else prefix + name))
    # Source order is by line, then column; but a ``def`` always begins a logical line
    # of its own, so no two functions share a line and the line alone orders them.
    found.sort(key=_line)
    return found


def measure_file(path: pathlib.Path, display: str | None = None) -> list[FunctionMetrics]:
    """Measure the Python file at ``path``; results carry ``display`` (default: ``path``)."""
    shown = display if display is not None else path.as_posix()
    return measure_source(path.read_bytes(), shown)


@contextlib.contextmanager
def measuring_many() -> Iterator[None]:
    """Tune CPython's cyclic garbage collector while many files are measured; put back
    on leaving.

    A syntax tree is hundreds of thousands of objects that all live until their file is
    measured, and none of them is in a reference cycle, so reference counting frees each
    tree whole. With the default thresholds the collector runs every 700 allocations and
    walks the young tree each time for nothing, and its full collections walk every
    module loaded before (the engine's, pydantic's): half the cost of ``repogym metrics``
    over the standard library went there. Inside this block what was loaded before is
    frozen (``gc.freeze``: it lives as long as the process and is not walked again) and
    the young generation is collected every 200,000 allocations, as mypy tunes it for its
    own parsing. The collector still runs and finds the cycles other code makes.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(200_000, thresholds[1], thresholds[2])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


_FUNCTIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef})
_SCOPES = _FUNCTIONS | {ast.ClassDef}

# Decision points that are statements (handlers and cases included): one each.
_DECISIONS = frozenset(
    {ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case, ast.Assert}
)

# Fields that never hold a node that can count: identifiers, constants, flags, comments,
# imported names, and the operator and context singletons (``Add``, ``Load``...).
# ``str`` is the source text of a t-string's ``Interpolation`` (Python 3.14).
_NOT_NODES = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "asname", "names", "module",
     "kwd_attrs", "rest", "kind", "type_comment", "is_async", "simple", "conversion",
     "level", "tag", "str"}
)  # fmt: skip
# Fields that hold statements (or handlers and cases, which hold statements).
_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})

_NODE_CLASSES = [c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST)]
# Per node class, the fields worth walking into. ``Constant.value`` and
# ``MatchSingleton.value`` are constants, not nodes. ``None`` stands on the stacks for
# absent optional fields and for the gaps in ``Dict.keys`` and ``kw_defaults``.
_CHILDREN: dict[type, tuple[str, ...]] = {
    c: tuple(f for f in c._fields if f not in _NOT_NODES) for c in _NODE_CLASSES
}
_CHILDREN.update({ast.Constant: (), ast.MatchSingleton: (), type(None): ()})

# Per statement class (handlers and cases included): what it adds to complexity, its
# fields that hold statements, and its other fields (the header: a test, a target, a
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

# No expression counts unless it holds a BoolOp, an IfExp or a comprehension, and none
# of those can be written without ``and``, ``or``, ``if`` or ``for`` (which ends in
# ``or``). So a simple statement (an assignment, a call, a ``return``...) whose lines
# hold none of them is not walked: most are not. The keyword must end before a
# character that cannot continue a name (the tokenizer takes any non-ASCII character as
# part of a name) but may follow anything: ``1if x else 2`` and ``0xfor`` are valid.
# A match in a string or a comment only costs a walk. Plain ``in`` tests run first:
# they are several times faster than the expression.
_KEYWORD = re.compile(r"(?:and|or|if)\b")

_line = operator.attrgetter("line")


def _decode(source: str | bytes) -> str:
    """Decode bytes as the interpreter does (BOM, cookie, newlines): the text is then
    what is parsed, and its lines are the lines the tree numbers."""
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


def _walk_scope(scope: Any, lines: list[str], is_function: bool) -> tuple[int, list[Any], set[str]]:
    """Complexity of ``scope``, the functions and classes directly in it, and its globals.

    Nested functions and classes are returned, not entered: they are measured apart,
    with their decorators, defaults and annotations. In a module or a class only
    statements that hold statements are looked at: nothing else holds a function. The
    walk is typed ``Any``: it reaches fields by name, through the tables above.
    """
    complexity = 1
    nested: list[Any] = []
    declared_global: set[str] = set()
    blocks: list[list[Any]] = [scope.body]
    expressions: list[Any] = []
    rules, search, global_ = _STATEMENT_RULES, _KEYWORD.search, ast.Global
    if is_function:
        _push_signature(expressions, scope, lines)
    push = expressions.append
    while blocks:
        for node in blocks.pop():
            weight, inner, header = rules[type(node)]
            if inner:  # a compound statement
                complexity += weight
                for field in inner:
                    blocks.append(getattr(node, field))
                if is_function:
                    _push_fields(expressions, node, header)
            elif inner is None:
                nested.append(node)
            elif is_function and header:  # a simple statement: only expressions below it
                complexity += weight
                text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                if ("or" in text or "if" in text or "and" in text) and search(text):
                    push(node)
            elif type(node) is global_:
                declared_global.update(node.names)
    return complexity + _expression_complexity(expressions), nested, declared_global


def _push_signature(stack: list[Any], function: Any, lines: list[str]) -> None:
    """Push the decorators, defaults and annotations of ``function`` if its text, read
    up to where the body begins, may branch (a column counts UTF-8 bytes, never fewer
    than characters: the text can only be longer)."""
    first = function.decorator_list[0].lineno if function.decorator_list else function.lineno
    body = function.body[0]
    text = "\n".join(lines[first - 1 : body.lineno - 1]) + lines[body.lineno - 1][: body.col_offset]
    if ("or" in text or "if" in text or "and" in text) and _KEYWORD.search(text):
        _push_fields(stack, function, _STATEMENT_RULES[type(function)][2])


def _push_fields(stack: list[Any], node: ast.AST, fields: tuple[str, ...]) -> None:
    for field in fields:
        value = getattr(node, field)
        if type(value) is list:
            stack += value
        else:
            stack.append(value)


def _expression_complexity(stack: list[Any]) -> int:
    """What the nodes on ``stack``, and every node below them, add to complexity.

    No function or class can stand in an expression, so the walk need not look for them.
    """
    complexity = 0
    pop, push, extend = stack.pop, stack.append, stack.extend
    children, bool_op, if_exp, comprehension = _CHILDREN, ast.BoolOp, ast.IfExp, ast.comprehension
    while stack:
        node = pop()
        kind = type(node)
        if kind is bool_op:
            complexity += len(node.values) - 1
        elif kind is if_exp:
            complexity += 1
        elif kind is comprehension:
            complexity += 1 + len(node.ifs)
        for field in children[kind]:
            child = getattr(node, field)
            if type(child) is list:
                extend(child)
            else:
                push(child)
    return complexity


# The generated __init__ of a frozen dataclass sets each field through
# object.__setattr__ and costs more than walking a small function; setting the slots
# through their descriptors does the same in a third of the time (1% of the parse time
# over the standard library). A test checks that the two build equal values.
_SLOT_NAMES = ("path", "line", "qualname", "length", "complexity")
_set_path, _set_line, _set_qualname, _set_length, _set_complexity = (
    vars(FunctionMetrics)[name].__set__ for name in _SLOT_NAMES
)


def _new_metrics(
    path: str, line: int, qualname: str, length: int, complexity: int
) -> FunctionMetrics:
    metrics: FunctionMetrics = object.__new__(FunctionMetrics)
    _set_path(metrics, path)
    _set_line(metrics, line)
    _set_qualname(metrics, qualname)
    _set_length(metrics, length)
    _set_complexity(metrics, complexity)
    return metrics
