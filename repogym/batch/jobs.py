"""A batch's jobs (issue 23): one JSON object a line, each a submission to grade, and how
one is graded wherever it runs (a local worker, a Ray task).

A job names ``repo`` (a path or a git URL reachable from the machine), ``base`` (a ref of
it) and the submission as exactly one of ``patch`` (a unified diff file, applied at the
base), ``ref`` (a commit of ``repo``) or ``tree`` (a directory: the submission's files,
which replace the base's); optionally ``task`` (a task file, instead of ``.repogym.yml``
at the base), ``hidden`` (a directory of hidden tests) and ``id`` (default: the line's
number, from 1). Relative paths are the job file's directory's.

:func:`grade_job` grades one in a private clone (the repository's objects shared with it,
not copied, when it is a local path) and returns its line of the output: the engine's
report (an error report when the job could not be graded: a bad line, a patch that does
not apply, a crash) with ``id`` and ``timings``. It never raises for a job's own fault.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from repogym.errors import RepogymError, UsageError
from repogym.grading import grade
from repogym.report import error_report, report_dict, user_error_report
from repogym.sandbox.process import internal_error_line
from repogym.task import load_task
from repogym.tree import git as _git

Submission = Literal["patch", "ref", "tree"]
SUBMISSIONS: tuple[Submission, ...] = ("patch", "ref", "tree")


class JobSpec(BaseModel):
    """One line of a job file, as written."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    repo: str = Field(min_length=1)
    base: str = Field(min_length=1)
    patch: str | None = None
    ref: str | None = None
    tree: str | None = None
    task: str | None = None
    hidden: str | None = None
    id: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_submission(self) -> JobSpec:
        given = [key for key in SUBMISSIONS if getattr(self, key) is not None]
        if len(given) != 1:
            said = ", ".join(f"`{key}`" for key in given) or "none"
            raise ValueError(
                f"give the submission as exactly one of `patch`, `ref` or `tree` ({said} given)"
            )
        return self


@dataclass(frozen=True, slots=True)
class Job:
    """A job to run: its id, its line, and its spec, or why the line is not one."""

    id: str
    line: int
    spec: JobSpec | None
    problem: str | None = None
    root: str = "."  # the job file's directory, which relative paths are from

    @property
    def perf(self) -> bool:
        """Whether the job may time a benchmark: known once its task is read (then it
        must not run beside other work); a job whose task cannot be read here is
        assumed to."""
        return _has_perf(self)


def read_jobs(path: Path) -> Iterator[Job]:
    """The jobs of the file ``path``, one per line that is not blank. A line that is not
    a job is one with a problem, not a stopped batch."""
    root = str(path.resolve().parent)
    with path.open(encoding="utf-8", errors="surrogateescape") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            yield _job(text, number, root)


def _job(text: str, number: int, root: str) -> Job:
    try:
        data = json.loads(text)
    except ValueError as error:
        return Job(
            str(number), number, None, f"line {number}: not JSON ({error}); write one object"
        )
    return job_of(data, number, root)


def job_of(data: object, number: int, root: str = ".") -> Job:
    """The job ``data`` (a line's object) is, number ``number``; relative paths are
    ``root``'s."""
    where = f"line {number}"
    fallback = data.get("id") if isinstance(data, dict) else None
    job_id = fallback if isinstance(fallback, str) and fallback else str(number)
    if not isinstance(data, dict):
        return Job(job_id, number, None, f"{where}: a job is a JSON object, not {_kind(data)}")
    try:
        spec = JobSpec.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        key = ".".join(str(p) for p in first["loc"]) or "the job"
        message = first["msg"].removeprefix("Value error, ")
        return Job(job_id, number, None, f"{where}: `{key}`: {message}")
    return Job(spec.id or str(number), number, spec, None, str(Path(root).resolve()))


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a single value"


