"""Reading the YAML of a task file: plain data, and the line of every key and list item.

A task file is small and flat, so the loader refuses what only makes trouble in one:
aliases (``*name``, which let a few hundred bytes expand to billions of values), merge
keys (``<<``), keys that YAML reads as something other than a string (``1:``, ``yes:``),
nesting deeper than :data:`MAX_DEPTH`, and more than one document. Every problem is one
:class:`~repogym.errors.TaskError` line with ``file:line`` and what to write instead.
"""

from __future__ import annotations

from typing import Any

import yaml

from repogym.errors import TaskError

# A task nests four levels at most (`grading.graders.0.grader`); well-formed files never
# come near this, and PyYAML's composer recurses once per level.
MAX_DEPTH = 16
Positions = dict[tuple[str, ...], int]

# What YAML 1.1 reads an unquoted key as, for keys that do not come out as strings.
_KINDS = {
    "int": "a number",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
    "timestamp": "a date",
    "merge": "a merge key",
    "value": "a value key",
}
_NAMES = {("env",): "an environment variable", ("grading", "weights"): "a grader"}


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases, and with a bound on the nesting."""

    def __init__(self, raw: bytes, source: str) -> None:
        super().__init__(raw)
        self.source = source
        self.depth = 0

    def refuse(self, mark: yaml.Mark | None, message: str) -> TaskError:
        where = f"{self.source}:{mark.line + 1}" if mark else self.source
        return TaskError(f"{where}: {message}")

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        is_alias = self.check_event(yaml.AliasEvent)  # also loads the next event
        event = self.current_event
        if is_alias:
            raise self.refuse(
                event.start_mark,
                f"the YAML alias `*{event.anchor}` is not allowed in a task file; "
                "write the value out in full",
            )
        if self.depth >= MAX_DEPTH:
            raise self.refuse(
                event.start_mark,
                f"values are nested more than {MAX_DEPTH} levels deep; a task file needs "
                "at most 4: remove the extra brackets or indentation",
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as error:
            # A date such as 2024-13-01, or an integer of more than 4300 digits.
            kind = _KINDS.get(node.tag.rsplit(":", 1)[-1], "a value")
            raise self.refuse(
                node.start_mark,
                f"YAML reads `{_short(node.value)}` as {kind} but cannot make one "
                f"({str(error).split(':')[0]}); fix it, or quote it if you meant a string",
            ) from None


def load_yaml(raw: bytes, source: str) -> tuple[Any, Positions]:
    """The data of ``raw`` (``None`` when empty), and the line of every key by its path."""
    loader = None
    try:
        loader = _Loader(raw, source)  # reads the encoding: can raise a ReaderError
        root = loader.get_single_node()
        if root is None:
            return None, {}
        positions = _positions(root, loader)
        return loader.construct_document(root), positions
    except yaml.reader.ReaderError as error:
        raise TaskError(_unreadable(error, raw, source)) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        if problem == "but found another document":
            raise TaskError(
                f"{where}: a task file is one YAML document; remove this `---` and what "
                "follows, or merge it into the first"
            ) from None
        raise TaskError(f"{where}: not valid YAML: {problem}; fix the syntax there") from None
    finally:
        if loader is not None:
            loader.dispose()


def _positions(root: yaml.Node, loader: _Loader) -> Positions:
    """The 1-based line of every key and list item; duplicate and non-string keys are errors."""
    positions: Positions = {}
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = _key(key_node, path, loader)
                child = (*path, key)
                if key in seen:
                    raise loader.refuse(
                        key_node.start_mark, f"key `{'.'.join(child)}` appears twice; keep one"
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


def _key(node: yaml.Node, path: tuple[str, ...], loader: _Loader) -> str:
    """The text of a key, which must be a string: ``1:``, ``yes:``, ``[a]:`` are refused."""
    where = f" in `{'.'.join(path)}`" if path else ""
    name = _NAMES.get(path, "a setting")
    if not isinstance(node, yaml.ScalarNode):
        raise loader.refuse(
            node.start_mark,
            f"a key{where} is a {'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}; "
            f"a key must be a plain string naming {name}: write it as a word before the `:`",
        )
    if node.tag == "tag:yaml.org,2002:str":
        return str(node.value)
    kind = _KINDS.get(node.tag.rsplit(":", 1)[-1], f"the tag {node.tag}")
    raise loader.refuse(
        node.start_mark,
        f"the key `{_short(node.value)}`{where} is read by YAML as {kind}, not a string: "
        f"a key must be a string naming {name}; if you meant the string, quote it: "
        f"`'{_short(node.value)}':`",
    )


def _unreadable(error: yaml.reader.ReaderError, raw: bytes, source: str) -> str:
    if error.reason == "special characters are not allowed":
        text = raw.decode("utf-8", "replace")
        line = text[: error.position].count("\n") + 1
        return (
            f"{source}:{line}: the control character U+{error.character:04X} is not allowed "
            "in YAML; remove it"
        )
    line = raw[: error.position].count(b"\n") + 1
    return (
        f"{source}:{line}: not UTF-8 text (byte 0x{error.character:02x}: {error.reason}); "
        "save the file as UTF-8"
    )


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."
