"""The runner's configuration inside files that are not only its own (issue 9):
``pyproject.toml``'s ``[tool.pytest...]`` tables and ``package.json``'s jest and mocha
keys, the base's in the submission's file, merged line by line and checked; and the
directories the base's pytest configuration puts first on ``sys.path``."""

from __future__ import annotations

import configparser
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

from repogym.tree.store import Entry, Store
from repogym.workspace import Workspace

# package.json's keys that say how the tests run: jest's and mocha's configuration, and
# the scripts `npm test` (and `npm run`) runs (issue 44).
PACKAGE_JSON_KEYS = ("jest", "mocha", "scripts")
# What configures pytest in each file it reads, in pytest 9's order (the first wins).
_PYTEST_FILES = (
    ("pytest.toml", "toml"),
    (".pytest.toml", "toml"),
    ("pytest.ini", "ini"),
    (".pytest.ini", "ini"),
    ("pyproject.toml", "pyproject"),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)
_PLUGIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True, slots=True)
class PytestConfig:
    """The pytest configuration file at the top of a run's tree and the plugins it
    requires (``required_plugins``, distribution names)."""

    path: str | None = None
    plugins: tuple[str, ...] = ()


def pytest_config(store: Store, run: dict[str, Entry]) -> PytestConfig:
    """The file pytest reads at the top of ``run`` (a tree's entries), as pytest 9 picks it."""
    for name, kind in _PYTEST_FILES:
        entry = run.get(name)
        if entry is None or not entry.regular:
            continue
        options = _pytest_options(store.read_blob(entry.sha), kind)
        if options is None:
            continue  # a file with no pytest section: pytest reads on
        value = options.get("required_plugins", [])
        words = value.split() if isinstance(value, str) else [str(v) for v in value]
        plugins = tuple(m.group(0) for m in map(_PLUGIN_NAME.match, words) if m is not None)
        return PytestConfig(name, plugins)
    return PytestConfig()


def _pytest_options(data: bytes, kind: str) -> dict[str, Any] | None:
    """The pytest options of a configuration file's text; None when it has no section
    that pytest reads (a pytest.ini or pytest.toml is pytest's even when empty)."""
    if kind in ("toml", "pyproject"):
        doc = _toml(data)
        if doc is None:
            return {} if kind == "toml" else None
        if kind == "toml":
            table = doc.get("pytest")
            return table if isinstance(table, dict) else {}
        tables = _pytest_tables(doc)
        if not isinstance(tables, dict):
            return None
        options = tables.get("ini_options", tables)
        return options if isinstance(options, dict) else {}
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(data.decode("utf-8", "replace"))
    except configparser.Error:
        return {} if kind == "ini" else None
    section = "pytest" if kind == "ini" else kind
    if not parser.has_section(section):
        return {} if kind == "ini" else None
    return dict(parser.items(section))


_PYTEST_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*pytest\b[^\]]*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


def pythonpath_dirs(workspace: Workspace, base: dict[str, Entry]) -> list[str]:
    """``src`` and the directories the base's pytest configuration puts first on
    ``sys.path`` (its ``pythonpath`` option), where a module of the submission's shadows
    an installed one."""
    store = workspace.snapshot().store
    dirs = {"src"}
    for name, section in _INI_SECTIONS.items():
        if name in base and base[name].regular:
            parser = configparser.RawConfigParser()
            try:
                parser.read_string(store.read_blob(base[name].sha).decode("utf-8", "replace"))
                dirs.update(parser.get(section, "pythonpath", fallback="").split())
            except configparser.Error:
                continue
    if "pyproject.toml" in base:
        doc = _toml(store.read_blob(base["pyproject.toml"].sha)) or {}
        options = (_pytest_tables(doc) or {}).get("ini_options", {})
        value = options.get("pythonpath", []) if isinstance(options, dict) else []
        dirs.update(value.split() if isinstance(value, str) else map(str, value))
    return sorted(d.strip("/") for d in dirs if d.strip("/") not in ("", "."))


_INI_SECTIONS = {
    "pytest.ini": "pytest",
    ".pytest.ini": "pytest",
    "tox.ini": "pytest",
    "setup.cfg": "tool:pytest",
}


