"""The tree a test run sees: a fresh copy of the submission, with the base's test files,
the base's runner configuration and the hidden tests (spec: "TestGrader", steps 1 and 2).

The copy is written from the snapshot (repogym.tree.snapshot), so the user's work tree is
never written, and a ``kill -9`` of the grader loses nothing. "The base" here is the
commit the task was read at (``workspace.rubric``, the base branch's tip), not the merge
base, which the author picks by choosing where to branch from (issue 19); only what the
submission *added* is told against the merge base. What is the base's in it:

- every file a test id names, and the files ``tests.restore`` matches;
- the runner's configuration, wherever it is in the tree: what changes which tests are
  collected, which plugins load or how results are written. A file of that kind that the
  submission added is removed, one it changed is the base's again (:data:`RUNNER_FILES`);
  of ``pyproject.toml`` only the ``[tool.pytest...]`` tables, of ``package.json`` only the
  keys that configure jest and mocha;
- modules at the top of the tree (or of ``src/``, or of the base's pytest ``pythonpath``)
  that the submission added and that shadow the runner or the standard library
  (``pytest.py``, ``cmd.py``), and package metadata there (``*.dist-info``), whose entry
  points would load as plugins: ``python -m pytest`` puts the tree first on ``sys.path``;
- Python test modules the submission added outside the directories of the task's test
  files: the runner would import them, and a module can patch the runner on import.

Dependency directories that an earlier step installed and git ignores (``node_modules``,
a ``.venv``) are linked into the copy, not copied: they are the environment, not the
submission.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]


from repogym.sandbox.users import switches_user
from repogym.task import TestsConfig
from repogym.tree import git as _git
from repogym.tree.globs import compile_globs
from repogym.tree.links import LinkInTree, open_way, place
from repogym.tree.store import Entry, Store, tree_entries
from repogym.workspace import Workspace

# Files that configure a test runner, by name, anywhere in the tree.
RUNNER_FILES = frozenset(
    {
        # pytest (setup.cfg and tox.ini hold its [tool:pytest] / [pytest] sections)
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        # jest, mocha, and the transforms jest runs test files through
        *(f"jest.config.{e}" for e in ("js", "cjs", "mjs", "ts", "cts", "mts", "json")),
        *(f".mocharc.{e}" for e in ("js", "cjs", "mjs", "yml", "yaml", "json", "jsonc")),
        ".mocharc",
        *(f"babel.config.{e}" for e in ("js", "cjs", "mjs", "json", "cts")),
        ".babelrc",
        ".babelrc.js",
        ".babelrc.json",
    }
)
# Modules the runner imports by name, which a file at the top of the tree would shadow.
RUNNER_MODULES = frozenset(
    {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "xmlrunner", "unittest"}
)
PACKAGE_JSON_KEYS = ("jest", "mocha")
DEPENDENCY_DIRS = frozenset({"node_modules", ".venv", "venv"})
_PYTEST_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*pytest\b[^\]]*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


@dataclass(frozen=True, slots=True)
class RunFiles:
    """What the copy holds other than the submission's own files."""

    restored: list[str]  # paths whose state is the base's instead of the submission's
    linked: list[str]  # dependency directories linked from the work tree
    # Paths of the rubric (test files, runner configuration) that the base changed since
    # the merge base: what an out-of-date pull request may fail on (issue 19).
    changed_on_base: list[str] = field(default_factory=list)


def build(
    workspace: Workspace,
    config: TestsConfig,
    dest: Path,
    hidden: tuple[Path | None, list[str]] = (None, []),
    *,
    links: bool = True,
) -> RunFiles:
    """Write the run's tree into the new directory ``dest``.

    What is restored is the state at ``workspace.rubric``, the commit the task was read
    at (the base's tip), not at the merge base, which the author picks by choosing where
    to branch from (issue 19). What the submission *added* is judged against the merge
    base: a file that was there when it branched is not its addition.
    """
    snapshot = workspace.snapshot()
    store = snapshot.store
    fork = tree_entries(store, workspace.base)
    base = fork if workspace.rubric == workspace.base else tree_entries(store, workspace.rubric)
    run = dict(snapshot.entries)
    guarded = _guarded(workspace, config, base, fork, run)
    restored = []
    for path in sorted(guarded):
        wanted = base.get(path)
        if wanted is None or wanted.mode == "160000":
            if path in run:
                del run[path]
                restored.append(path)
        elif run.get(path) != wanted:
            _make_room(run, path)
            run[path] = wanted
            restored.append(path)
    merged = _merge_config_keys(workspace, base, run)
    restored += merged
    changed = {p for p in guarded if base.get(p) != fork.get(p)}
    changed |= {p for p in merged if _config_keys(store, base, p) != _config_keys(store, fork, p)}
    workspace.copy(dest, run)
    source, files = hidden
    for path in files:
        assert source is not None
        # In place of what the submission has there, a link on the way included: root
        # copies them, and a committed `tests/hidden -> /elsewhere` sent them outside the
        # copy; read without following a link of the hidden directory either, which
        # would bring into the copy what it names (issue 19).
        place(dest, path, from_tree=source)
    # In a container the work tree's paths mean nothing: dependencies are the image's.
    linked = _link_dependencies(workspace.root, dest, run) if links else []
    return RunFiles(restored=sorted(restored), linked=linked, changed_on_base=sorted(changed))


