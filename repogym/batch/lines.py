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
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from repogym.batch.sources import checked_repo, has_perf
from repogym.errors import UsageError
from repogym.report.build import error_report, exception_report
from repogym.sandbox.process import internal_error_line


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

    @field_validator("repo")
    @classmethod
    def _a_path_or_a_url(cls, value: str) -> str:
        return checked_repo(value)  # never an option of git's (issue 44)


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
        run beside other work); an item whose task cannot be read here is assumed to
        (:func:`repogym.batch.sources.has_perf`)."""
        spec = self.spec
        if spec is None:
            return False
        task = str(self.path(spec.task)) if spec.task is not None else None
        return has_perf(spec.repo, self.root, spec.base, task)

    def path(self, value: str) -> Path:
        """``value``, a path of the line, from the file's directory when relative."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else Path(self.root) / path

    def run(self) -> dict[str, Any]:
        raise NotImplementedError  # each kind of line says what running it is

    def error_line(self, message: str) -> dict[str, Any]:
        return {"id": self.id, **error_report("internal", message)}

    def timed(
        self,
        steps: Callable[[dict[str, float]], dict[str, Any]],
        failed: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> dict[str, Any]:
        """Its line: ``id``, what ``steps`` returns (given the timings to add its steps'
        seconds to), and ``timings``. An error of the item's (a RepogymError) or a crash
        is the line ``failed`` makes of its error report, never the run's end."""
        started = time.monotonic()
        # When it ran (seconds since the epoch), and how long each step took.
        timings: dict[str, float] = {"started_at": round(time.time(), 3)}
        try:
            if self.spec is None:
                raise UsageError(self.problem or f"line {self.line}: not a {self.noun}")
            body = steps(timings)
        except Exception as error:
            body = failed(exception_report(error, line=internal_error_line))
        timings["total"] = round(time.monotonic() - started, 3)
        return {"id": self.id, **body, "timings": timings}


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
