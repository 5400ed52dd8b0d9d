"""Copied next to a run's report as ``repogym_python_start.py`` and imported by the
``sitecustomize.py`` written beside it, in the Python the grader starts a test runner on
(issue 44): it runs in the task's environment (Python 3.8 and later) while ``site``
starts the interpreter, before the runner imports anything, and has no import of
repogym's.

The directory holding both is all of ``PYTHONPATH`` as Python starts
(:mod:`repogym.graders._python_start`): the task's value, or the image's, is not on
``sys.path`` while ``site`` runs the ``import`` lines of the environment's ``.pth`` files
(setuptools' ``_distutils_hack``), and ``python -m`` adds the invocation directory only
after ``site``. This module:

- puts ``PYTHONPATH`` back as the task set it (``$REPOGYM_TASK_PYTHONPATH``, what the
  command's own ``PYTHONPATH=`` was renamed to, or the value before the grader's), so
  that a process the tests start gets the task's value, and lays ``sys.path`` out as
  Python would have for it (the environment's ``.pth`` files ran without it: one that
  imports from a directory of ``PYTHONPATH`` would not find it);
- takes every entry inside the tree (``$REPOGYM_PYTHON_TREE``) out of ``sys.path`` for
  now (:data:`DEFERRED`): a ``PYTHONPATH=src`` of the task's, or an image's, would have
  let a package of the submission's shadow a module the runner imports while it starts
  (``org.python.core``, which ``copy`` tries; ``pygments``, which pytest imports);
- runs the environment's own ``sitecustomize`` (found with the tree off the path);
- for unittest and xmlrunner (``$REPOGYM_PYTHON_RUNNER``): imports the runner now, from
  the environment, then gives the deferred entries back. pytest's guard gives them back
  itself, once it has checked what pytest read (:func:`restore`).
"""

from __future__ import annotations

import contextlib
import os
import sys

# os.path, not pathlib: absolute without resolving links, as sys.path holds them.
HERE = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120
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
    """``PYTHONPATH`` put back as the task set it, and sys.path as Python would have made
    it from that value, the tree's entries taken out into DEFERRED."""
    task = os.environ.pop("REPOGYM_TASK_PYTHONPATH", None)
    was = os.environ.pop("REPOGYM_WAS_PYTHONPATH", "")
    value = task if task is not None else (was[1:] if was.startswith("=") else None)
    if value is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = value
    laid: list[str] = []
    for entry in _entries(value or "") + sys.path:
        if entry not in laid and entry != HERE:
            laid.append(entry)
    kept = []
    for index, entry in enumerate(laid):
        if tree and _inside(entry, tree):
            DEFERRED.append((index, entry))
        else:
            kept.append(entry)
    sys.path[:] = [*kept, HERE]  # last: pytest's guard is imported from it


def _their_sitecustomize() -> None:
    """The environment's own sitecustomize, if it has one (Debian's Python does)."""
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p) != HERE]  # noqa: PTH100
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def restore() -> None:
    """Give the tree's entries back to sys.path, where Python would have put them."""
    while DEFERRED:
        index, entry = DEFERRED.pop(0)
        if entry not in sys.path:
            sys.path.insert(min(index, len(sys.path)), entry)


def _start() -> None:
    tree = os.environ.pop("REPOGYM_PYTHON_TREE", "")
    runner = os.environ.pop("REPOGYM_PYTHON_RUNNER", "")
    _lay_out(os.path.realpath(tree) if tree else "")
    try:
        _their_sitecustomize()
    except Exception as error:  # theirs: Python itself only warns
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{error!r}")
    if runner == "unittest":
        for name in _RUNNER_MODULES:
            with contextlib.suppress(ImportError):
                __import__(name)
        restore()


_start()