def _has_perf(job: Job) -> bool:
    spec = job.spec
    if spec is None:
        return False
    try:
        if spec.task is not None:
            task = load_task(_path(job, spec.task))
        else:
            task = load_task(None, repo=_path(job, spec.repo), commit=spec.base, ref=spec.base)
    except (RepogymError, OSError):
        return True  # read where it is graded: assume the worst here
    return task.perf is not None


def _path(job: Job, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(job.root) / path


def grade_job(job: Job, scratch: str | None = None) -> dict[str, Any]:
    """The output line of ``job``: its report, ``id`` and ``timings`` (seconds)."""
    started = time.monotonic()
    # When it ran (seconds since the epoch), and how long each step took.
    timings: dict[str, float] = {"started_at": round(time.time(), 3)}
    try:
        if job.spec is None:
            raise UsageError(job.problem or f"line {job.line}: not a job")
        with tempfile.TemporaryDirectory(prefix="repogym-job-", dir=scratch) as holder:
            tree, base = _prepare(job, job.spec, Path(holder) / "repo")
            timings["prepare"] = round(time.monotonic() - started, 3)
            spec = job.spec
            task = _path(job, spec.task) if spec.task else None
            hidden = _path(job, spec.hidden) if spec.hidden else None
            graded = grade(tree, base=base, task=task, hidden=hidden)
            timings["grade"] = round(time.monotonic() - started - timings["prepare"], 3)
            report = report_dict(graded)
    except RepogymError as error:
        report = user_error_report(error)
    except Exception as error:  # a job's crash is its line, not the batch's end
        report = error_report("internal", internal_error_line(error))
    timings["total"] = round(time.monotonic() - started, 3)
    return {"id": job.id, **report, "timings": timings}


def _prepare(job: Job, spec: JobSpec, dest: Path) -> tuple[Path, str]:
    """A private clone of ``spec.repo`` at the base with the submission in its work
    tree; the clone and the base's sha."""
    source = _path(job, spec.repo)
    url = str(source) if source.exists() else spec.repo
    dest.mkdir(parents=True)
    _git.git(["init", "--quiet"], dest)
    if source.exists():  # share the objects, do not copy them
        common = _git.git(["rev-parse", "--git-common-dir"], source).decode().strip()
        objects = (source / common / "objects").resolve()
        (dest / ".git/objects/info/alternates").write_text(f"{objects}\n")
    refs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    _git.git(["fetch", "--quiet", "--no-tags", url, *refs], dest)
    base = _commit(dest, spec.base, "base")
    if spec.ref is not None:
        head = _commit(dest, spec.ref, "ref")
        _git.git(["checkout", "--quiet", "--detach", head], dest)
        return dest, base
    _git.git(["checkout", "--quiet", "--detach", base], dest)
    if spec.patch is not None:
        _apply(dest, _path(job, spec.patch))
    else:
        assert spec.tree is not None
        _replace(dest, _path(job, spec.tree))
    return dest, base


def _commit(repo: Path, ref: str, key: str) -> str:
    try:
        return _git.resolve_commit(repo, ref)
    except RepogymError:
        raise UsageError(f"`{key}` {ref!r} is no commit of the repository") from None


def _apply(repo: Path, patch: Path) -> None:
    if not patch.is_file():
        raise UsageError(f"`patch` {patch}: no such file")
    # An empty patch is the empty submission (an agent that changed nothing), not an error.
    done = _git.run(["apply", "--allow-empty", "--whitespace=nowarn", str(patch.resolve())], repo)
    if done.returncode != 0:
        # git's first line, not the job's private clone (another path every time).
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[0] if said else f"git apply: exit code {done.returncode}"
        raise UsageError(f"`patch` {patch}: it does not apply at the base ({why})")


def _replace(repo: Path, tree: Path) -> None:
    """The work tree's files replaced by those of ``tree`` (its ``.git`` left out)."""
    if not tree.is_dir():
        raise UsageError(f"`tree` {tree}: not a directory")
    for child in repo.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(
        tree, repo, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git")
    )
