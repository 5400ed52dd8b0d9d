"""Publish mode (``mode: publish``): post, from a ``workflow_run`` job that may write, the
report a ``pull_request`` run graded with a read-only token (a pull request from a fork)
and uploaded as an artifact. README, "Pull requests from forks".

Nothing in the artifact is trusted. The pull request is the open one whose head is the
graded run's head commit from the run's head repository, both read from the event payload
(GitHub's) and the API, never from the artifact; the report's head must be that commit;
the report is read as JSON of at most :data:`MAX_REPORT` bytes, checked the way templates
read it, and only rendered, by the same sandboxed templates as a grade.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.render import with_defaults
from repogym.report import REPORT_VERSION
from repogym_action.commands import Commands
from repogym_action.event import EventError, Target, load_payload
from repogym_action.github import GitHub
from repogym_action.grade import Graded
from repogym_action.publish import Publication, publish
from repogym_action.settings import RunContext, Settings

MAX_REPORT = 8 * 1024 * 1024  # bytes; a grade's report is far smaller
_SHA = re.compile(r"[0-9a-f]{40}")


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
    pull = github.find_pull(run["head_sha"], run["head_repository"])
    if pull is None:
        out.notice(
            f"no open pull request has {run['head_sha'][:12]} from {run['head_repository']} as "
            "its head any more (it moved on or was closed): nothing to publish"
        )
        return None
    report = read_report(settings.report, run["head_sha"])
    error = report["error"]["message"] if isinstance(report.get("error"), dict) else None
    graded = Graded(report=report, seconds=0.0, error=error)
    target = Target(
        event="workflow_run",
        pull=pull,
        base_ref=pull.base_ref,
        base_sha=pull.base_sha,
        head_sha=run["head_sha"],
        comment=True,
    )
    publication = Publication(context=context, settings=settings, target=target, github=github)
    publication.start(out)
    publish(publication, graded, out)
    return graded


def _graded_run(payload: Mapping[str, Any], context: RunContext) -> dict[str, str]:
    """The graded run's head commit and head repository, from the ``workflow_run`` payload."""
    run = payload.get("workflow_run")
    if not isinstance(run, Mapping):
        raise EventError("the workflow_run payload has no `workflow_run` object")
    repository = (run.get("repository") or {}).get("full_name")
    if not isinstance(repository, str) or repository.lower() != context.repository.lower():
        raise EventError(
            f"workflow_run.repository is {repository!r}, not {context.repository}: only a run "
            "of this repository is published"
        )
    if run.get("event") not in ("pull_request", "pull_request_target"):
        raise EventError(
            f"workflow_run.event is {run.get('event')!r}: publish mode posts the grade of a "
            "pull_request run; trigger it on the grading workflow only"
        )
    head_sha = run.get("head_sha")
    head_repository = (run.get("head_repository") or {}).get("full_name")
    if not isinstance(head_sha, str) or not _SHA.fullmatch(head_sha):
        raise EventError(f"workflow_run.head_sha is {head_sha!r}, not a commit's sha")
    if not isinstance(head_repository, str) or not head_repository:
        raise EventError("workflow_run.head_repository.full_name is missing")
    return {"head_sha": head_sha, "head_repository": head_repository}


def read_report(path: Path | None, head_sha: str) -> dict[str, Any]:
    """The uploaded report at ``path``: a regular file (not a link) of at most
    :data:`MAX_REPORT` bytes, a JSON report of this version, about ``head_sha``."""
    if path is None:
        raise ArtifactError(
            "input `report`: mode publish reads the uploaded report there; give the path "
            "the artifact was downloaded to"
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise ArtifactError(
            f"{path}: the uploaded report cannot be read: {error.strerror}; download the "
            "grading run's artifact to this path first"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{path}: the uploaded report is not a regular file")
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
    with_defaults(report)  # a UsageError naming a value of the wrong type
    head = (report.get("head") or {}).get("sha")
    if head != head_sha:
        raise ArtifactError(
            f"{path}: the uploaded report grades {str(head)[:40]!r}, not the run's head "
            f"{head_sha}: not published"
        )
    return report
