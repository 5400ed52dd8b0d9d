"""GitHub's API failing while the Action runs end to end (the fake API with faults): the
comment is posted exactly once, the check run never left in progress, and a read-only
token (a fork's pull request) still leaves the grade in the job summary and the report."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from repogym._demo import EXAMPLES
from repogym_action.retry import MAX_WAIT
from tests.action.fake_github import FakeGitHub, Fault
from tests.action.gitrepo import Pull, files_of
from tests.action.job import Job, Step
from tests.action.runners import Process
from tests.support.terminal import write_table

CHECKS = "/repos/{owner}/{repo}/check-runs"
CHECK = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
INTEGRATION = (403, {}, {"message": "Resource not accessible by integration"})
BAD_GATEWAY = (502, {}, {"message": "Bad Gateway"})


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
    assert step.exit_code == 3, step.log  # GitHub's failure, not the workflow author's
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


# The figures of the closing note (issue 12): each fault end to end, what it leaves. Every
# fault but the read-only token must leave exactly one comment and a completed check run;
# the read-only token leaves neither (it may not write) and the grade in the summary.
RESET = Fault(status=0, disconnect=True)
HUNG_POST = Fault(status=0, hang=True, applied=True)  # done, but the answer never comes
ENDPOINTS = [("POST", CHECKS), ("PATCH", CHECK), ("GET", PULL), ("GET", COMMENTS)]
FAULTS: dict[str, list[tuple[str, str, list[Fault | tuple[int, dict[str, str], object]]]]] = {
    "5xx bursts on every endpoint": [
        *[
            (m, p, [BAD_GATEWAY, (500, {}, {"message": "x"}), (503, {}, "busy")])
            for m, p in ENDPOINTS
        ],
        ("POST", COMMENTS, [BAD_GATEWAY, (504, {}, "gateway timeout")]),
    ],
    "502 after the comment was created": [
        ("POST", COMMENTS, [Fault(status=502, applied=True)]),
    ],
    "403 secondary rate limit with Retry-After": [
        ("POST", COMMENTS, [(403, {"Retry-After": "1"}, SECONDARY)]),
        ("PATCH", CHECK, [(403, {"Retry-After": "1"}, SECONDARY)]),
    ],
    "403 secondary rate limit without Retry-After (60 s)": [
        ("POST", COMMENTS, [(403, {}, SECONDARY)]),
    ],
    "429 with Retry-After": [
        ("GET", PULL, [(429, {"Retry-After": "1"}, {"message": "Too many requests"})]),
        ("POST", CHECKS, [(429, {"Retry-After": "1"}, {"message": "Too many requests"})]),
    ],
    "connection resets on every endpoint": [
        *[(m, p, [RESET]) for m, p in ENDPOINTS],
        ("POST", COMMENTS, [Fault(status=0, disconnect=True, applied=True)]),
    ],
    "timeouts (a read and a post that was done, 30 s each)": [
        ("GET", PULL, [Fault(status=0, hang=True)]),
        ("POST", COMMENTS, [HUNG_POST]),
    ],
    "the final check-run update failing": [
        ("PATCH", CHECK, [BAD_GATEWAY] * 5),
    ],
}


# fault -> (comments posted, the check run's final state), printed at the end of the module.
MEASURED: dict[str, tuple[int, str]] = {}
WAIT = re.compile(r"; waiting ([0-9.]+) s ")


@dataclass(frozen=True)
class Faulted:
    """What one fault's run came to: the step, the comments and check runs left."""

    step: Step
    comments: list[dict[str, Any]]
    runs: list[tuple[str, str]]
    violations: list[str]


def _run_with(root: Path, name: str) -> Faulted:
    with FakeGitHub() as fake:
        job = Job(root, fake, Process())
        for method, path, faults in FAULTS[name]:
            fake.fail(method, path, *faults)
        pull, step = graded(job)
        runs = [(r["status"], r["conclusion"]) for r in fake.check_runs(pull.head_sha)]
        return Faulted(step, fake.comments(7), runs, list(fake.violations))


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Faulted]]:
    """Every fault's run, all at once: most of each is waiting (a timeout of 30 s, a
    secondary rate limit's minute), which one after another took three minutes here."""
    roots = {name: tmp_path_factory.mktemp("fault") for name in FAULTS}
    with ThreadPoolExecutor(max_workers=len(FAULTS)) as pool:
        futures = {name: pool.submit(_run_with, roots[name], name) for name in FAULTS}
        done = {name: future.result() for name, future in futures.items()}
    yield done


@pytest.fixture(scope="module", autouse=True)
def _table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    rows = [(name, comments, state) for name, (comments, state) in MEASURED.items()]
    write_table(request.config, ("fault", "comments", "check run"), rows)


@pytest.mark.parametrize("name", list(FAULTS))
def test_each_fault_leaves_one_comment_and_a_completed_check_run(
    faulted: dict[str, Faulted], name: str
) -> None:
    found = faulted[name]
    step, comments, runs = found.step, found.comments, found.runs
    assert found.violations == []
    assert "Traceback" not in step.log
    MEASURED[name] = (len(comments), ", ".join(f"{status} {end}" for status, end in runs))
    assert len(comments) == 1, step.log
    assert runs == [("completed", "success")], step.log
    assert "repogym: passed" in comments[0]["body"]
    # The one fault the Action reports as an error: the verdict reached the check run by
    # its short completion only.
    assert step.exit_code == (3 if name == "the final check-run update failing" else 0), step.log
    assert step.report is not None and step.report["passed"] is True
    # The waits, each said in the log, together within a run's budget.
    waits = [WAIT.search(line) for line in step.log.splitlines() if line.startswith("GitHub: ")]
    assert all(waits), step.log
    assert sum(float(w.group(1)) for w in waits if w) <= MAX_WAIT


def test_the_read_only_token_in_the_fault_table(job: Job) -> None:
    job.fake.fail("POST", CHECKS, INTEGRATION)
    _, step = graded(job)
    MEASURED["403 Resource not accessible by integration (read-only token)"] = (
        len(job.fake.comments(7)),
        f"none ({len(job.fake.check_runs())} made: the token may not)",
    )
    refused = [r for r in job.fake.requests if r.status == 403]
    assert len(refused) == 1  # not retried
    [notice] = [line for line in step.log.splitlines() if line.startswith("::notice::")]
    assert "`mode: publish`" in notice and "actions/upload-artifact" in notice
    assert step.report is not None and "repogym: passed" in step.summary
