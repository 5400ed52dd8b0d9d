"""Pull requests from forks, end to end (issue 12): the ``pull_request`` run grades with a
read-only token and leaves its report; a ``workflow_run`` job in ``mode: publish`` posts it.
The publisher trusts nothing in the artifact: forged ones are refused, one line each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym._demo import EXAMPLES
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Pull, files_of
from tests.action.job import Job, Step

FORK = "mallory/octo-repo"
READ_ONLY = (403, {}, {"message": "Resource not accessible by integration"})
ARTIFACT = "artifact/repogym-report.json"


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake)
        assert fake.violations == []


def graded_fork(job: Job, number: int = 7) -> tuple[Pull, dict[str, Any]]:
    """A fork's pull request graded with a read-only token: its report, as uploaded."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = files_of(EXAMPLES / "bugfix" / "solution")
    pull = job.open_pull(number, base=base, head=head, head_repo=FORK)
    job.fake.fail("POST", "/repos/{owner}/{repo}/check-runs", READ_ONLY)
    event = job.event("pull_request.opened", pull, head_repository=FORK)
    step = job.run("pull_request", event, pull)
    assert step.exit_code == 0, step.log
    assert job.fake.comments(number) == [] and step.report is not None
    return pull, step.report


def publish(job: Job, pull: Pull, report: bytes, **inputs: str) -> Step:
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    return job.run(
        "workflow_run",
        event,
        pull,
        {"mode": "publish", "report": ARTIFACT, **inputs},
        artifact={ARTIFACT: report},
    )


def test_the_report_of_a_fork_is_published_by_the_workflow_run_job(job: Job) -> None:
    pull, report = graded_fork(job)
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 0, step.log
    assert "::group::repogym: tests" not in step.log  # nothing graded, nothing run
    [comment] = job.fake.comments(7)
    assert "repogym: passed, score 1.000" in comment["body"]
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert step.outputs["passed"] == "true"


def test_another_pull_requests_number_in_the_artifact_changes_nothing(job: Job) -> None:
    pull, report = graded_fork(job)
    job.fake.add_pull(8, base_ref="main", base_sha=pull.base_sha, head_ref="x", head_sha="8" * 40)
    step = publish(job, pull, json.dumps({**report, "pull_request": 8, "number": 8}).encode())
    assert step.exit_code == 0, step.log
    assert len(job.fake.comments(7)) == 1 and job.fake.comments(8) == []


@pytest.mark.parametrize(
    ("forge", "says"),
    [
        (lambda r, p: {**r, "head": {"sha": "f" * 40}}, "grades 'ffff"),
        (lambda r, p: b"{not json", "is not JSON"),
        (lambda r, p: {**r, "version": 99}, "is not a repogym report of version"),
        (lambda r, p: {**r, "components": "all passed"}, "components"),
        (lambda r, p: {**r, "padding": "x" * (9 * 1024 * 1024)}, "over the"),
        (lambda r, p: b"[" * 100_000 + b"]" * 100_000, "is not JSON"),
    ],
    ids=["another-sha", "malformed", "another-version", "wrong-type", "oversized", "deep"],
)
def test_a_forged_artifact_is_refused_and_nothing_is_posted(
    job: Job, forge: Any, says: str
) -> None:
    pull, report = graded_fork(job)
    forged = forge(report, pull)
    raw = forged if isinstance(forged, bytes) else json.dumps(forged).encode()
    step = publish(job, pull, raw)
    assert step.exit_code == 2, step.log
    errors = [line for line in step.log.splitlines() if line.startswith("::error::")]
    assert len(errors) == 1 and says in errors[0], errors
    assert job.fake.comments(7) == [] and job.fake.check_runs() == []


def test_a_run_of_another_repository_or_event_is_refused(job: Job) -> None:
    pull, _ = graded_fork(job)
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    event["workflow_run"]["repository"]["full_name"] = "elsewhere/octo-repo"
    inputs = {"mode": "publish", "report": ARTIFACT}
    step = job.run("workflow_run", event, pull, inputs, artifact={ARTIFACT: b"{}"})
    assert step.exit_code == 2
    assert "only a run of this repository is published" in step.log
    step = job.run("push", event, pull, inputs, artifact={ARTIFACT: b"{}"})
    assert step.exit_code == 2 and "mode publish runs on workflow_run, not push" in step.log
    assert job.fake.comments(7) == []


def test_a_pull_request_that_moved_on_gets_nothing(job: Job) -> None:
    pull, report = graded_fork(job)
    job.push(7, {"src/slugify/extra.py": "X = 1\n"})
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 0, step.log
    assert "::notice::no open pull request has" in step.log
    assert job.fake.comments(7) == [] and job.fake.check_runs() == []
