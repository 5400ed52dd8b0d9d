"""Canonical test ids: one string per test, whichever runner wrote the report.

A task names its tests as ``path/to/test_file.py::Class::name[params]`` and those ids are
matched exactly against what this module makes of a report (issue 3). The path is POSIX
and relative to the work tree; ``::`` separates the class or describe path from the name;
the name, parameters included, is copied byte for byte. ``docs/test-ids.md`` gives the
id form and reporter options of each runner; in short:

========================  =====================================================
pytest ``xunit1``         ``file`` + the classes in ``classname`` after the module + name
pytest ``xunit2``         ``classname`` resolved to a module file in the tree (below)
unittest (xmlrunner)      as pytest; a failing subTest counts against its method, a
                          module that failed to import is its file
``node --test``           [``file``::] enclosing ``<testsuite>`` names :: name
jest, mocha (configured)  [``file``::] ``classname`` (the describe path) :: name
Go, Surefire, nextest     ``classname`` :: name  (package, class, binary id)
========================  =====================================================

A dotted ``classname`` without a file (pytest's default ``xunit2``) is split into a module
path and classes: the split that gives one of the task's own ids wins, then one whose
module file exists in the tree (directories may contain dots); with neither, the id is
``classname::name`` unchanged.

:func:`collect` folds the testcases of one report into one result per id: a rerun is a
new attempt, a teardown error pytest writes apart from the call's failure joins that
failure's attempt. The report comes from the code being graded, so records that
contradict each other do not add up to a pass (issue 9): a pass counts after failures
only (a rerun), otherwise the worst attempt decides; and a file the report has as skipped
or not collected as a whole has no test of its own in the report (docs/test-ids.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.junit.reader import Case, Outcome

# Worst first within one attempt (issue 3): a call that failed and a teardown that
# errored make an ERROR. MISSING never comes from a report.
_SEVERITY = {
    Outcome.MISSING: 0,
    Outcome.PASSED: 0,
    Outcome.SKIPPED: 1,
    Outcome.FAILED: 2,
    Outcome.ERROR: 3,
}
_BROKEN = frozenset({Outcome.FAILED, Outcome.ERROR})
# A record of a whole file with one of these outcomes says that none of its tests ran: the
# module was skipped (pytest's `allow_module_level`, unittest's SkipTest at import) or could
# not be collected. Node's "test failed" for a file (FAILED) may follow tests that ran.
_FILE_NOT_RUN = {Outcome.SKIPPED: "skipped", Outcome.ERROR: "not collected"}
# How the message of a record that does not count starts (its outcome is MISSING).
NOT_COUNTED = "not counted: "

# pytest writes a teardown error as a testcase of its own after the call's failure.
_TEARDOWN = re.compile(r"failed on teardown with ")
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
# An id's first part names a file when it ends like a test file does; Go packages, Java
# classes, Rust binaries, describe blocks and test names do not. A file so named is
# protected and put back before the run, so the list errs on the side of more.
SOURCE_SUFFIXES = frozenset(
    {".py", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
     ".coffee", ".rb", ".go", ".java", ".kt", ".kts", ".scala", ".groovy", ".rs", ".php",
     ".cs", ".fs", ".swift", ".m", ".mm", ".c", ".cc", ".cpp", ".cxx", ".ex", ".exs", ".erl",
     ".dart", ".lua", ".pl", ".t", ".r", ".R", ".jl", ".hs", ".ml", ".clj", ".cljs", ".nim",
     ".zig", ".cr", ".sh", ".bash", ".zsh", ".bats", ".ps1", ".feature", ".robot"}
)  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Classnames with more parts than this are not tried as module paths (each split costs
# file-system lookups, and the report is untrusted).
_MAX_PARTS = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class TestResult:
    """What a report says about one test id."""

    __test__ = False  # not a pytest test class, despite the name

    outcome: Outcome
    flaky: bool
    message: str
    attempts: int  # how many attempts (reruns) the report had for this id
    # The `line` attribute the report gave the test, as a number (pytest counts from 0,
    # xmlrunner from 1): where a finding points (graders/_test_findings.py).
    line: int | None = None


def test_id(case: Case, *, exists: Callable[[str], bool], known_ids: Collection[str] = ()) -> str:
    """The canonical id of one testcase.

    ``exists`` tells whether a relative POSIX path exists in the work tree, ``known_ids``
    are the task's ids, preferred when a report leaves the split of a name open.
    """
    return _Namer(exists, known_ids).identify(case)[0]


test_id.__test__ = False  # type: ignore[attr-defined]  # not a pytest test either


def file_of(test_id: str) -> str | None:
    """The file a task's id names, or None when the id names none.

    An id is a name. Its part before the first ``::`` is a file when it ends with a
    source file's suffix (:data:`SOURCE_SUFFIXES`): ``tests/test_x.py::test_a`` names
    ``tests/test_x.py``, ``example.com/calc::TestDivide`` and ``/ matches root`` name
    none. An id without ``::`` is a whole file (a module that failed to load) only when
    it holds no whitespace as well: ``loads index.js`` is a test's name.
    """
    head, separator, _ = test_id.partition("::")
    if PurePosixPath(head).suffix not in SOURCE_SUFFIXES:
        return None
    if not separator and any(char.isspace() for char in head):
        return None
    return head


def escape_controls(text: str) -> str:
    """``text`` with each control character written as Python writes it (``\\t``,
    ``\\x1b``), so that an id holding one (a YAML ``"\\t"`` that became a TAB) can be
    seen in a message and compared with the report's ids."""
    return _CONTROL.sub(lambda found: _ESCAPES.get(found[0], f"\\x{ord(found[0]):02x}"), text)


