"""How a testcase of a report becomes its canonical id (the rules are
:mod:`repogym.junit.testids`' docstring and docs/test-ids.md).

:class:`Namer` reads one report's testcases: it resolves dotted Python names to module
files, report paths to paths relative to the work tree, and unittest's and Node's
stand-ins for a file that failed to load to that file. It asks the file system, so its
look-ups are memoised across the report, and it asks only of paths below the root (the
report is untrusted). Kept apart from :mod:`testids`, which folds the named testcases
into one result per id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from repogym.junit.records import Case, Outcome

__all__ = ["FILE_NOT_RUN", "Namer", "exists_in"]

# A record of a whole file with one of these outcomes says that none of its tests ran: the
# module was skipped (pytest's `allow_module_level`, unittest's SkipTest at import) or could
# not be collected. Node's "test failed" for a file (FAILED) may follow tests that ran.
FILE_NOT_RUN = {Outcome.SKIPPED: "skipped", Outcome.ERROR: "not collected"}
# unittest's class and module fixtures, as xmlrunner names them when they fail:
# `setUpClass (tests.test_x.TestX)`, with an empty classname and a stale file.
_FIXTURE = re.compile(r"(setUpClass|tearDownClass|setUpModule|tearDownModule) \((.+)\)")
# A unittest subTest as xmlrunner names it: `test_x (v=1)`, `test_x [msg] (v=1)`.
_SUBTEST = re.compile(r"([A-Za-z_]\w*) [\[(].*")
# What a Python test's name looks like: a function name, then pytest's parameters. Only
# such names are looked for in the tree's modules (a Go, mocha or jest name is not).
_PYTHON_NAME = re.compile(r"[A-Za-z_]\w*(\[.*\])?", re.DOTALL)
_DRIVE = re.compile(r"[A-Za-z]:/")
# unittest's stand-ins for a test module that failed to import, or that raised SkipTest
# when imported; xmlrunner gives them the file of unittest's own loader, and the module's
# dotted name after the prefix.
_MODULE_STAND_INS = ("unittest.loader._FailedTest.", "unittest.loader.ModuleSkipped.")
# Classnames with more parts than this are not tried as module paths (each split costs
# file-system lookups, and the report is untrusted).
_MAX_PARTS = 32


def exists_in(tree: Path) -> Callable[[str], bool]:
    def exists(relative: str) -> bool:
        try:
            return (tree / relative).exists()
        except (OSError, ValueError):  # a name too long, a NUL byte
            return False

    return exists


def _is_relative(path: str) -> bool:
    """A relative POSIX path that stays below its root."""
    if not path or path.startswith("/") or _DRIVE.match(path):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


class Namer:
    """Turns testcases into ids, with the look-ups memoised across a report."""

    def __init__(
        self,
        exists: Callable[[str], bool],
        known_ids: Collection[str],
        *,
        roots: Iterable[Path] = (),
    ) -> None:
        self._exists_uncached = exists
        self._seen: dict[str, bool] = {}
        self._roots = tuple(dict.fromkeys(root.as_posix().rstrip("/") + "/" for root in roots))
        self._known_files = {i.partition("::")[0] for i in known_ids}
        self._python_known: dict[tuple[str, str], list[str]] = {}
        for known in known_ids:
            key = _python_key(known)
            if key is not None:
                self._python_known.setdefault(key, []).append(known)
        self._modules: dict[str, tuple[str, list[str]] | None] = {}
        self._files: dict[str, str] = {}

    def identify(self, case: Case) -> tuple[str, bool]:
        """The id of ``case``, and whether it is a part of the attempt before it (a
        unittest subTest, a file that failed to load) rather than an attempt of its own."""
        failed_import = self._failed_import(case)
        if failed_import is not None:
            return failed_import, False
        file = self._file(case.file) if case.file else None
        if file is not None and file.endswith(".py"):
            return self._python_with_file(file, case)
        if file is None:
            python = self._python_without_file(case)
            if python is not None:
                return python
        if _is_node(case):
            return self._node(case, file)
        # A testcase named after its file stands for a test file that failed to load.
        if file is not None and self._file(case.name) == file:
            return file, True
        scope = case.classname or (case.suites[-1] if case.suites and file is None else "")
        return _join(file, scope, case.name), False

    def _node(self, case: Case, file: str | None) -> tuple[str, bool]:
        """A Node case's id: its file, its suites and its name. One named after its file
        stands for a test file that failed to load (Node names it by its absolute path;
        jest-junit writes two such testcases)."""
        if not case.suites and file is None and (path := self._path_named(case.name)):
            return path, True
        return _join(file, *case.suites, case.name), False

    # Python: pytest and unittest

    def _failed_import(self, case: Case) -> str | None:
        """The module file of unittest's record of a module that failed to import or was
        skipped when imported, named as pytest names such a module: ``tests/test_x.py``;
        None for other cases."""
        dotted = f"{case.classname}.{case.name}" if case.classname else case.name
        prefix = next((p for p in _MODULE_STAND_INS if dotted.startswith(p)), None)
        if prefix is None:
            return None
        module = dotted[len(prefix) :]
        resolved = self._module(module)
        if resolved is not None and not resolved[1]:
            return resolved[0]
        return module  # a name that is no module here (`-t` missing, a mistyped test)

    def _python_with_file(self, file: str, case: Case) -> tuple[str, bool]:
        fixture = _FIXTURE.fullmatch(case.name) if not case.classname else None
        if fixture:  # xmlrunner's file is the last test's here, not the fixture's
            return self._python_dotted(fixture[2], fixture[1]), False
        module = file[: -len(".py")].replace("/", ".")
        if not case.classname and case.name == module:
            return file, False  # pytest could not collect the module
        name, part = _subtest_parent(case.name)
        return "::".join([file, *_classes_after(module, case.classname), name]), part

    def _python_without_file(self, case: Case) -> tuple[str, bool] | None:
        fixture = _FIXTURE.fullmatch(case.name) if not case.classname else None
        if fixture:
            return self._python_dotted(fixture[2], fixture[1]), False
        if not case.classname:
            if case.outcome not in FILE_NOT_RUN:
                return None
            resolved = self._module(case.name)
            if resolved is not None and not resolved[1]:
                return resolved[0], False  # pytest could not collect, or skipped, the module
            return None
        name, part = _subtest_parent(case.name)
        known = self._python_known.get((case.classname, name))
        if known:
            return self._prefer_existing(known), part
        if not _PYTHON_NAME.fullmatch(name):
            return None
        resolved = self._module(case.classname)
        if resolved is None:
            return None
        path, classes = resolved
        return "::".join([path, *classes, name]), part

    def _python_dotted(self, classname: str, name: str) -> str:
        known = self._python_known.get((classname, name))
        if known:
            return self._prefer_existing(known)
        resolved = self._module(classname)
        if resolved is None:
            return f"{classname}::{name}"
        return "::".join([resolved[0], *resolved[1], name])

    def _prefer_existing(self, known: list[str]) -> str:
        for candidate in known:
            if self._exists(candidate.partition("::")[0]):
                return candidate
        return known[0]

    def _module(self, dotted: str) -> tuple[str, list[str]] | None:
        """The module file and classes of a dotted name: the longest module that exists."""
        if dotted in self._modules:
            return self._modules[dotted]
        parts = dotted.split(".")
        found = None
        if len(parts) <= _MAX_PARTS and all(_is_name_part(p) for p in parts):
            for end in range(len(parts), 0, -1):
                path = self._module_path(parts[:end], 0, "")
                if path is not None:
                    found = (path, parts[end:])
                    break
        self._modules[dotted] = found
        return found

    def _module_path(self, parts: list[str], start: int, prefix: str) -> str | None:
        """An existing ``.py`` file spelt by ``parts``, each dot a ``/`` or a dot of a
        directory's or file's own name."""
        for stop in range(start + 1, len(parts) + 1):
            segment = prefix + ".".join(parts[start:stop])
            if stop == len(parts):
                return segment + ".py" if self._exists(segment + ".py") else None
            if self._exists(segment):
                found = self._module_path(parts, stop, segment + "/")
                if found is not None:
                    return found
        return None

    # Paths

    def _file(self, raw: str) -> str:
        """A report's file path as a POSIX path relative to the work tree, if it can be."""
        if raw not in self._files:
            self._files[raw] = self._relative(raw)
        return self._files[raw]

    def _relative(self, raw: str) -> str:
        path = raw.replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        if not (path.startswith("/") or _DRIVE.match(path)):
            return path
        for root in self._roots:
            if path.startswith(root):
                return path[len(root) :]
        # Reported from elsewhere (another mount of the same tree): the longest tail that
        # names one of the task's files or a file of this tree.
        parts = path.split("/")
        for start in range(1, len(parts)):
            tail = "/".join(parts[start:])
            if tail in self._known_files or self._exists(tail):
                return tail
        return path

    def _path_named(self, name: str) -> str | None:
        path = self._file(name)
        return path if path != name.replace("\\", "/") and _is_relative(path) else None

    def _exists(self, path: str) -> bool:
        """Only ever asked of paths below the root: the report is untrusted."""
        if path not in self._seen:
            self._seen[path] = _is_relative(path) and self._exists_uncached(path)
        return self._seen[path]


