"""Turning YAML and schema problems into one-line messages with a line number and a fix."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails

from repogym.errors import TaskError

_SHOULD_BE = {
    "tuple_type": "should be a list, e.g. `[a, b]`",
    "list_type": "should be a list, e.g. `[a, b]`",
    "dict_type": "should be a mapping of keys",
    "model_type": "should be a mapping of keys",
    "model_attributes_type": "should be a mapping of keys",
    "bool_type": "should be `true` or `false`",
    "int_type": "should be a whole number",
    "float_type": "should be a number",
    "string_type": "should be a string (quote it in YAML)",
}


def yaml_positions(raw: bytes) -> dict[tuple[str, ...], int]:
    """The 1-based line of every key and list item, by its path; duplicate keys are errors."""
    root = yaml.compose(raw, Loader=yaml.SafeLoader)
    positions: dict[tuple[str, ...], int] = {}
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())] if root is not None else []
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = str(key_node.value)
                child = (*path, key)
                if key in seen:
                    raise TaskError(
                        f":{key_node.start_mark.line + 1}: key `{'.'.join(child)}` appears "
                        "twice; keep one"
                    )
                seen.add(key)
                positions[child] = key_node.start_mark.line + 1
                stack.append((value_node, child))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = (*path, str(index))
                positions[child] = item.start_mark.line + 1
                stack.append((item, child))
    return positions


def describe(item: ErrorDetails, loc: tuple[str, ...], root: type[BaseModel]) -> str:
    """One line for one schema error: which key, which value, what is wrong, how to fix."""
    key = ".".join(loc)
    kind = item["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1])
        guess = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean `{guess[0]}`?" if guess else f"allowed keys: {', '.join(allowed)}"
        return f"unknown key `{key}`; {hint}"
    if kind == "missing":
        return (
            "`version` is required; add `version: 1`"
            if key == "version"
            else (f"`{key}` is required; add it")
        )
    message = item["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind in _SHOULD_BE:
        message = _SHOULD_BE[kind]
    elif message.startswith("Input should"):
        message = "should" + message.removeprefix("Input should")
    if not key or isinstance(item.get("input"), dict):
        return f"`{key}`: {message}" if key else message
    return f"`{key}` = {_show(item.get('input'))}: {message}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_keys(root: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            break
        if part.isdigit():
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field else None
    return list(model.model_fields) if model else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model class inside ``X``, ``X | None`` or ``tuple[X, ...]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (
        typing.Union,
        tuple,
        list,
    ):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found:
                return found
    return None
