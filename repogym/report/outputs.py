"""Writing what a grade puts out (the JSON report, the Markdown summary, a rendered
template) to the paths the user named: each file whole or not at all, never through a
link planted in the graded tree, and every output checked before a grade starts so that
minutes of grading are not lost to a path that cannot be written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from repogym.tree.atomic import PendingWrite, tree_problem
from repogym.tree.links import LinkInTree

__all__ = ["output_problems", "write_outputs"]


def output_problems(
    outputs: Sequence[tuple[str, str, str]], *, tree: Path | None = None
) -> list[str]:
    """One line for each (name, path, example) whose path could not be written, naming
    the output (an option such as ``--json``) and the path, and how to fix it.

    Cheap, so that callers check before long work rather than fail after it.
    ``example`` is a file name to suggest, such as ``report.json``. ``tree`` is the graded
    work tree, where a symlink on the way to a path is refused (:func:`tree_problem`).
    """
    problems = []
    seen: dict[str, str] = {}
    for name, text, example in outputs:
        problem = _output_problem(text, example)
        if problem is None and tree is not None:
            problem = tree_problem(text, tree)
        real = os.path.realpath(text) if text else ""
        if problem is None and real in seen and not _is_special(real):
            problem = f"is also the {seen[real]} path; give each output a file of its own"
        seen.setdefault(real, name)
        if problem is not None:
            problems.append(f"{name} {text or repr(text)}: {problem}")
    return problems


def _output_problem(text: str, example: str) -> str | None:
    """Why a file could not be written at ``text`` (as typed), and how to fix it: it must
    not be empty nor a directory, and the nearest directory on its way that exists must
    be one we may create files in (missing ones are created by :class:`PendingWrite`)."""
    if not text:
        return f"the path is empty; name a file, such as {example}"
    path = Path(text)
    try:
        existing: os.stat_result | None = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        existing = None
    except OSError as error:
        return f"cannot be used ({error.strerror}); choose another path"
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        return f"is a directory; name a file in it, such as {path / example}"
    if text.endswith("/"):
        return f"ends with / (a directory); name a file, such as {path / example}"
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        if os.access(path, os.W_OK):
            return None
        return "cannot be written (permission denied); choose a path you may write to"
    return _directory_problem(Path(os.path.realpath(path)) if path.is_symlink() else path)


def _directory_problem(path: Path) -> str | None:
    """Why no file can be created at ``path``: the nearest directory on its way that
    exists is not a directory, or not one we may create files in."""
    for directory in path.parents:
        try:
            status = directory.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as error:
            return f"{directory} cannot be used ({error.strerror}); choose another path"
        if not stat.S_ISDIR(status.st_mode):
            return f"{directory} is not a directory; choose a path in a directory"
        if not os.access(directory, os.W_OK | os.X_OK):
            return (
                f"cannot create files in {directory} (permission denied); "
                "choose a directory you may write to"
            )
        return None
    return None


def _is_special(path: str) -> bool:
    """Whether ``path`` exists and is not a regular file (a FIFO, ``/dev/null``...)."""
    return Path(path).exists() and not Path(path).is_file()


def write_outputs(
    outputs: Sequence[tuple[str, str, str]], *, tree: Path | None = None
) -> str | None:
    """Write each (name, path, text); or one line naming the output that could not be
    written and why. ``tree``: the graded work tree, as for :class:`PendingWrite`.

    Every text first goes to a temporary file beside its path; only then is anything put
    in place: direct writes first (FIFOs, devices, our own stdout), since they may fail
    (a full device), renames last, since they do not. So a failure leaves every regular
    file as it was.
    """
    pending: list[tuple[str, str, PendingWrite]] = []
    current = ("", "")  # the output being written
    try:
        for name, path, text in outputs:
            current = (name, path)
            pending.append((name, path, PendingWrite(Path(path), text, tree=tree)))
        for name, path, write in sorted(pending, key=lambda item: item[2].replaces):
            current = (name, path)
            write.commit()
    except LinkInTree as error:  # planted since the paths were checked
        name, path = current
        return f"{name} {path}: {error.problem}"
    except OSError as error:
        reason = error.strerror or str(error)
        name, path = current
        return f"{name} {path}: could not write it ({reason}); choose another path and run again"
    finally:
        for _, _, write in pending:
            write.discard()
    return None
