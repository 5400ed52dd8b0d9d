"""Copied next to a run's report as ``repogym_python_start.py`` and imported by the
``sitecustomize.py`` written beside it, in the Python the grader starts a test runner on
(issue 44): it runs in the task's environment (Python 3.8 and later) while ``site``
starts the interpreter, before the runner imports anything, and has no import of
repogym's.

The directory holding both is all of ``PYTHONPATH`` as Python starts
(:mod:`repogym.graders.tests.python_start`): the task's value, or the image's, is not on
``sys.path`` while ``site`` runs the ``import`` lines of the environment's ``.pth`` files
(setuptools' ``_distutils_hack``), and ``python -m`` adds the invocation directory only
after ``site``. The task's value is in ``$REPOGYM_TASK_PYTHONPATH`` (unset where the task
has none). This module:

- lays ``sys.path`` out as Python would have from the task's value, but takes every entry
  inside the tree (``$REPOGYM_PYTHON_TREE``) out for now (:data:`DEFERRED`): a
  ``PYTHONPATH=src`` would have let a package of the submission's shadow a module the
  runner imports while it starts (``org.python.core``, which ``copy`` tries;
  ``pygments``, which pytest imports);
- runs the environment's own ``sitecustomize`` and ``usercustomize`` (found with the tree
  off the path); the tree's are never run (issue 44's red team: a ``usercustomize.py`` in
  ``src`` ran after the tree went back on the path), nor the user site's
  (``PYTHONNOUSERSITE``, set by the grader: a step before the runner could plant one in
  the run's HOME);
- reads and writes bytecode in a fresh directory of its own (``sys.pycache_prefix``), not
  in the tree's ``__pycache__``;
- for pytest, imports the grader's guard plugin now (:mod:`repogym.graders.tests.pytest_guard`),
  from this directory, before pytest reads a configuration that puts the tree first on
  ``sys.path``; the guard gives the environment and the tree's entries back once it has
  checked what pytest read (:func:`give_back`, :func:`restore`). Until then the
  environment stays as the grader set it, so that a Python process between the command
  and pytest hands it on;
- for unittest and xmlrunner, imports the runner now, from the environment, then gives
  the environment and the tree's entries back.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types

# os.path, not pathlib: absolute without resolving links, as sys.path holds them.
HERE = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120
GUARD = "repogym_pytest_guard"
TASK_VARIABLE = "REPOGYM_TASK_PYTHONPATH"
# (position in sys.path, entry): the tree's entries, out of sys.path until restore().
DEFERRED: list[tuple[int, str]] = []
# What unittest's and xmlrunner's main import as they start, and their reports' writers.
_RUNNER_MODULES = (
    "copy",
    "argparse",
    "unittest",
    "unittest.main",
    "unittest.loader",
    "unittest.runner",
    "unittest.mock",
    "xmlrunner",
    "xmlrunner.runner",
    "xmlrunner.result",
    "xmlrunner.builder",
)


def _inside(entry: str, tree: str) -> bool:
    real = os.path.realpath(entry or os.curdir)
    return real == tree or real.startswith(tree.rstrip(os.sep) + os.sep)


def _entries(value: str) -> list[str]:
    # An empty entry is the current directory, as Python takes it.
    return [os.path.abspath(p) for p in value.split(os.pathsep)] if value else []  # noqa: PTH100


def _lay_out(tree: str) -> None:
    """sys.path as Python would have made it from the task's PYTHONPATH, the tree's
    entries taken out into DEFERRED, this directory last (the guard is imported from it)."""
    laid: list[str] = []
    for entry in _entries(os.environ.get(TASK_VARIABLE) or "") + sys.path:
        if entry not in laid and entry != HERE:
            laid.append(entry)
    kept = []
    for index, entry in enumerate(laid):
        if tree and _inside(entry, tree):
            DEFERRED.append((index, entry))
        else:
            kept.append(entry)
    sys.path[:] = [*kept, HERE]


def _theirs(name: str) -> None:
    """The environment's own ``sitecustomize`` or ``usercustomize``, if it has one, run
    now; a ``usercustomize`` is then the one ``site`` finds, so the tree's is not run."""
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if p != HERE]
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    module = types.ModuleType(name) if spec is None else importlib.util.module_from_spec(spec)
    if name == "usercustomize":
        sys.modules[name] = module
    if spec is not None and spec.loader is not None:
        try:
            spec.loader.exec_module(module)
        except Exception as error:  # theirs: Python itself only warns
            print(f"Error in {name}; set PYTHONVERBOSE for traceback:\n{error!r}")