def _guarded(
    workspace: Workspace,
    config: TestsConfig,
    base: dict[str, Entry],
    fork: dict[str, Entry],
    run: dict[str, Entry],
) -> set[str]:
    """Every path whose state in the run must be the base's (``base``: the rubric's
    tree; ``fork``: the merge base's, against which additions are told)."""
    paths = set(config.test_files())
    everything = base.keys() | run.keys()
    paths |= {p for p in everything if PurePosixPath(p).name in RUNNER_FILES}
    if config.restore:
        paths |= set(compile_globs(config.restore).match_files(sorted(everything)))
    roots = ["", *(f"{d}/" for d in _pythonpath_dirs(workspace, base))]
    added = run.keys() - fork.keys()
    paths |= {p for p in added if _shadows(p, roots)}
    test_dirs = {str(PurePosixPath(f).parent) for f in config.test_files()}
    paths |= {p for p in added if _stray_test_module(p, test_dirs)}
    return paths


def _stray_test_module(path: str, test_dirs: set[str]) -> bool:
    """Whether ``path`` is a Python test module (``test_*.py``, ``*_test.py``) outside
    the directories of the task's test files: the runner would collect and import it,
    and what it does on import (patch the runner) the task never asked for."""
    name = PurePosixPath(path).name
    if not name.endswith(".py") or not (name.startswith("test_") or name.endswith("_test.py")):
        return False
    parents = {str(p) for p in PurePosixPath(path).parents}
    return not test_dirs & parents


def _shadows(path: str, roots: list[str]) -> bool:
    """Whether ``path`` is a module or package at the top of a ``sys.path`` root that
    shadows one the runner imports or one of the standard library."""
    for root in roots:
        rest = path[len(root) :] if path.startswith(root) else ""
        top = rest.split("/", 1)[0]
        if "/" in rest and top.endswith((".dist-info", ".egg-info")):
            return True  # its entry points would register pytest plugins (pytest11)
        name = rest.removesuffix("/__init__.py") if rest.endswith("/__init__.py") else rest
        if "/" in name or (not name.endswith(".py") and not rest.endswith("/__init__.py")):
            continue
        name = name.removesuffix(".py")
        if name in RUNNER_MODULES or name in sys.stdlib_module_names:
            return True
    return False


def _pythonpath_dirs(workspace: Workspace, base: dict[str, Entry]) -> list[str]:
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


def _make_room(run: dict[str, Entry], path: str) -> None:
    """Drop what stands where ``path`` goes: a file on its way, files under it."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        run.pop("/".join(parts[:i]), None)
    for other in [p for p in run if p.startswith(path + "/")]:
        del run[other]


def _merge_config_keys(
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


def _config_keys(store: Store, tree: dict[str, Entry], path: str) -> Any:
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


def _link_dependencies(root: Path, dest: Path, run: dict[str, Entry]) -> list[str]:
    """Link the ignored dependency directories of the work tree into the copy."""
    out = _git.git(
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], root
    )
    linked = []
    for listed in out.decode("utf-8", "surrogateescape").split("\0"):
        path = listed.rstrip("/")
        if not listed.endswith("/") or PurePosixPath(path).name not in DEPENDENCY_DIRS:
            continue
        if any(p.startswith(path + "/") for p in run):
            continue
        if switches_user() and not _reachable_by_others(root / path):
            continue  # a link the sandbox user could not follow would break collection
        if _link_into(dest, path, root / path):
            linked.append(path)
    return linked


def _link_into(dest: Path, path: str, target: Path) -> bool:
    """Link ``path`` of the copy ``dest`` to ``target`` unless something is there, or
    on the way is not a directory (a link of the submission's, which must not carry the
    link out of the copy: issue 19); whether it was made."""
    try:
        parent, name = open_way(dest, path, make=False)
    except (LinkInTree, FileNotFoundError):
        return False
    try:
        os.symlink(target, name, dir_fd=parent)
    except FileExistsError:
        return False
    finally:
        os.close(parent)
    return True


def _reachable_by_others(path: Path) -> bool:
    """Whether another user (the sandbox's) can go through to ``path``: every directory
    on the way must let others in."""
    real = Path(os.path.realpath(path))
    return all(d.stat().st_mode & 0o001 for d in (real, *real.parents))
