"""Turning schema problems into one-line messages with a line number, the value and a fix."""

from __future__ import annotations

import datetime
import difflib
import math
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from repogym.task._yaml import Positions

# What a value of the wrong type should have been, by pydantic's error type.
_EXPECTED = {
    "tuple_type": "a list, e.g. `[a, b]`",
    "list_type": "a list, e.g. `[a, b]`",
    "dict_type": "a mapping of keys",
    "model_type": "a mapping of keys",
    "model_attributes_type": "a mapping of keys",
    "bool_type": "`true` or `false`",
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
}
# The tags of the schema's unions (a list of ids, or its keyword): parts of an error's
# location that are no key of the file. No key can be written so (brackets).
UNION_TAGS = ("[ids]", "[keyword]")
# Numbers YAML 1.1 leaves as strings: an exponent needs a `.` and a sign (`1.0e+20`).
_EXPONENT = re.compile(r"([-+]?)(\d+)(?:\.(\d*))?[eE]([-+]?)(\d+)")
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")


def schema_lines(
    error: ValidationError, source: str, positions: Positions, root: type[BaseModel]
) -> list[str]:
    """One line per schema error, in the order of the file."""
    found = []
    for item in error.errors(include_url=False):
        # A union's member is no key of the file.
        loc = tuple(str(part) for part in item["loc"] if part not in UNION_TAGS)
        found.append(
            (
                line_of(loc, positions),
                f"{where(source, loc, positions)}: {describe(item, loc, root)}",
            )
        )
    return [line for _, line in sorted(found, key=lambda pair: pair[0])]


def line_of(loc: tuple[str, ...], positions: Positions) -> int:
    """The line of the key ``loc``, or of the nearest enclosing key that has one; else 0."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in positions:
            return positions[loc[:end]]
    return 0


def where(source: str, loc: tuple[str, ...], positions: Positions) -> str:
    """``file:line`` of the key ``loc``, or ``file`` when no line is known."""
    line = line_of(loc, positions)
    return f"{source}:{line}" if line else source


def describe(item: ErrorDetails, loc: tuple[str, ...], root: type[BaseModel]) -> str:
    """One line for one schema error: which key, which value, what is wrong, how to fix."""
    key = key_name(loc)
    kind = item["type"]
    value = item.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1])
        guess = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean `{guess[0]}`?" if guess else f"allowed keys: {', '.join(allowed)}"
        return f"unknown key `{key}`; {hint}"
    if kind == "missing":
        return _missing(loc, root)
    message = item["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind in _EXPECTED:
        if value is None:
            return f"`{key}` has no value: give it {_EXPECTED[kind]}, or remove the key"
        quote = " (quote it in YAML)" if kind == "string_type" else ""
        message = f"should be {_EXPECTED[kind]}{quote}{_number_hint(value, kind)}"
    elif message.startswith("Input should"):
        message = "should" + message.removeprefix("Input should")
    if not key or isinstance(value, dict):
        return f"`{key}`: {message}" if key else message
    return f"`{key}` = {_show(value)}: {message}"


def key_name(loc: tuple[str, ...]) -> str:
    """The dotted name of the key at ``loc``; a part that is not plain printable text
    (a line break, a backtick, a control character) is shown as a Python string, so
    that a message stays one line."""
    return ".".join(
        part if part.isprintable() and "`" not in part and part.strip() == part else repr(part)
        for part in loc
    )


def _missing(loc: tuple[str, ...], root: type[BaseModel]) -> str:
    key = key_name(loc)
    if key == "version":
        return "`version` is required; add `version: 1`"
    field = _field(root, loc)
    if field is not None and typing.get_origin(field.annotation) is typing.Literal:
        choices = [f"`{choice}`" for choice in typing.get_args(field.annotation)]
        return f"`{key}` is required; add `{loc[-1]}:` with one of {', '.join(choices)}"
    under = f" under `{'.'.join(loc[:-1])}`" if loc[:-1] else ""
    return f"`{key}` is required; add `{loc[-1]}:`{under} (see docs/task.md)"


def _number_hint(value: Any, kind: str) -> str:
    """How to write a number YAML read as something else, or ``""``."""
    whole = kind == "int_type"
    if whole and isinstance(value, float) and value.is_integer():
        return f"; write it as `{int(value)}`"
    if kind not in ("int_type", "float_type") or not isinstance(value, str):
        return ""
    text = value.strip()
    match = _EXPONENT.fullmatch(text)
    if match:
        number = float(text)
        if whole and number.is_integer() and math.isfinite(number):
            return f"; write it as `{int(number)}`"
        sign, digits, fraction, exponent_sign, exponent = match.groups()
        written = f"{sign}{digits}.{fraction or '0'}e{exponent_sign or '+'}{exponent}"
        return f"; YAML 1.1 reads `{text}` as a string: write it as `{written}`"
    if _PLAIN_NUMBER.fullmatch(text):
        return "; remove the quotes around it"
    return ""


def _show(value: Any) -> str:
    """``value`` as it would be written in YAML (``true``, ``null``, ``.inf``), shortened."""
    if value is None or isinstance(value, bool):
        text = {None: "null", True: "true", False: "false"}[value]
    elif isinstance(value, float) and not math.isfinite(value):
        text = ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    elif isinstance(value, datetime.date):
        text = value.isoformat()
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field(root: type[BaseModel], loc: tuple[str, ...]) -> FieldInfo | None:
    model = _model_at(root, loc[:-1])
    return model.model_fields.get(loc[-1]) if model and loc else None


def _allowed_keys(root: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    model = _model_at(root, loc)
    return list(model.model_fields) if model else []


def _model_at(root: type[BaseModel], loc: tuple[str, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            break
        if part.isdigit():
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field else None
    return model


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
