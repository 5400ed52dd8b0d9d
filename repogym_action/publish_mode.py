"""Publish mode (``mode: publish``): post, from a ``workflow_run`` job that may write, the
report a ``pull_request`` run graded with a read-only token (a pull request from a fork)
and uploaded as an artifact. README, "Pull requests from forks".

Nothing in the artifact is trusted. The pull request is the open one whose head is the
graded run's head commit from the run's head repository, both read from the event payload
(GitHub's) and the API, never from the artifact; the report's head must be that commit;
when several open pull requests have that head (one head proposed to several bases), the
one whose base branch the report was graded against, and no guess: a report whose base
matches none of them, or several, is refused (issue 19);
the report is read as JSON of at most :data:`MAX_REPORT` bytes, validated against the
schema of :mod:`repogym.report.schema`, and only rendered, by the same sandboxed
templates as a grade. The payload's shape is checked too: a field of the wrong type is one
line naming it, never a traceback.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.report.schema import REPORT_VERSION, Report, problems, shown
from repogym_action.commands import Commands
from repogym_action.event import EventError, PullRequest, Target, load_payload
from repogym_action.github import GitHub
from repogym_action.grade import Graded, workspace_templates
from repogym_action.publish import Publication, publish
from repogym_action.settings import RunContext, Settings

MAX_REPORT = 8 * 1024 * 1024  # bytes; a grade's report is far smaller
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories (as event.py)
WORKFLOWS = ".github"  # what a pull request's grading run runs from its merge commit


class ArtifactError(EventError):
    """The uploaded report cannot be published: one line saying why."""


def publish_uploaded(
    context: RunContext, settings: Settings, github: GitHub, out: Commands
) -> Graded | None:
    """Post the uploaded report; the grade it holds, or None when there is nothing to
    post (the pull request moved on or was closed)."""
    if context.event_name != "workflow_run":
        raise EventError(
            f"mode publish runs on workflow_run, not {context.event_name}: trigger the "
            "publishing workflow with `on: workflow_run` of the grading workflow"
        )
    run = _graded_run(load_payload(context.event_path), context)
    pulls = github.find_pulls(run["head_sha"], run["head_repository"])
    if not pulls:
        out.notice(
            f"no open pull request has {run['head_sha'][:12]} from {run['head_repository']} as "
            "its head any more (it moved on or was closed): nothing to publish"
        )
        return None
    report, model = read_report(settings.report, run["head_sha"])
    pull = _pull_of(model, pulls, settings.report)
    _refuse_workflow_changes(github, pull)
    error = model.error.message if model.error is not None else None
    templates = workspace_templates(context, settings)  # the default branch's checkout
    graded = Graded(report=report, seconds=0.0, error=error, templates=templates)
    target = Target(
        event="workflow_run",
        pull=pull,
        base_ref=pull.base_ref,
        base_sha=pull.base_sha,
        head_sha=run["head_sha"],
        comment=True,
        default_branch=pull.default_branch,
    )
    publication = Publication(context=context, settings=settings, target=target, github=github)
    publication.start(out)
    publish(publication, graded, out)
    return graded


def _pull_of(report: Report, pulls: list[PullRequest], path: Path | None) -> PullRequest:
    """The one of ``pulls`` (open, of the graded head) whose base branch the report was
    graded against. The base's sha is not matched: it moves with every commit on that
    branch, which grades nothing again, and two pull requests into one branch share it."""
    ref = report.base.ref
    matching = [pull for pull in pulls if pull.base_ref == ref]
    if len(matching) == 1:
        return matching[0]
    bases = ", ".join(f"#{pull.number} ({pull.base_ref})" for pull in pulls)
    said = (
        f"graded against `{ref}`" if isinstance(ref, str) else "says no base it was graded against"
    )
    which = "several of them" if matching else "none of them"
    raise ArtifactError(
        f"{path}: the uploaded report is {said}, and that is {which}: the open pull requests "
        f"of its head are {bases}; it cannot tell where the verdict belongs: not published"
    )


def _refuse_workflow_changes(github: GitHub, pull: PullRequest) -> None:
    """Refuse the report of a fork's pull request that changes ``.github/``. A ``pull_request``
    run runs the workflows of the pull request's merge commit: one that edits them made
    the run that uploaded the artifact, which need not have run this Action at all, so
    anything in the report may be forged (issue 19). Nothing is posted and the required
    check stays missing, so the pull request cannot merge on it; a maintainer reviews it."""
    if pull.head_repo is not None and pull.head_repo.lower() == pull.base_repo.lower():
        # A branch of this repository: its author may push, and so run any workflow with
        # a token that writes; refusing would only block Dependabot's and maintainers'
        # workflow changes for good.
        return
    paths, total = github.pull_files(pull.number)
    touched = [path for path in paths if path == WORKFLOWS or path.startswith(WORKFLOWS + "/")]
    if touched:
        shown_paths = ", ".join(touched[:3]) + (
            f" and {len(touched) - 3} more" if len(touched) > 3 else ""
        )
        raise ArtifactError(
            f"pull request #{pull.number} changes {WORKFLOWS}/ ({shown_paths}): its grading run "
            "ran the pull request's own workflows, which can upload any report, so the report "
            "is not published; review the change, and grade it once it is merged or from a "
            "branch of this repository"
        )
    if len(paths) < total:
        raise ArtifactError(
            f"pull request #{pull.number} changes {total} files and GitHub lists {len(paths)}: "
            f"whether it changes {WORKFLOWS}/ cannot be told, so the report is not published"
        )


def _graded_run(payload: Mapping[str, Any], context: RunContext) -> dict[str, str]:
    """The graded run's head commit and head repository, from the ``workflow_run`` payload,
    whose every field read is checked for its type first."""
    run = payload.get("workflow_run")
    if not isinstance(run, Mapping):
        raise EventError(
            f"the workflow_run payload's `workflow_run` is {_shown(run)}, not an object: "
            "GITHUB_EVENT_PATH must be the payload of the workflow_run event"
        )
    repository = _full_name(run, "repository")
    if repository.lower() != context.repository.lower():
        raise EventError(
            f"workflow_run.repository.full_name is {repository!r}, not {context.repository}: "
            "only a run of this repository is published"
        )
    event = run.get("event")
    if event != "pull_request":
        raise EventError(
            f"workflow_run.event is {_shown(event)}: publish mode posts the grade of a "
            "pull_request run only; trigger it on the grading workflow's pull_request runs"
        )
    head_sha = run.get("head_sha")
    if not isinstance(head_sha, str) or not _SHA.fullmatch(head_sha):
        raise EventError(f"workflow_run.head_sha is {_shown(head_sha)}, not a commit's sha")
    head_repository = _full_name(run, "head_repository")
    pulls = run.get("pull_requests")
    if not isinstance(pulls, list):
        raise EventError(
            f"workflow_run.pull_requests is {_shown(pulls)}, not a list: not a payload GitHub sends"
        )
    return {"head_sha": head_sha, "head_repository": head_repository}


def _full_name(run: Mapping[str, Any], key: str) -> str:
    """``workflow_run.<key>.full_name``, an ``owner/name``."""
    repository = run.get(key)
    if not isinstance(repository, Mapping):
        raise EventError(
            f"workflow_run.{key} is {_shown(repository)}, not an object with the "
            "repository's full_name (a deleted fork has none: nothing can be published)"
        )
    name = repository.get("full_name")
    if not isinstance(name, str) or name.count("/") != 1 or not all(name.split("/")):
        raise EventError(f"workflow_run.{key}.full_name is {_shown(name)}, not owner/name")
    return name


def _shown(value: object) -> str:
    return "missing" if value is None else shown(value)


def read_report(path: Path | None, head_sha: str) -> tuple[dict[str, Any], Report]:
    """The uploaded report at ``path``: a regular file (not a link) of at most
    :data:`MAX_REPORT` bytes, a JSON report of this version valid by its schema
    (:mod:`repogym.report.schema`), about ``head_sha``; as read, and as its model."""
    if path is None:
        raise ArtifactError(
            "input `report`: mode publish reads the uploaded report there; give the path "
            "the artifact was downloaded to"
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ArtifactError(
                f"{path}: the uploaded report is a symbolic link, not the downloaded file: "
                "not published"
            ) from None
        raise ArtifactError(
            f"{path}: the uploaded report cannot be read: {error.strerror}; download the "
            "grading run's artifact to this path first"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(
                f"{path}: the uploaded report is not a regular file (a {_kind(info.st_mode)}): "
                "not published"
            )
        if info.st_size > MAX_REPORT:
            raise ArtifactError(
                f"{path}: the uploaded report is {info.st_size} bytes, over the "
                f"{MAX_REPORT} a report can be: not published"
            )
        raw = file.read(MAX_REPORT + 1)
    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ArtifactError(f"{path}: the uploaded report is not JSON: not published") from None
    if not isinstance(report, dict) or report.get("version") != REPORT_VERSION:
        raise ArtifactError(
            f"{path}: the uploaded report is not a repogym report of version "
            f"{REPORT_VERSION}: not published"
        )
    found = problems(report)
    if not found and report.get("head") is None:
        found = ["`head` is missing: a published report names the commit it grades"]
    if found:
        raise ArtifactError(
            *(f"{path}: the uploaded report does not fit its schema: {line}" for line in found)
        )
    model = Report.model_validate(report)  # it fits: problems() found nothing
    head = model.head.sha
    if head != head_sha:
        raise ArtifactError(
            f"{path}: the uploaded report grades {str(head)[:40]!r}, not the run's head "
            f"{head_sha}: not published"
        )
    return report, model


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in a word."""
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"