def _python_key(known: str) -> tuple[str, str] | None:
    """The (classname, name) pytest writes for a task's ``.py`` id."""
    path, sep, rest = known.partition("::")
    if not sep or not path.endswith(".py"):
        return None
    head, bracket, params = rest.partition("[")
    parts = head.split("::")
    module = path[: -len(".py")].replace("/", ".")
    return ".".join([module, *parts[:-1]]), parts[-1] + bracket + params


def _classes_after(module: str, classname: str) -> list[str]:
    """The classes in a dotted classname, after its module part.

    The module is normally the whole prefix; pytest's ``junit_prefix`` puts something
    before it, so the longest tail of the module found in the classname is used.
    """
    parts = classname.split(".") if classname else []
    modules = module.split(".")
    for start in range(len(modules)):
        tail = modules[start:]
        for at in range(len(parts) - len(tail) + 1):
            if parts[at : at + len(tail)] == tail:
                return parts[at + len(tail) :]
    return []


def _subtest_parent(name: str) -> tuple[str, bool]:
    """A failing unittest subTest is its method failing: xmlrunner writes the failing
    subtests only (as `test_x (v=1)`), and the method itself only when all passed."""
    subtest = _SUBTEST.fullmatch(name)
    return (subtest[1], True) if subtest else (name, False)


def _is_name_part(part: str) -> bool:
    return part not in ("", "..") and not any(c in part for c in "/\\:")


def _is_node(case: Case) -> bool:
    """``node --test`` names every testcase's class ``test`` and nests describe blocks as
    ``<testsuite>`` elements. A jest or mocha describe block named ``test`` looks alike,
    but there the one suite is named after the file (jest, as configured) or ends with
    ``::test`` (mocha's full suite title)."""
    if case.classname != "test":
        return False
    if len(case.suites) == 1:
        suite = case.suites[0]
        return suite != case.file and not suite.endswith("::test")
    return True


def _join(*parts: str | None) -> str:
    return "::".join(part for part in parts if part)
