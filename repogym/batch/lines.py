"""What every line file of the batch commands shares (issue 23): a job file's lines
(:mod:`repogym.batch.jobs`, submissions to grade) and a tasks file's
(:mod:`repogym.batch.validations`, tasks to validate) are both one JSON object a line
naming ``repo``, ``base``, optionally ``task``, ``hidden`` and ``id``, with relative paths
from the file's directory.

A line read is a work item (:class:`Work`) an executor runs wherever it runs (a local
worker, a Ray task): its id, whether it may time a benchmark (then it runs alone), the
line of the output it comes to, and the line it gets when its worker is lost. A line that
is not one keeps its problem and comes to an error line: a bad line is an item with an
error, not a stopped run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repogym.errors import RepogymError, UsageError
from repogym.report import error_report
from repogym.task import load_task
from repogym.tree import git as _git


class Work(Protocol):
    """What an executor runs: see the module."""

    @property
    def id(self) -> str: ...

    @property
    def perf(self) -> bool: ...

    def run(self) -> dict[str, Any]:
        """Its line of the output; never raises for the item's own fault."""
        ...

    def error_line(self, message: str) -> dict[str, Any]:
        """Its line when it could not be run at all (its worker lost): ``message`` says why."""
        ...


class RepoSpec(BaseModel):
    """The keys every line has: a repository, a base of it, the task and hidden tests."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    repo: str = Field(min_length=1)
    base: str = Field(min_length=1)
    task: str | None = None
    hidden: str | None = None
    id: str | None = Field(default=None, min_length=1)


SpecT = TypeVar("SpecT", bound=RepoSpec)
LineT = TypeVar("LineT", bound="Line[Any]")


@dataclass(frozen=True, slots=True)
class Line(Generic[SpecT]):
    """A line read: its id, its number, and its spec, or why it is not one."""

    id: str
    line: int
    spec: SpecT | None
    problem: str | None = None
    root: str = "."  # the file's directory, which relative paths are from

    spec_model: ClassVar[type[RepoSpec]] = RepoSpec
    noun: ClassVar[str] = "line"  # what a line is called in messages
    verdict: ClassVar[str] = "passed"  # the key of its line that says it succeeded

    @property
    def perf(self) -> bool:
        """Whether it may time a benchmark: known once its task is read (then it must not
        run beside other work); an item whose task cannot be read here is assumed to."""
        spec = self.spec
        if spec is None:
            return False
        try:
            if spec.task is not None:
                task = load_task(self.path(spec.task))
            else:
                task = load_task(None, repo=self.path(spec.repo), commit=spec.base, ref=spec.base)
        except (RepogymError, OSError):
            return True  # read where it runs: assume the worst here
        return task.perf is not None

    def path(self, value: str) -> Path:
        """``value``, a path of the line, from the file's directory when relative."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else Path(self.root) / path

    def run(self) -> dict[str, Any]:
        raise NotImplementedError  # each kind of line says what running it is

    def error_line(self, message: str) -> dict[str, Any]:
        return {"id": self.id, **error_report("internal", message)}


def read_lines(kind: type[LineT], path: Path) -> Iterator[LineT]:
    """The items of the file ``path``, one per line that is not blank."""
    root = str(path.resolve().parent)
    with path.open(encoding="utf-8", errors="surrogateescape") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except ValueError as error:
                problem = f"line {number}: not JSON ({error}); write one object"
                yield kind(str(number), number, None, problem)
                continue
            yield line_of(kind, data, number, root)


def line_of(kind: type[LineT], data: object, number: int, root: str = ".") -> LineT:
    """The item ``data`` (a line's object) is, number ``number``; relative paths are
    ``root``'s."""
    where = f"line {number}"
    fallback = data.get("id") if isinstance(data, dict) else None
    line_id = fallback if isinstance(fallback, str) and fallback else str(number)
    if not isinstance(data, dict):
        problem = f"{where}: a {kind.noun} is a JSON object, not {_kind(data)}"
        return kind(line_id, number, None, problem)
    try:
        spec = kind.spec_model.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        key = ".".join(str(p) for p in first["loc"]) or f"the {kind.noun}"
        message = first["msg"].removeprefix("Value error, ")
        return kind(line_id, number, None, f"{where}: `{key}`: {message}")
    return kind(spec.id or str(number), number, spec, None, str(Path(root).resolve()))


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a single value"


def check_ids(items: list[LineT], path: Path | None) -> None:
    """A UsageError naming the first id two items share."""
    seen: dict[str, int] = {}
    for item in items:
        where = f"{path}: line {item.line}" if path is not None else f"{item.noun} {item.line}"
        if item.id in seen:
            raise UsageError(
                f"{where}: id {item.id!r} is {seen[item.id]}'s too; give each {item.noun} "
                "an id of its own"
            )
        seen[item.id] = item.line


def private_clone(item: Line[Any], spec: RepoSpec, dest: Path) -> Path:
    """A clone of ``spec.repo`` at ``dest`` with its branches and tags, nothing checked
    out; a local repository's objects are shared with it, not copied."""
    source = item.path(spec.repo)
    url = str(source) if source.exists() else spec.repo
    dest.mkdir(parents=True)
    _git.git(["init", "--quiet"], dest)
    if source.exists():
        common = _git.git(["rev-parse", "--git-common-dir"], source).decode().strip()
        objects = (source / common / "objects").resolve()
        (dest / ".git/objects/info/alternates").write_text(f"{objects}\n")
    refs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    _git.git(["fetch", "--quiet", "--no-tags", url, *refs], dest)
    return dest


def commit_of(repo: Path, ref: str, key: str) -> str:
    """The commit ``ref`` (the line's ``key``) names in ``repo``, or a UsageError."""
    try:
        return _git.resolve_commit(repo, ref)
    except RepogymError:
        raise UsageError(f"`{key}` {ref!r} is no commit of the repository") from None
