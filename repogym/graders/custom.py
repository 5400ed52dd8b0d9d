"""Custom graders named in ``grading.graders``, imported from the baseline, never the PR.

A submission must not be able to run code inside the grader (issue 2), so a
``module:Class`` is looked up in the baseline tree first, then in installed packages,
with every path inside the submission's work tree taken off ``sys.path`` meanwhile.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from repogym.errors import TaskError
from repogym.graders.base import Grader
from repogym.task import CustomGrader


def load_custom_grader(
    spec: CustomGrader, baseline: Path | None, submission: Path | None, source: str
) -> Grader:
    """Import and instantiate ``spec.grader`` with the role the task declares."""
    module_name, class_name = spec.grader.split(":")
    at = f"{source}:{spec.line}" if spec.line else source
    where = f"{at}: `grading.graders`: {spec.grader}"
    with _import_path(baseline, submission):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            roots = "the baseline tree or installed packages" if baseline else "installed packages"
            raise TaskError(
                f"{where}: cannot import {module_name!r} from {roots} ({error}); "
                "commit the module to the base branch or install it"
            ) from None
        except SystemExit as error:  # a module that exits on import must not end repogym
            raise TaskError(
                f"{where}: importing {module_name!r} called sys.exit({error.code!r}); "
                "a grader module must not exit when imported"
            ) from None
        except Exception as error:
            raise TaskError(
                f"{where}: importing {module_name!r} raised {type(error).__name__}: {error}"
            ) from None
    if submission and _inside(getattr(module, "__file__", None), submission):
        raise TaskError(f"{where}: resolved to the submission's own copy; refusing to run it")
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Grader)):
        raise TaskError(f"{where}: {module_name!r} has no Grader subclass called {class_name!r}")
    try:
        grader = cls()
    except Exception as error:
        raise TaskError(
            f"{where}: {class_name}() raised {type(error).__name__}: {error}; a custom grader "
            "must be constructible without arguments"
        ) from None
    grader.role = spec.role
    if not grader.name:
        raise TaskError(f'{where}: the class sets no `name`; add `name = "..."` to it')
    return grader


def _inside(path: str | None, root: Path) -> bool:
    return bool(path) and Path(os.path.realpath(str(path))).is_relative_to(root.resolve())


# The rubric trees custom graders were imported from in this process.
_RUBRICS: set[Path] = set()


@contextlib.contextmanager
def _import_path(baseline: Path | None, submission: Path | None) -> Iterator[None]:
    """Search the baseline first; hide the submission's tree and the current directory."""
    saved = sys.path[:]

    def trusted(entry: str) -> bool:
        # "" and relative entries mean the current directory, often the work tree itself.
        return Path(entry).is_absolute() and not (submission and _inside(entry, submission))

    sys.path[:] = ([str(baseline)] if baseline else []) + [p for p in saved if trusted(p)]
    # Served from the cache, a module imported earlier from the submission, or from
    # another grade's rubric (a batch worker grades the tasks of many bases, issue 23),
    # would stand in for this rubric's own.
    # (Modules of a rubric have their file under the sys.path entry given here; those
    # of the submission are found wherever a link took them.)
    others = tuple(f"{root}{os.sep}" for root in _RUBRICS if root != baseline)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (others and isinstance(file, str) and file.startswith(others)) or (
            submission and _inside(file, submission)
        ):
            del sys.modules[name]
    _RUBRICS.intersection_update({root for root in _RUBRICS if root.is_dir()})
    if baseline is not None:
        _RUBRICS.add(baseline)
    try:
        yield
    finally:
        sys.path[:] = saved
