"""``repogym-action`` end to end (issue 10): a real repository with a pull request on a
local origin, a workspace cloned as actions/checkout clones it, the program run with the
runner's environment, and every request to GitHub answered (and checked against GitHub's
OpenAPI description) by the fake API."""

from __future__ import annotations

import json

import pytest

from repogym._demo import EXAMPLES
from tests.action.job import Job
from tests.action.published import assert_published, check_runs, example


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


MARKER = '<!-- repogym-action:comment check="repogym" '


def test_a_pull_request_graded_then_updated_then_a_stale_run(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(7, base=base, head=solution)

    first = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert_published(job, first, passed=True, head=pull.head_sha)
    # The check run was the first thing made, in progress, before grading.
    created = job.fake.requests[0]
    assert (created.method, created.path) == ("POST", "/repos/octo-org/octo-repo/check-runs")
    assert created.body["status"] == "in_progress" and created.body["head_sha"] == pull.head_sha
    [comment] = job.fake.comments(7)
    assert comment["body"].startswith(MARKER)
    assert "repogym: passed, score 1.000" in comment["body"]
    assert pull.head_sha[:12] in comment["body"] and pull.base_sha[:12] in comment["body"]
    assert "/actions/runs/4001" in comment["body"]
    [run] = check_runs(job, pull.head_sha)
    assert run["html_url"] in comment["body"]

    # A new commit that breaks the fix: the same comment, a new check run on the new sha.
    broken = {"src/slugify/core.py": (EXAMPLES / "bugfix/repo/src/slugify/core.py").read_text()}
    newer = job.push(7, broken)
    second = job.run("pull_request", job.event("pull_request.synchronize", newer), newer)
    assert_published(job, second, passed=False, head=newer.head_sha)
    [updated] = job.fake.comments(7)
    assert updated["id"] == comment["id"]
    assert "repogym: not passed" in updated["body"] and newer.head_sha[:12] in updated["body"]
    assert len(check_runs(job, newer.head_sha)) == 1
    assert check_runs(job, pull.head_sha)[0]["conclusion"] == "success"

    # The run of the first commit, late: its check run completes on its own sha, the
    # comment stays the newer run's.
    stale = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert stale.exit_code == 0, stale.log
    assert "moved on to" in stale.log
    [kept] = job.fake.comments(7)
    assert kept["body"] == updated["body"]
    assert [r["conclusion"] for r in check_runs(job, pull.head_sha)] == ["success", "success"]


def test_someone_elses_comment_with_the_marker_is_left_alone(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(3, base=base, head=solution)
    forged = job.fake.add_comment(3, MARKER + 'run="x" -->\nFAIL', login="mallory")
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 0, step.log
    comments = job.fake.comments(3)
    assert [c["id"] for c in comments][:1] == [forged] and len(comments) == 2
    assert comments[0]["body"].endswith("FAIL")
    assert comments[1]["body"].startswith(MARKER) and "repogym: passed" in comments[1]["body"]


@pytest.mark.parametrize("name", ["perf", "refactor"])
def test_a_perf_and_a_refactor_task(job: Job, name: str) -> None:
    base, solution = example(name)
    pull = job.open_pull(5, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert_published(job, step, passed=True, head=pull.head_sha)
    components = [c["name"] for c in step.report["components"]]  # type: ignore[index]
    assert ("perf" in components) is (name == "perf")


def test_a_merge_group_gets_a_check_run_and_no_comment(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(9, base=base, head=solution)
    step = job.run("merge_group", job.event("merge_group.checks_requested", pull), pull)
    assert_published(job, step, passed=True, head=pull.head_sha)
    assert job.fake.comments(9) == []


def test_workflow_dispatch_reads_the_pull_request_from_the_api(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(11, base=base, head=solution)
    payload = job.event("workflow_dispatch", pull)
    step = job.run("workflow_dispatch", payload, pull, {"pull-request": "11", "comment": "new"})
    assert_published(job, step, passed=True, head=pull.head_sha)
    assert len(job.fake.comments(11)) == 1
    again = job.run("workflow_dispatch", payload, pull, {"pull-request": "11", "comment": "new"})
    assert again.exit_code == 0, again.log
    assert len(job.fake.comments(11)) == 2


def test_comment_off_posts_the_check_run_only(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(12, base=base, head=solution)
    step = job.run(
        "pull_request_target", job.event("pull_request.opened", pull), pull, {"comment": "off"}
    )
    assert_published(job, step, passed=True, head=pull.head_sha)
    assert job.fake.comments(12) == []


def test_an_event_it_does_not_grade_is_a_notice(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(2, base=base, head=solution)
    step = job.run("push", {"ref": "refs/heads/main"}, pull)
    assert step.exit_code == 0
    assert "::notice::repogym-action grades the events pull_request" in step.log
    assert job.fake.requests == []


def test_a_bad_input_fails_before_anything_is_done(job: Job) -> None:
    base, solution = example("bugfix")
    pull = job.open_pull(2, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull, {"fail": "yes"})
    assert step.exit_code == 2
    errors = [line for line in step.log.splitlines() if line.startswith("::error")]
    assert errors == ["::error::input `fail`: 'yes' is not a boolean; give true or false"]
    assert job.fake.requests == []
    assert step.outputs == {} and step.report is None


def test_a_task_missing_at_the_base_completes_the_check_run_with_the_error(job: Job) -> None:
    base, solution = example("bugfix")
    del base[".repogym.yml"]
    pull = job.open_pull(4, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 2, step.log
    assert "::error::.repogym.yml not found at main" in step.log
    [run] = check_runs(job, pull.head_sha)
    assert run["conclusion"] == "failure"
    assert "could not grade" in json.dumps(run["output"])
    [comment] = job.fake.comments(4)
    assert "could not grade" in comment["body"]
    assert step.outputs["passed"] == "false" and step.report is not None
    assert step.report["error"]["kind"] == "usage"


def test_a_test_command_not_found_completes_the_check_run_with_the_error(job: Job) -> None:
    base, solution = example("bugfix")
    task = base[".repogym.yml"]
    assert isinstance(task, bytes) and b"  command: python -m pytest" in task
    base[".repogym.yml"] = task.replace(b"  command: python -m pytest", b"  command: nosuchtool")
    pull = job.open_pull(5, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 2, step.log
    [error] = [line for line in step.log.splitlines() if line.startswith("::error")]
    assert error.startswith("::error::tests.command: `nosuchtool` was not found on the PATH of")
    [run] = check_runs(job, pull.head_sha)
    assert run["conclusion"] == "failure"
    assert "`nosuchtool` was not found" in json.dumps(run["output"])
    assert step.report is not None and step.report["error"]["kind"] == "usage"
    assert "FAIL 0.000" not in step.log


def test_a_task_without_lists_posts_what_the_base_showed(job: Job) -> None:
    """`fail_to_pass: added` and `pass_to_pass: baseline` (issue 22): the base's runs are
    made in the same job, and the sticky comment says what they showed."""
    base, solution = example("bugfix")
    written = base[".repogym.yml"]
    task = written.decode() if isinstance(written, bytes) else str(written)
    start, end = task.index("  fail_to_pass:"), task.index("  timeout:")
    task = task[:start] + "  fail_to_pass: added\n  pass_to_pass: baseline\n" + task[end:]
    task = task.replace("  protected: [tests/**]\n", "").replace("[src/**]", "[src/**, tests/**]")
    added = (
        "from slugify import slugify\n\n\ndef test_cedilla():\n"
        '    assert slugify("Façade") == "facade"\n'
    )
    pull = job.open_pull(
        13,
        base={**base, ".repogym.yml": task},
        head={**solution, "tests/test_cedilla.py": added},
    )
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert_published(job, step, passed=True, head=pull.head_sha)
    [comment] = job.fake.comments(13)
    body = str(comment["body"])
    assert "| Against the base (2 runs of its tests) | Tests |" in body
    assert "| pass at the base: regression tests | 2 |" in body
    assert "| added, failing without the change: the targets | 1 |" in body
    [tests] = [c for c in step.report["components"] if c["name"] == "tests"]  # type: ignore[index]
    assert tests["details"]["fail_to_pass"] == {"tests/test_cedilla.py::test_cedilla": "passed"}
    assert tests["details"]["baseline"]["counts"]["regression_tests"] == 2