def collect(
    cases: Iterable[Case], *, tree: Path, known_ids: Collection[str] = ()
) -> dict[str, TestResult]:
    """Canonical id -> result for every testcase of a report (tree: the work tree the tests
    ran in, used to resolve module paths; known_ids: the task's fail_to_pass + pass_to_pass
    ids)."""
    namer = _Namer(_exists_in(tree), known_ids, roots=(tree, tree.resolve()))
    history: dict[str, list[_Attempt]] = {}
    for case in cases:
        key, part = namer.identify(case)
        attempts = history.setdefault(key, [])
        if attempts and (part or _teardown_of(attempts[-1], case)):
            attempts[-1].add(case)
        else:
            attempts.append(_Attempt(case))
    return _without_contradictions({key: _result(attempts) for key, attempts in history.items()})


def _without_contradictions(results: dict[str, TestResult]) -> dict[str, TestResult]:
    """``results``, where a file that the report has as skipped or not collected as a
    whole has no test that counts: such a test's record is not this file's (a test of
    another module can write any ``file``, ``classname`` and ``name`` it likes, with
    pytest's ``record_xml_attribute``), so its id is left missing and says why."""
    not_run = {
        key: _FILE_NOT_RUN[result.outcome]
        for key, result in results.items()
        if result.outcome in _FILE_NOT_RUN and file_of(key) == key
    }
    if not not_run:
        return results
    kept = {}
    for key, result in results.items():
        file, separator, _ = key.partition("::")
        if separator and file in not_run:
            reason = f"{NOT_COUNTED}the report has its file {file} as {not_run[file]} as a whole"
            result = TestResult(
                outcome=Outcome.MISSING, flaky=False, message=reason, attempts=result.attempts
            )
        kept[key] = result
    return kept


class _Attempt:
    """One run of a test, from one or more testcases: the worst of them decides."""

    __slots__ = ("flaky", "line", "message", "outcome")

    def __init__(self, case: Case) -> None:
        self.outcome, self.message, self.flaky = case.outcome, case.message, case.flaky
        self.line = case.line

    def add(self, case: Case) -> None:
        if _SEVERITY[case.outcome] > _SEVERITY[self.outcome]:
            self.outcome, self.message = case.outcome, case.message
        self.flaky = self.flaky or case.flaky


def _teardown_of(last: _Attempt, case: Case) -> bool:
    """Whether ``case`` is the teardown error of the attempt whose call failed.

    pytest writes that pair as two testcases. A teardown error after a call that passed
    is written into the call's own testcase, so a separate one after a passing testcase is
    a later attempt (pytest-rerunfailures writes each failed attempt as a bare testcase),
    and a setup error always opens an attempt: nothing of it ran before.
    """
    return (
        last.outcome is Outcome.FAILED
        and case.outcome is Outcome.ERROR
        and _TEARDOWN.match(case.message) is not None
    )


def _result(attempts: list[_Attempt]) -> TestResult:
    final = attempts[-1]
    # The last attempt decides when it passed after failures or errors only: a rerun that
    # passed (gotestsum, pytest-rerunfailures' bare testcases, Node 20's shared names).
    # Otherwise the worst attempt does, the last of its kind: nothing reruns a skipped test,
    # so a pass after a skip is a second record contradicting it (issue 9), and a skip does
    # not take back a failure.
    decided = final
    if final.outcome is not Outcome.PASSED or any(a.outcome is Outcome.SKIPPED for a in attempts):
        worst = max(_SEVERITY[a.outcome] for a in attempts)
        decided = next(a for a in reversed(attempts) if _SEVERITY[a.outcome] == worst)
    # Flaky needs a failure on record: a pass after a failed or errored attempt, or
    # `flakyFailure` children on a pass (Surefire and nextest write them when a rerun
    # passed, `rerunFailure` when every run failed). Testcases that all passed are not
    # flaky, however many: tests sharing a name (two `it('works')` in one describe block,
    # a `test.each` with equal titles, Node 20's files that name no file) write exactly
    # that, and so, indistinguishably, does pytest-rerunfailures for a failed attempt.
    flaky = final.outcome is Outcome.PASSED and final.flaky
    broken = False
    for attempt in attempts:
        flaky = flaky or (broken and attempt.outcome is Outcome.PASSED)
        broken = broken or attempt.outcome in _BROKEN
    return TestResult(
        outcome=decided.outcome,
        flaky=flaky,
        message=decided.message,
        attempts=len(attempts),
        line=_reported_line(decided.line),
    )


def _reported_line(line: str | None) -> int | None:
    """A report's ``line`` attribute as a number, or None when it is not one (the report
    is untrusted: no sign, no spaces, at most 9 digits)."""
    if line is None or not 0 < len(line) <= 9 or not line.isascii() or not line.isdigit():
        return None
    return int(line)


def _exists_in(tree: Path) -> Callable[[str], bool]:
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


class _Namer:
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
            if case.outcome not in _FILE_NOT_RUN:
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
