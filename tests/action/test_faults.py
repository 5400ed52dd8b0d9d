"""GitHub's API failing while the Action runs end to end (the fake API with faults): the
comment is posted exactly once, the check run never left in progress, and a read-only
token (a fork's pull request) still leaves the grade in the job summary and the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym._demo import EXAMPLES
from tests.action.fake_github import FakeGitHub, Fault
from tests.action.gitrepo import Pull, files_of
from tests.action.job import Job, Step

CHECKS = "/repos/{owner}/{repo}/check-runs"
CHECK = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
INTEGRATION = (403, {}, {"message": "Resource not accessible by integration"})
BAD_GATEWAY = (502, {}, {"message": "Bad Gateway"})


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake)
        assert fake.violations == []


def graded(job: Job, number: int = 7) -> tuple[Pull, Step]:
    base = files_of(EXAMPLES / "bugfix" / "repo")
    pull = job.open_pull(number, base=base, head=files_of(EXAMPLES / "bugfix" / "solution"))
    return pull, job.run("pull_request", job.event("pull_request.opened", pull), pull)


def test_a_read_only_token_grades_and_posts_nothing(job: Job) -> None:
    job.fake.fail("POST", CHECKS, INTEGRATION, INTEGRATION, INTEGRATION)
    job.fake.fail("POST", COMMENTS, INTEGRATION, INTEGRATION, INTEGRATION)
    _, step = graded(job)
    assert step.exit_code == 0, step.log
    assert "::notice::the token may not write check runs here" in step.log
    assert '"Pull requests from forks"' in step.log
    assert step.outputs["passed"] == "true" and step.outputs["check-url"] == ""
    assert "repogym: passed" in step.summary
    assert step.report is not None and step.report["passed"] is True
    posts = [r for r in job.fake.requests if r.method == "POST"]
    assert [(r.path, r.status) for r in posts] == [("/repos/octo-org/octo-repo/check-runs", 403)]
    assert job.fake.comments(7) == [] and job.fake.check_runs() == []


def test_server_errors_on_every_endpoint_still_one_comment_and_a_completed_check(
    job: Job,
) -> None:
    for method, path in [("POST", CHECKS), ("PATCH", CHECK), ("GET", PULL), ("GET", COMMENTS)]:
        job.fake.fail(method, path, BAD_GATEWAY, BAD_GATEWAY)
    job.fake.fail("POST", COMMENTS, Fault(status=502, applied=True), BAD_GATEWAY)
    pull, step = graded(job)
    assert step.exit_code == 0, step.log
    assert len(job.fake.comments(7)) == 1
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "success")


def test_answers_lost_on_the_wire_still_one_comment(job: Job) -> None:
    lost = Fault(status=0, disconnect=True, applied=True)
    job.fake.fail("POST", CHECKS, lost)
    job.fake.fail("POST", COMMENTS, lost)
    job.fake.fail("GET", COMMENTS, Fault(status=0, disconnect=True))
    pull, step = graded(job)
    assert step.exit_code == 0, step.log
    assert len(job.fake.comments(7)) == 1
    assert [r["status"] for r in job.fake.check_runs(pull.head_sha)] == ["completed"]


def test_the_final_check_update_failing_still_completes_the_check(job: Job) -> None:
    # Every retry of the full update fails; the short completion after it goes through.
    job.fake.fail("PATCH", CHECK, *[BAD_GATEWAY] * 5)
    pull, step = graded(job)
    assert step.exit_code == 2, step.log
    errors = [line for line in step.log.splitlines() if line.startswith("::error::")]
    assert errors == [
        "::error::GitHub API: complete check run failed after 5 attempts: too many 502 error "
        "responses"
    ]
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    assert "could not be sent to GitHub" in run["output"]["summary"]
    assert len(job.fake.comments(7)) == 1  # the comment is still posted


SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}


def test_rate_limits_with_retry_after_are_waited_out_and_logged(job: Job) -> None:
    job.fake.fail("POST", COMMENTS, (403, {"Retry-After": "1"}, SECONDARY))
    job.fake.fail("GET", PULL, (429, {"Retry-After": "1"}, {"message": "Too many requests"}))
    job.fake.fail("PATCH", CHECK, (403, {"Retry-After": "1"}, SECONDARY))
    pull, step = graded(job)
    assert step.exit_code == 0, step.log
    assert len(job.fake.comments(7)) == 1
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    waits = [line for line in step.log.splitlines() if line.startswith("GitHub: ")]
    assert len(waits) == 3 and all("waiting 1.0 s" in line for line in waits)
