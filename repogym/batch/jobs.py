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

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from repogym.batch.lines import Line, RepoSpec, line_of, read_lines
from repogym.batch.sources import commit_of, local_source, private_clone
from repogym.errors import UsageError
from repogym.grading import grade
from repogym.report.build import report_dict
from repogym.sandbox import scratch
from repogym.tree import git as _git

Submission = Literal["patch", "ref", "tree"]
SUBMISSIONS: tuple[Submission, ...] = ("patch", "ref", "tree")


class JobSpec(RepoSpec):
    """One line of a job file, as written."""

    patch: str | None = None
    ref: str | None = None
    tree: str | None = None

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
class Job(Line[JobSpec]):
    """A job to run: its id, its line, and its spec, or why the line is not one."""

    spec_model: ClassVar[type[RepoSpec]] = JobSpec
    noun: ClassVar[str] = "job"

    def run(self) -> dict[str, Any]:
        return grade_job(self)


def read_jobs(path: Path) -> Iterator[Job]:
    """The jobs of the file ``path``, one per line that is not blank. A line that is not
    a job is one with a problem, not a stopped batch."""
    return read_lines(Job, path)


def job_of(data: object, number: int, root: str = ".") -> Job:
    """The job ``data`` (a line's object) is, number ``number``; relative paths are
    ``root``'s."""
    return line_of(Job, data, number, root)


def grade_job(job: Job) -> dict[str, Any]:
    """The output line of ``job``: its report, ``id`` and ``timings`` (seconds)."""

    def steps(timings: dict[str, float]) -> dict[str, Any]:
        spec = job.spec
        assert spec is not None
        started = time.monotonic()
        with scratch.held("repogym-job-") as holder:
            tree, base = _prepare(job, spec, Path(holder) / "repo")
            timings["prepare"] = round(time.monotonic() - started, 3)
            task = job.path(spec.task) if spec.task else None
            hidden = job.path(spec.hidden) if spec.hidden else None
            graded = grade(tree, base=base, task=task, hidden=hidden)
            timings["grade"] = round(time.monotonic() - started - timings["prepare"], 3)
            return report_dict(graded)

    return job.timed(steps, lambda report: report)


def _prepare(job: Job, spec: JobSpec, dest: Path) -> tuple[Path, str]:
    """A private clone of ``spec.repo`` at the base with the submission in its work
    tree; the clone and the base's sha."""
    names = (spec.base, spec.ref) if spec.ref is not None else (spec.base,)
    private_clone(spec.repo, job.root, names, dest)
    source = local_source(spec.repo, job.root)
    base = commit_of(dest, spec.base, "base", source)
    if spec.ref is not None:
        head = commit_of(dest, spec.ref, "ref", source)
        _git.git(["checkout", "--quiet", "--detach", head], dest)
        return dest, base
    _git.git(["checkout", "--quiet", "--detach", base], dest)
    if spec.patch is not None:
        _apply(dest, job.path(spec.patch))
    else:
        assert spec.tree is not None
        _replace(dest, job.path(spec.tree))
    return dest, base


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
