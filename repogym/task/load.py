"""Loading a task: the one way a task file becomes a :class:`Task`, with one-line errors.

A task comes from one of three places, and :func:`load_task` takes each: a file on disk
(a path), the task file as committed at the base (a :class:`TaskFile`, which is what a
grade reads by default, so a submission cannot edit its own rubric), or a :class:`Task`
already loaded. :func:`parse_task` validates the bytes, wherever they were read. Every
mistake becomes a :class:`~repogym.errors.TaskError` line naming the file, the line, the
key, the value and what to do about it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from repogym.errors import TaskError, WorkspaceError
from repogym.task._checks import cross_checks
from repogym.task._errors import schema_lines, where
from repogym.task._yaml import load_yaml
from repogym.task.schema import TASK_FILE, Task
from repogym.tree import git as _git


@dataclass(frozen=True, slots=True)
class TaskFile:
    """The task file at ``path`` in the base commit's tree (never the submission's
    copy). ``fix`` ends the message when there is none: how else the user can give one."""

    path: str = TASK_FILE
    fix: str = "or pass one with --task FILE"


TaskSource = Task | TaskFile | str | os.PathLike[str] | None


def load_task(
    source: TaskSource,
    *,
    repo: str | os.PathLike[str] | None = None,
    commit: str | None = None,
    ref: str | None = None,
) -> Task:
    """The task ``source`` names: a loaded :class:`Task` as it is, the file at a path, or
    a :class:`TaskFile` (None: ``.repogym.yml``) as it is at ``commit`` of ``repo``,
    named ``ref`` in messages."""
    if isinstance(source, Task):
        return source
    if source is None:
        source = TaskFile()
    if not isinstance(source, TaskFile):
        return _read_file(Path(source))
    if repo is None or commit is None:
        raise TypeError("load_task() needs `repo` and `commit` to read a TaskFile")
    return _read_committed(Path(repo), commit, ref, source)


def _read_committed(repo: Path, commit: str, ref: str | None, file: TaskFile) -> Task:
    entry = _git.tree_entry(repo, commit, file.path)
    name = ref or commit[:12]
    if entry is None:
        raise WorkspaceError(
            f"{file.path} not found at {name}: commit a task file on the base branch, {file.fix}"
        )
    if entry.type != "blob" or entry.symlink:
        what = {"tree": "a directory", "commit": "a submodule"}.get(entry.type, "a symlink")
        raise WorkspaceError(
            f"{file.path} at {name} is {what}: commit the task file itself there, {file.fix}"
        )
    raw = _git.git(["cat-file", "blob", entry.sha], repo)
    return parse_task(raw, f"{file.path}@{name}")


def parse_task(text: bytes | str, source: str = TASK_FILE) -> Task:
    """Parse and validate the bytes of a task file; ``source`` names it in errors."""
    if not isinstance(text, (bytes, str)):
        raise TypeError(
            f"parse_task() takes the task file's contents as str or bytes, "
            f"not {type(text).__name__}; use load_task() for a path"
        )
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    data, positions = load_yaml(raw, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a single value"
        raise TaskError(
            f"{source}: the task file must be a mapping of keys such as `version: 1` and "
            f"`type: bugfix`, one per line, not {kind}"
        )
    try:
        task = Task.model_validate(data)
    except ValidationError as error:
        raise TaskError(*schema_lines(error, source, positions, Task)) from None
    problems = [
        f"{where(source, loc, positions)}: {'`' + '.'.join(loc) + '`: ' if loc else ''}{message}"
        for loc, message in cross_checks(task)
    ]
    if problems:
        raise TaskError(*problems)
    task._source = source
    task._sha256 = hashlib.sha256(raw).hexdigest()
    task._raw = raw
    for index, grader in enumerate(task.grading.graders):
        grader._line = positions.get(("grading", "graders", str(index)), 0)
    return task


def _read_file(path: Path) -> Task:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TaskError(
            f"{path}: cannot read the task file: {error.strerror or error}; "
            "check the path and its permissions"
        ) from None
    except ValueError:  # a NUL byte, which no path can hold
        raise TaskError(f"{str(path)!r}: not a path: it holds a NUL byte; check it") from None
    return parse_task(raw, str(path))
