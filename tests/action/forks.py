"""A pull request from a fork and a publish-mode run for it: the two-workflow set-up's parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repogym._demo import EXAMPLES
from tests.action.gitrepo import Pull, files_of
from tests.action.job import Job, Step

FORK = "mallory/octo-repo"


REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"


ARTIFACT = "artifact/repogym-report.json"


def opened_fork(job: Job, number: int = 7) -> Pull:
    """A fork's pull request, not graded: for what is refused before a report matters."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = files_of(EXAMPLES / "bugfix" / "solution")
    return job.open_pull(number, base=base, head=head, head_repo=FORK)


def well_formed(pull: Pull, **changes: Any) -> dict[str, Any]:
    """A report of the right shape about ``pull``'s head (tests/data/reports/pass.json),
    with ``changes``: what a fork could upload without a grade."""
    report: dict[str, Any] = json.loads((REPORTS / "pass.json").read_text())
    report["base"] = {"ref": pull.base_ref, "sha": pull.base_sha}
    report["merge_base"] = {"sha": pull.base_sha}
    report["head"] = {"sha": pull.head_sha}
    return {**report, **changes}


def publish(job: Job, pull: Pull, report: bytes, **inputs: str) -> Step:
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    return job.run(
        "workflow_run",
        event,
        pull,
        {"mode": "publish", "report": ARTIFACT, **inputs},
        artifact={ARTIFACT: report},
    )