def merge_config_keys(
    workspace: Workspace, base: dict[str, Entry], run: dict[str, Entry]
) -> list[str]:
    """``pyproject.toml``'s pytest tables and ``package.json``'s runner keys, the base's
    in the submission's file; the paths changed."""
    changed = []
    store = workspace.snapshot().store
    for path, entry in list(run.items()):
        name = PurePosixPath(path).name
        if name not in ("pyproject.toml", "package.json") or not entry.regular:
            continue
        mine = store.read_blob(entry.sha)
        theirs = store.read_blob(base[path].sha) if path in base else b""
        merge = _merge_pyproject if name == "pyproject.toml" else _merge_package_json
        merged = merge(mine, theirs)
        if merged == mine:
            continue
        changed.append(path)
        if merged is None:  # no safe merge: the base's file as it is
            if path in base:
                run[path] = base[path]
            else:
                del run[path]
        else:
            run[path] = Entry(entry.mode, store.write_blob(merged))
    return changed


def config_keys(store: Store, tree: dict[str, Entry], path: str) -> Any:
    """What of ``path`` (a pyproject.toml or package.json) configures the runner in
    ``tree``: its pytest tables, or its jest and mocha keys; None where it has none."""
    entry = tree.get(path)
    if entry is None or not entry.regular:
        return None
    data = store.read_blob(entry.sha)
    if PurePosixPath(path).name == "pyproject.toml":
        doc = _toml(data)
        return None if doc is None else _pytest_tables(doc)
    try:
        loaded = json.loads(data)
    except ValueError:
        return None
    return {k: loaded.get(k) for k in PACKAGE_JSON_KEYS} if isinstance(loaded, dict) else None


def _merge_pyproject(mine: bytes, theirs: bytes) -> bytes | None:
    """The submission's pyproject.toml with the base's pytest tables; None when that
    cannot be done line by line and checked."""
    ours, base = _toml(mine), _toml(theirs)
    if ours is None:
        return None
    if base is None:
        base = {}
    if _pytest_tables(ours) == _pytest_tables(base):
        return mine
    kept = _without_pytest_tables(mine.decode("utf-8", "replace"))
    added = _only_pytest_tables(theirs.decode("utf-8", "replace")) if theirs else ""
    merged = (kept.rstrip("\n") + "\n\n" + added).rstrip("\n") + "\n"
    check = _toml(merged.encode())
    if check is None or _pytest_tables(check) != _pytest_tables(base):
        return None
    drop = {k: v for k, v in check.items() if k != "tool"}
    want = {k: v for k, v in ours.items() if k != "tool"}
    if drop != want or _other_tools(check) != _other_tools(ours):
        return None
    return merged.encode()


def _toml(data: bytes) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return doc


def _pytest_tables(doc: dict[str, Any]) -> Any:
    tool = doc.get("tool")
    return tool.get("pytest") if isinstance(tool, dict) else None


def _other_tools(doc: dict[str, Any]) -> Any:
    tool = doc.get("tool")
    return {k: v for k, v in tool.items() if k != "pytest"} if isinstance(tool, dict) else None


def _sections(text: str) -> Iterable[tuple[bool, list[str]]]:
    """The lines of a TOML text in runs: (in a pytest table, lines)."""
    current: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if _TABLE.match(line):
            if current:
                yield inside, current
            current, inside = [], bool(_PYTEST_TABLE.match(line))
        current.append(line)
    if current:
        yield inside, current


def _without_pytest_tables(text: str) -> str:
    return "".join("".join(lines) for inside, lines in _sections(text) if not inside)


def _only_pytest_tables(text: str) -> str:
    return "".join("".join(lines) for inside, lines in _sections(text) if inside)


def _merge_package_json(mine: bytes, theirs: bytes) -> bytes | None:
    try:
        ours = json.loads(mine)
        base = json.loads(theirs) if theirs else {}
    except ValueError:
        return None
    if not isinstance(ours, dict) or not isinstance(base, dict):
        return None
    if all(ours.get(k) == base.get(k) for k in PACKAGE_JSON_KEYS):
        return mine
    for key in PACKAGE_JSON_KEYS:
        if key in base:
            ours[key] = base[key]
        else:
            ours.pop(key, None)
    return (json.dumps(ours, indent=2, ensure_ascii=False) + "\n").encode()
