"""``repogym validate --tasks``'s lines (issue 23): one JSON object a line, each a task to
validate as ``repogym validate`` validates one, run by the batch's executors.

A line names ``repo`` and ``base`` as a job does (:mod:`repogym.batch.jobs`), optionally
``task``, ``hidden`` and ``id``, and ``solution`` (a ref of ``repo``, or a patch file
applied at the base) with ``repeat`` (grade it that many times, default 1). Relative paths
are the tasks file's directory's.

:func:`validate_job` validates one in a private clone and returns its line of the output:
``id``, ``valid``, ``findings`` (each ``{"status": "ok" | "problem", "text": ...}``, in
the order checked) and ``timings``; a task that cannot be validated (a bad line, a base
that is no commit, a task file that does not load, a crash) has ``valid: false`` and an
``error`` (``kind``, ``message``) instead of findings. It never raises for the task's own
fault.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from repogym.batch.lines import Line, RepoSpec
from repogym.batch.sources import commit_of, local_source, private_clone
from repogym.errors import RepogymError
from repogym.report.build import error_report
from repogym.tree import git as _git
from repogym.validate import Validation, validate

Status = Literal["ok", "problem"]


class ValidationSpec(RepoSpec):
    """One line of a tasks file, as written."""

    solution: str | None = Field(default=None, min_length=1)
    repeat: int = Field(default=1, ge=1)

    @field_validator("repeat")
    @classmethod
    def _repeat_needs_solution(cls, repeat: int, info: ValidationInfo) -> int:
        if repeat > 1 and info.data.get("solution") is None:
            raise ValueError(
                f"{repeat} needs `solution`: name the reference solution to grade that many times"
            )
        return repeat


@dataclass(frozen=True, slots=True)
class ValidationJob(Line[ValidationSpec]):
    """A task to validate: its id, its line, and its spec, or why the line is not one."""

    spec_model: ClassVar[type[RepoSpec]] = ValidationSpec
    noun: ClassVar[str] = "task"
    verdict: ClassVar[str] = "valid"

    def run(self) -> dict[str, Any]:
        return validate_job(self)

    def error_line(self, message: str) -> dict[str, Any]:
        return {"id": self.id, "valid": False, "error": _error("internal", message)}


def validate_job(job: ValidationJob) -> dict[str, Any]:
    """The output line of ``job``: ``valid``, its findings, ``id`` and ``timings``."""

    def steps(timings: dict[str, float]) -> dict[str, Any]:
        spec = job.spec
        assert spec is not None
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="repogym-validation-") as holder:
            repo = private_clone(spec.repo, job.root, (spec.base,), Path(holder) / "repo")
            base = commit_of(repo, spec.base, "base", local_source(spec.repo, job.root))
            timings["prepare"] = round(time.monotonic() - started, 3)
            line = _line(_validate(job, spec, repo, base))
            timings["validate"] = round(time.monotonic() - started - timings["prepare"], 3)
            return line

    return job.timed(steps, lambda report: {"valid": False, "error": report["error"]})


def _validate(job: ValidationJob, spec: ValidationSpec, repo: Path, base: str) -> Validation:
    solution = spec.solution
    if solution is not None and job.path(solution).exists():
        solution = str(job.path(solution))  # a patch file, from the tasks file's directory
    try:  # by its name where the clone knows it (the findings say it), else its commit
        _git.resolve_commit(repo, spec.base)
        named = spec.base
    except RepogymError:
        named = base
    return validate(
        repo,
        base=named,
        task=job.path(spec.task) if spec.task else None,
        solution=solution,
        repeat=spec.repeat,
        hidden=job.path(spec.hidden) if spec.hidden else None,
        solution_named=f"`solution` {spec.solution}",
    )


def _line(result: Validation) -> dict[str, Any]:
    findings = [{"status": _status(ok), "text": text} for ok, text in result.findings]
    return {"valid": result.valid, "findings": findings}


def _status(ok: bool) -> Status:
    return "ok" if ok else "problem"


def _error(kind: Literal["internal"], message: str) -> dict[str, Any]:
    error: dict[str, Any] = error_report(kind, message)["error"]
    return error