def give_back() -> None:
    """The environment as the task set it, for the processes the tests start."""
    value = os.environ.pop(TASK_VARIABLE, None)
    for name in ("REPOGYM_PYTHON_TREE", "REPOGYM_PYTHON_RUNNER", "REPOGYM_PYTHON_SELECT"):
        os.environ.pop(name, None)
    was = os.environ.pop("REPOGYM_WAS_PYTHONNOUSERSITE", "")
    if was.startswith("="):
        os.environ["PYTHONNOUSERSITE"] = was[1:]
    else:
        os.environ.pop("PYTHONNOUSERSITE", None)
    if value is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = value


def restore() -> None:
    """Give the tree's entries back to sys.path, where Python would have put them."""
    while DEFERRED:
        index, entry = DEFERRED.pop(0)
        if entry not in sys.path:
            sys.path.insert(min(index, len(sys.path)), entry)


def _bytecode_of_its_own() -> None:
    """Bytecode read and written in a fresh directory of this process's: none from a
    ``__pycache__`` of the tree, where a step of the command before the runner (the
    submission's) could have planted a test module's, matching its source's time and
    size (issue 44's red team: pytest's rewriter ran that instead of the tests)."""
    import tempfile

    sys.pycache_prefix = tempfile.mkdtemp(prefix="repogym-pycache-")


def _select(tree: str, chosen: str) -> None:
    """A rerun of unittest (issue 47) runs the ids in the file ``chosen`` and nothing
    else: the suite the program made is cut to the tests whose id (the module's file in
    ``tree``, its classes and the method, as the report names them) is one of them. A
    module that failed to load stays: its one record is its file's."""
    import json
    import unittest

    with open(chosen, encoding="utf-8") as listed:  # noqa: PTH123
        wanted = set(json.load(listed))

    def test_id(test: object) -> str | None:
        module = sys.modules.get(type(test).__module__)
        where = getattr(module, "__file__", None)
        if where is None:
            return None
        path = os.path.relpath(os.path.realpath(where), tree).replace(os.sep, "/")
        classes = type(test).__qualname__.replace(".", "::")
        return f"{path}::{classes}::{getattr(test, '_testMethodName', '')}"

    def kept(suite: unittest.TestSuite) -> unittest.TestSuite:
        chosen_tests: list[unittest.TestSuite | unittest.TestCase] = []
        for test in suite:
            if isinstance(test, unittest.TestSuite):
                chosen_tests.append(kept(test))
            elif type(test).__name__ == "_FailedTest" or test_id(test) in wanted:
                chosen_tests.append(test)
        return unittest.TestSuite(chosen_tests)

    run_tests = unittest.TestProgram.runTests

    def runs_the_chosen(program: unittest.TestProgram) -> None:
        program.test = kept(program.test)  # type: ignore[attr-defined]  # set by its parseArgs
        run_tests(program)

    unittest.TestProgram.runTests = runs_the_chosen  # type: ignore[method-assign,assignment]


def _start() -> None:
    tree = os.environ.get("REPOGYM_PYTHON_TREE", "")
    runner = os.environ.get("REPOGYM_PYTHON_RUNNER", "")
    chosen = os.environ.get("REPOGYM_PYTHON_SELECT", "")
    _bytecode_of_its_own()
    _lay_out(os.path.realpath(tree) if tree else "")
    _theirs("sitecustomize")
    _theirs("usercustomize")
    if runner == "pytest":
        with contextlib.suppress(ImportError):  # a Python without pytest on the way
            __import__(GUARD)
        return
    give_back()
    if runner == "unittest":
        for name in _RUNNER_MODULES:
            with contextlib.suppress(ImportError):
                __import__(name)
        if chosen:
            _select(os.path.realpath(tree), chosen)
    restore()


_start()
