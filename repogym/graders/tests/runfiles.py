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
  keys that configure jest and mocha and the scripts npm runs;
- modules at the top of the tree, ``src/`` or the base's ``pythonpath`` that the
  submission added and that shadow the runner or the standard library (``pytest.py``, a
  link ``readline``), and package metadata there (``*.dist-info``: plugins' entry points);
- Python test modules the submission added outside the directories of the task's test
  files: the runner would import them, and a module can patch the runner on import.

Dependency directories that an earlier step installed and git ignores (``node_modules``,
a ``.venv``) are linked into the copy, not copied: they are the environment, not the
submission.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from repogym.graders.tests.pytest_start import CONFIG_ORDER
from repogym.graders.tests.runner_config import (
    PytestConfig,
    config_keys,
    merge_config_keys,
    pytest_config,
    pythonpath_dirs,
)
from repogym.sandbox.users import switches_user
from repogym.task import TestsConfig
from repogym.tree import git as _git
from repogym.tree.globs import compile_globs
from repogym.tree.links import LinkInTree, open_regular, open_way
from repogym.tree.store import Entry, tree_entries
from repogym.workspace import Workspace

# Files that configure a test runner, by name, anywhere in the tree.
RUNNER_FILES = frozenset(
    {
        # pytest (setup.cfg and tox.ini hold its [tool:pytest] / [pytest] sections)
        "conftest.py",
        "pytest.toml",
        ".pytest.toml",
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
        # vitest (and the vite configuration it falls back to)
        *(
            f"{n}.{e}"
            for n in ("vitest.config", "vite.config", "vitest.workspace")
            for e in ("js", "cjs", "mjs", "ts", "cts", "mts")
        ),
        # npm's, yarn's and pnpm's own: how `npm test` runs (script-shell, node-options)
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        # go: a workspace file points a module's path at another directory
        "go.work",
        "go.work.sum",
    }
)
RUNNER_MODULES = frozenset(  # what the runner and the grader's start of it import by name
    {"pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "xmlrunner", "unittest"}
    | {"repogym_pytest_guard", "repogym_python_start", "sitecustomize", "usercustomize"}
)
CONFIG_NAMES = frozenset(CONFIG_ORDER)
DEPENDENCY_DIRS = frozenset({"node_modules", ".venv", "venv"})
_MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")  # what Python imports as a module


@dataclass(frozen=True, slots=True)
class Sides:
    """Whose code and whose test files a run holds (issue 22): the head's code with the
    base's tests grades a submission (regressions, listed targets); the base's code with
    the base's tests is the base's own run; the head's tests on either code tell the
    tests a submission adds. The test files are those ``tests.paths`` matches, and they
    are told apart only when the task runs the base (``added``, ``baseline``)."""

    code: Literal["head", "base"] = "head"
    tests: Literal["head", "base"] = "base"


GRADED = Sides()  # the head's code, the base's tests


@dataclass(frozen=True, slots=True)
class RunFiles:
    """What the copy holds other than the submission's own files."""

    restored: list[str]  # paths whose state is the base's instead of the submission's
    linked: list[str]  # dependency directories linked from the work tree
    # Paths of the rubric (test files, runner configuration) that the base changed since
    # the merge base: what an out-of-date pull request may fail on (issue 19).
    changed_on_base: list[str] = field(default_factory=list)
    # What must be in the run as the grader wrote it, by path: a git blob id, None where
    # nothing may be (issue 44: a `setup` that writes one of them is refused by name).
    guarded: Mapping[str, str | None] = field(default_factory=dict)
    # The Python files and runner configuration files written, by path: their blob ids.
    written: Mapping[str, str] = field(default_factory=dict)
    pytest: PytestConfig = field(default_factory=PytestConfig)
    object_format: str = "sha1"  # the hash of the blob ids


def build(
    workspace: Workspace,
    config: TestsConfig,
    dest: Path,
    *,
    links: bool = True,
    sides: Sides = GRADED,
) -> RunFiles:
    """Write the run's tree into the new directory ``dest``.

    What is restored is the state at ``workspace.rubric``, the commit the task was read
    at (the base's tip), not at the merge base, which the author picks by choosing where
    to branch from (issue 19). What the submission *added* is judged against the merge
    base: a file that was there when it branched is not its addition. The base's code is
    the base tip's too: the author picks the merge base, so what passes "at the base" is
    what passes at the tip (issue 22), and an out-of-date pull request answers to it.
    """
    snapshot = workspace.snapshot()
    store = snapshot.store
    fork = tree_entries(store, workspace.base)
    base = fork if workspace.rubric == workspace.base else tree_entries(store, workspace.rubric)
    head = dict(snapshot.entries)
    run = dict(head if sides.code == "head" else base)
    own = _own_tests(config, sides, base, fork, head)
    for path in own:  # the head's test files on the base tip's code
        _put(run, path, head.get(path))
    guarded = _guarded(workspace, config, base, fork, run, sides) - own
    restored = []
    for path in sorted(guarded):
        wanted = base.get(path)
        if run.get(path) != (None if wanted is None or wanted.mode == "160000" else wanted):
            _put(run, path, wanted)
            restored.append(path)
    merged = merge_config_keys(workspace, base, run)
    restored += merged
    changed = {p for p in guarded if base.get(p) != fork.get(p)}
    changed |= {p for p in merged if config_keys(store, base, p) != config_keys(store, fork, p)}
    workspace.copy(dest, run)
    # In a container the work tree's paths mean nothing: dependencies are the image's.
    linked = _link_dependencies(workspace.root, dest, run) if links else []
    return RunFiles(
        restored=sorted(restored),
        linked=linked,
        changed_on_base=sorted(changed),
        guarded=_state(run, guarded | set(merged)),
        written=_written(run),
        pytest=pytest_config(store, run),
        object_format=store.object_format,
    )


def _state(run: dict[str, Entry], paths: set[str]) -> dict[str, str | None]:
    """What ``paths`` are in ``run``: a regular file's blob id, None where nothing is (a
    symlink's is left out: a link is not what a setup would write in a test's place)."""
    return {p: (run[p].sha if p in run else None) for p in paths if p not in run or run[p].regular}


def _written(run: dict[str, Entry]) -> dict[str, str]:
    """The Python files and runner configuration files of ``run``, by path: blob ids (a
    symlink's blob is its target: the guard checks that the link is still that one)."""
    return {
        p: e.sha
        for p, e in run.items()
        if (e.regular or e.mode == "120000")
        and (p.endswith(".py") or PurePosixPath(p).name in CONFIG_NAMES)
    }


def setup_wrote(tree: Path, files: RunFiles) -> list[str]:
    """The paths of ``files.guarded`` that are not as the grader wrote them in ``tree``
    (after ``setup``, which runs before the tests are put in place)."""
    found = {p: _blob_at(tree, p, files.object_format) for p in files.guarded}
    return [p for p, want in sorted(files.guarded.items()) if found[p] != want]


def _blob_at(tree: Path, path: str, object_format: str) -> str | None:
    """The git blob id of the regular file ``path`` of ``tree``, read without following a
    link; None where there is none, "" where something else stands."""
    try:
        fd = open_regular(tree, path)
    except FileNotFoundError:
        return None
    except (LinkInTree, OSError):
        return ""
    with os.fdopen(fd, "rb") as file:
        data = file.read()
    return hashlib.new(object_format, b"blob %d\0" % len(data) + data).hexdigest()


def _put(run: dict[str, Entry], path: str, entry: Entry | None) -> None:
    """``path`` of the run as ``entry`` (a submodule, or None: no file there)."""
    if entry is None or entry.mode == "160000":
        run.pop(path, None)
    else:
        _make_room(run, path)
        run[path] = entry


def _own_tests(
    config: TestsConfig,
    sides: Sides,
    base: dict[str, Entry],
    fork: dict[str, Entry],
    head: dict[str, Entry],
) -> set[str]:
    """The test files that are the head's in a run of the head's tests: those
    ``tests.paths`` matches, but for the runner's configuration, the files ids name and
    those ``tests.restore`` matches, which are the base's in every run."""
    if not config.runs_the_base or sides.tests == "base":
        return set()
    everything = base.keys() | fork.keys() | head.keys()
    mine = _test_paths(config, everything)
    mine -= {p for p in mine if PurePosixPath(p).name in RUNNER_FILES}
    mine -= set(config.test_files())
    if config.restore:
        mine -= set(compile_globs(config.restore).match_files(sorted(mine)))
    return mine


def _test_paths(config: TestsConfig, paths: Iterable[str]) -> set[str]:
    return set(compile_globs(config.paths).match_files(sorted(paths)))


def _guarded(
    workspace: Workspace,
    config: TestsConfig,
    base: dict[str, Entry],
    fork: dict[str, Entry],
    run: dict[str, Entry],
    sides: Sides = GRADED,
) -> set[str]:
    """Every path whose state in the run must be the base's (``base``: the rubric's
    tree; ``fork``: the merge base's, against which additions are told)."""
    paths = set(config.test_files())
    everything = base.keys() | run.keys()
    paths |= {p for p in everything if PurePosixPath(p).name in RUNNER_FILES}
    if config.restore:
        paths |= set(compile_globs(config.restore).match_files(sorted(everything)))
    roots = ["", *(f"{d}/" for d in pythonpath_dirs(workspace, base))]
    added = run.keys() - fork.keys()
    paths |= {p for p in added if _shadows(p, roots)}
    if config.runs_the_base:
        # Every test file: the base's, or, for the head's tests, the head's (issue 22).
        tests = _test_paths(config, everything)
        paths |= tests if sides.tests == "base" else set()
        paths |= {p for p in added - tests if _is_test_module(p)}
    else:
        test_dirs = {str(PurePosixPath(f).parent) for f in config.test_files()}
        paths |= {p for p in added if _stray_test_module(p, test_dirs)}
    return paths


def _is_test_module(path: str) -> bool:
    """Whether ``path`` is named as a Python test module (``test_*.py``, ``*_test.py``)."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _stray_test_module(path: str, test_dirs: set[str]) -> bool:
    """Whether ``path`` is a Python test module outside the directories of the task's
    test files: the runner would collect and import it, and what it does on import
    (patch the runner) the task never asked for."""
    if not _is_test_module(path):
        return False
    parents = {str(p) for p in PurePosixPath(path).parents}
    return not test_dirs & parents


def _shadows(path: str, roots: list[str]) -> bool:
    """Whether ``path``, at a ``sys.path`` root, shadows a module of the runner or the
    standard library (a module file, a package's ``__init__``, a link), or is package
    metadata, in either case."""
    for root in roots:
        rest = path[len(root) :] if path.startswith(root) else ""
        top, slash, inside = rest.partition("/")
        if slash and top.lower().endswith((".dist-info", ".egg-info")):
            return True  # its entry points would register pytest plugins (pytest11)
        if slash:
            if inside not in ("__init__.py", "__init__.pyc"):
                continue
            name = top
        else:
            name, dot, _ = rest.partition(".")
            if dot and not rest.endswith(_MODULE_SUFFIXES):
                continue
        if name in RUNNER_MODULES or name in sys.stdlib_module_names:
            return True
    return False


def _make_room(run: dict[str, Entry], path: str) -> None:
    """Drop what stands where ``path`` goes: a file on its way, files under it."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        run.pop("/".join(parts[:i]), None)
    for other in [p for p in run if p.startswith(path + "/")]:
        del run[other]


def _link_dependencies(root: Path, dest: Path, run: dict[str, Entry]) -> list[str]:
    """Link the ignored dependency directories of the work tree into the copy."""
    linked = []
    for path in dependency_dirs(root):
        if any(p.startswith(path + "/") for p in run):
            continue
        if switches_user() and not _reachable_by_others(root / path):
            continue  # a link the sandbox user could not follow would break collection
        if _link_into(dest, path, root / path):
            linked.append(path)
    return linked


def dependency_dirs(root: Path) -> list[str]:
    """The ignored dependency directories of the work tree (``node_modules``, a
    ``.venv``): what a run links rather than copies."""
    out = _git.git(
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], root
    )
    found = []
    for listed in out.decode("utf-8", "surrogateescape").split("\0"):
        path = listed.rstrip("/")
        if listed.endswith("/") and PurePosixPath(path).name in DEPENDENCY_DIRS:
            found.append(path)
    return found


def dependencies_state(root: Path) -> str:
    """A digest of everything in the work tree's dependency directories: every entry's
    path, kind, size, inode and change time (which no one can set back), a link's
    target; following no link. What the base's runs see of the work tree (issue 44)."""
    digest = hashlib.sha256()
    for path in dependency_dirs(root):
        pending = [str(root / path)]
        while pending:
            top = pending.pop()
            with os.scandir(top) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    info = entry.stat(follow_symlinks=False)
                    digest.update(entry.path.encode("utf-8", "surrogateescape") + b"\0")
                    digest.update(
                        b"%o %d %d %d\0"
                        % (info.st_mode, info.st_size, info.st_ino, info.st_ctime_ns)
                    )
                    if entry.is_symlink():
                        digest.update(os.fsencode(os.readlink(entry.path)))  # noqa: PTH115
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
    return digest.hexdigest()


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
    """Whether another user (the sandbox's) can go through every directory to ``path``."""
    real = Path(os.path.realpath(path))
    return all(d.stat().st_mode & 0o001 for d in (real, *real.parents))
