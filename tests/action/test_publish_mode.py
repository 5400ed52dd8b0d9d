"""Pull requests from forks, end to end (issue 12): the ``pull_request`` run grades with a
read-only token and leaves its report; a ``workflow_run`` job in ``mode: publish`` posts it.
The publisher trusts nothing in the artifact: forged ones are refused, one line each."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from repogym._demo import EXAMPLES
from tests.action.forks import ARTIFACT, FORK, opened_fork, publish, well_formed
from tests.action.gitrepo import Pull, files_of
from tests.action.job import Job, Step
from tests.action.published import assert_published
from tests.action.runners import Layout

READ_ONLY = (403, {}, {"message": "Resource not accessible by integration"})


def graded_fork(job: Job, number: int = 7, branch: str = "fix") -> tuple[Pull, dict[str, Any]]:
    """A fork's pull request graded with a read-only token: its report, as uploaded."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = files_of(EXAMPLES / "bugfix" / "solution")
    pull = job.open_pull(number, base=base, head=head, branch=branch, head_repo=FORK)
    job.fake.fail("POST", "/repos/{owner}/{repo}/check-runs", READ_ONLY)
    event = job.event("pull_request.opened", pull, head_repository=FORK)
    step = job.run("pull_request", event, pull)
    assert step.exit_code == 0, step.log
    assert job.fake.comments(number) == [] and step.report is not None
    return pull, step.report


def errors(step: Step) -> list[str]:
    return [line for line in step.log.splitlines() if line.startswith("::error")]


def writes(job: Job) -> list[str]:
    """Every request that changed something on GitHub."""
    done = [r for r in job.fake.requests if r.method != "GET" and 200 <= r.status < 300]
    return [f"{r.method} {r.path}" for r in done]


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


def test_the_genuine_report_of_another_pull_request_is_refused(job: Job) -> None:
    """Pull request 8 is graded for real and its report is public (its run's artifact);
    the fork uploads it from the run of its pull request 7. The publisher finds the pull
    request from GitHub's payload (7's head) and the report grades 8's head: refused, and
    nothing is posted on either."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    seven = job.open_pull(7, base=base, head={**base, "NOTES.md": "mine\n"}, head_repo=FORK)
    eight, report = graded_fork(job, 8, branch="other")
    assert report["head"]["sha"] == eight.head_sha != seven.head_sha and report["passed"]
    step = publish(job, seven, json.dumps(report).encode())
    assert step.exit_code == 2, step.log
    [error] = errors(step)
    assert f"grades '{eight.head_sha}', not the run's head {seven.head_sha}" in error
    assert job.fake.comments(7) == [] and job.fake.comments(8) == []
    assert job.fake.check_runs() == [] and writes(job) == []


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


def refused(job: Job, step: Step, says: str) -> None:
    """Exit 2, one ``::error::`` line saying ``says``, no traceback, nothing posted."""
    assert step.exit_code == 2, step.log
    assert len(errors(step)) == 1 and says in errors(step)[0], (says, errors(step))
    assert "Traceback" not in step.log
    assert writes(job) == [] and job.fake.check_runs() == [] and job.fake.comments(7) == []


def test_a_well_formed_report_with_unknown_keys_is_published_and_its_titles_are_one_line(
    job: Job,
) -> None:
    """Keys the schema does not name pass (a report may gain keys within a version): the
    number of another pull request is one, and changes nothing. A finding's title of
    several lines and control characters becomes a one-line annotation title."""
    pull = opened_fork(job)
    job.fake.add_pull(8, base_ref="main", base_sha=pull.base_sha, head_ref="x", head_sha="8" * 40)
    report = well_formed(pull, pull_request=8, number=8)
    finding = {
        "path": "src/slugify/core.py",
        "line": 1,
        "title": "forbidden_patterns\n::error::forged\r\x1b[31m\u2028end",
        "message": "first line\nsecond line",
        "level": "warning",
    }
    report["components"][0]["findings"] = [finding]
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 0, step.log
    assert len(job.fake.comments(7)) == 1 and job.fake.comments(8) == []
    [run] = job.fake.check_runs(pull.head_sha)
    [annotation] = run["annotations"]
    assert annotation["title"] == "forbidden_patterns ::error::forged [31m end"
    assert annotation["message"] == "first line\nsecond line"
    assert run["output"]["title"] == report["summary"]


def _spoilt(change: Any) -> Any:
    def spoil(payload: dict[str, Any]) -> None:
        change(payload["workflow_run"])

    return spoil


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda p: p.pop("workflow_run"), "`workflow_run` is missing, not an object"),
        (lambda p: p.update(workflow_run="completed"), "`workflow_run` is 'completed', not an"),
        (
            _spoilt(lambda r: r.update(repository="octo-org/octo-repo")),
            "workflow_run.repository is 'octo-org/octo-repo', not an object",
        ),
        (_spoilt(lambda r: r.update(repository=7)), "workflow_run.repository is 7, not an object"),
        (
            _spoilt(lambda r: r["repository"].update(full_name=["octo-org/octo-repo"])),
            "workflow_run.repository.full_name is a list, not owner/name",
        ),
        (
            _spoilt(lambda r: r.update(head_repository=FORK)),
            "workflow_run.head_repository is 'mallory/octo-repo', not an object",
        ),
        (
            _spoilt(lambda r: r.update(head_repository=[FORK])),
            "workflow_run.head_repository is a list, not an object",
        ),
        (
            _spoilt(lambda r: r.update(head_repository=None)),
            "workflow_run.head_repository is missing, not an object",
        ),
        (
            _spoilt(lambda r: r["head_repository"].update(full_name="mallory")),
            "workflow_run.head_repository.full_name is 'mallory', not owner/name",
        ),
        (_spoilt(lambda r: r.update(head_sha=7)), "workflow_run.head_sha is 7, not a commit's sha"),
        (
            _spoilt(lambda r: r.update(head_sha={"sha": "a" * 40})),
            "workflow_run.head_sha is an object, not a commit's sha",
        ),
        (_spoilt(lambda r: r.pop("head_sha")), "workflow_run.head_sha is missing, not a commit"),
        (
            _spoilt(lambda r: r.update(pull_requests="7")),
            "workflow_run.pull_requests is '7', not a list",
        ),
        (
            _spoilt(lambda r: r.update(pull_requests={"number": 7})),
            "workflow_run.pull_requests is an object, not a list",
        ),
    ],
    ids=[
        "no-workflow_run",
        "workflow_run-string",
        "repository-string",
        "repository-number",
        "repository-full_name-list",
        "head_repository-string",
        "head_repository-list",
        "head_repository-null",
        "head_repository-no-owner",
        "head_sha-number",
        "head_sha-object",
        "head_sha-missing",
        "pull_requests-string",
        "pull_requests-object",
    ],
)
def test_a_malformed_workflow_run_payload_is_one_line_naming_the_field(
    job: Job, spoil: Any, says: str
) -> None:
    pull = opened_fork(job)
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    spoil(event)
    raw = json.dumps(well_formed(pull)).encode()
    inputs = {"mode": "publish", "report": ARTIFACT}
    step = job.run("workflow_run", event, pull, inputs, artifact={ARTIFACT: raw})
    refused(job, step, says)


@pytest.mark.parametrize(
    "event", ["pull_request_target", "push", "workflow_dispatch", "merge_group", None, 7]
)
def test_only_the_run_of_a_pull_request_event_is_published(job: Job, event: Any) -> None:
    pull = opened_fork(job)
    payload = job.event("workflow_run.completed", pull, head_repository=FORK)
    payload["workflow_run"]["event"] = event
    raw = json.dumps(well_formed(pull)).encode()
    inputs = {"mode": "publish", "report": ARTIFACT}
    step = job.run("workflow_run", payload, pull, inputs, artifact={ARTIFACT: raw})
    shown = "missing" if event is None else repr(event)
    refused(job, step, f"workflow_run.event is {shown}: publish mode posts the grade of a")


def _symlink(layout: Layout) -> None:
    (layout.workspace / ARTIFACT).symlink_to("genuine.json")


def _fifo(layout: Layout) -> None:
    os.mkfifo(layout.workspace / ARTIFACT)


def _directory(layout: Layout) -> None:
    (layout.workspace / ARTIFACT).mkdir()
    (layout.workspace / ARTIFACT / "repogym-report.json").write_text("{}")


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_symlink, f"{ARTIFACT}: the uploaded report is a symbolic link, not the downloaded"),
        (_fifo, f"{ARTIFACT}: the uploaded report is not a regular file (a FIFO)"),
        (_directory, f"input `report`: '{ARTIFACT}' is a directory; give a file path"),
    ],
    ids=["symlink", "fifo", "directory"],
)
def test_an_artifact_that_is_not_a_regular_file_is_refused(
    job: Job, make: Callable[[Layout], None], says: str
) -> None:
    """The link points at a well-formed report of the right head, which a regular file
    would have published; the FIFO has no writer, and is not waited on; a directory is
    refused with the other inputs, before the event is read."""
    pull = opened_fork(job)
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    genuine = {"artifact/genuine.json": json.dumps(well_formed(pull)).encode()}
    inputs = {"mode": "publish", "report": ARTIFACT}
    step = job.run("workflow_run", event, pull, inputs, artifact=genuine, before=make)
    refused(job, step, says)


def _component(**changes: Any) -> Any:
    def forge(report: dict[str, Any]) -> dict[str, Any]:
        report["components"][1] = {**report["components"][1], **changes}
        return report

    return forge


def _finding(**changes: Any) -> Any:
    finding = {"path": "src/a.py", "line": 1, "title": "t", "message": "m", "level": "failure"}
    return _component(findings=[{**finding, **changes}])


def _without_component_key(key: str) -> Any:
    def forge(report: dict[str, Any]) -> dict[str, Any]:
        del report["components"][1][key]
        return report

    return forge


def _without(key: str) -> Any:
    def forge(report: dict[str, Any]) -> dict[str, Any]:
        del report[key]
        return report

    return forge


HUGE = "x" * 100_000
SCHEMA_CASES = {
    "score-nan": (lambda r: {**r, "score": math.nan}, "`score` is nan: should be a finite number"),
    "score-inf": (lambda r: {**r, "score": math.inf}, "`score` is inf: should be a finite number"),
    "score-negative-inf": (lambda r: {**r, "score": -math.inf}, "`score` is -inf: should be"),
    "score-negative": (lambda r: {**r, "score": -0.5}, "`score` is -0.5: should be a finite"),
    "score-2": (lambda r: {**r, "score": 2}, "`score` is 2: should be a finite number in [0, 1]"),
    "score-string": (lambda r: {**r, "score": "1.0"}, "`score` is '1.0': should be a finite"),
    "score-bool": (lambda r: {**r, "score": True}, "`score` is true: should be a finite number"),
    "score-missing": (_without("score"), "`score` is missing: only an error report"),
    "passed-string": (lambda r: {**r, "passed": "true"}, "`passed` is 'true': should be true or"),
    "passed-missing": (_without("passed"), "`passed` is missing: only an error report"),
    "components-missing": (_without("components"), "`components` is missing: only an error"),
    "components-not-objects": (
        lambda r: {**r, "components": ["tests"]},
        "`components[0]` is 'tests': should be an object",
    ),
    "component-score-nan": (
        _component(score=math.nan),
        "`components[1].score` is nan: should be a finite number in [0, 1]",
    ),
    "component-no-name": (_without_component_key("name"), "`components[1].name` is missing"),
    "component-role": (_component(role="boss"), "`components[1].role` is 'boss': should be"),
    "finding-line-0": (_finding(line=0), "`components[1].findings[0].line` is 0: should be"),
    "finding-no-message": (
        _finding(message=None),
        "`components[1].findings[0].message` is null: should be a string",
    ),
    "finding-level": (_finding(level="fatal"), "`components[1].findings[0].level` is 'fatal'"),
    "head-missing": (_without("head"), "`head` is missing"),
    "summary-huge": (
        lambda r: {**r, "summary": HUGE},
        "`summary` is a string of 100000 characters, over the 65536 it may have",
    ),
    "message-huge": (
        _finding(message=HUGE),
        "`components[1].findings[0].message` is a string of 100000 characters, over the 65536",
    ),
    "summary-lines": (
        lambda r: {**r, "summary": "PASS 1.000\n::warning::forged"},
        "`summary` is 'PASS 1.000\\n::warning::forged': should be one line",
    ),
    "error-message-lines": (
        lambda r: {**r, "error": {"kind": "usage", "message": "bad\n::notice::forged"}},
        "`error.message` is 'bad\\n::notice::forged': should be one line",
    ),
    "error-kind": (
        lambda r: {**r, "error": {"kind": "oops", "message": "bad"}},
        "`error.kind` is 'oops': should be",
    ),
}


@pytest.mark.parametrize(("forge", "says"), SCHEMA_CASES.values(), ids=SCHEMA_CASES.keys())
def test_a_report_that_does_not_fit_its_schema_is_one_line_naming_the_field(
    job: Job, forge: Any, says: str
) -> None:
    pull = opened_fork(job)
    step = publish(job, pull, json.dumps(forge(well_formed(pull))).encode())
    refused(job, step, f"{ARTIFACT}: the uploaded report does not fit its schema: {says}")


def test_every_problem_of_a_report_is_a_line_of_its_own(job: Job) -> None:
    pull = opened_fork(job)
    report = {**well_formed(pull), "score": math.nan, "files_changed": [1]}
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 2, step.log
    assert [line.split("schema: ", 1)[1] for line in errors(step)] == [
        "`score` is nan: should be a finite number in [0, 1]",
        "`files_changed[0]` is 1: should be a string",
    ]
    assert writes(job) == [] and job.fake.comments(7) == []


FORGED_WORKFLOW = """\
name: repogym
on: pull_request
jobs:
  grade:
    runs-on: ubuntu-latest
    steps:
      - run: echo '{"passed": true}' > repogym-report.json  # no grade: a forged report
"""


@pytest.mark.parametrize(
    "workflow", [".github/workflows/repogym.yml", ".github/actions/grade/action.yml", ".github"]
)
def test_the_report_of_a_pull_request_that_changes_github_is_refused(
    job: Job, workflow: str
) -> None:
    """The fork edits what its pull_request run runs, so that run never grades: it uploads
    a well-formed PASS for a change whose tests fail. Protecting `.github/**` in the task
    cannot stop it (the Action never ran); the publisher refuses any report of a pull
    request that changes `.github` (issue 19)."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    pull = job.open_pull(7, base=base, head={**base, workflow: FORGED_WORKFLOW}, head_repo=FORK)
    step = publish(job, pull, json.dumps(well_formed(pull)).encode())
    refused(job, step, f"pull request #7 changes .github/ ({workflow})")
    assert "not published" in errors(step)[0]


def test_a_pull_request_with_more_files_than_github_lists_is_refused(job: Job) -> None:
    """GitHub lists 3,000 files of a pull request at most: past that, a `.github` change
    could hide, so the report is not published."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    many = {f"data/{n:04}.txt": f"{n}\n" for n in range(3001)}
    pull = job.open_pull(7, base=base, head={**base, **many}, head_repo=FORK)
    step = publish(job, pull, json.dumps(well_formed(pull)).encode())
    refused(job, step, "pull request #7 changes 3001 files and GitHub lists 3000")


def test_a_branch_of_the_repository_that_changes_github_is_published(job: Job) -> None:
    """A branch pushed to the repository itself (a maintainer's, Dependabot's): its author
    can already run any workflow with a token that writes, so the refusal is for forks."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = {**files_of(EXAMPLES / "bugfix" / "solution"), ".github/dependabot.yml": "version: 2\n"}
    pull = job.open_pull(7, base=base, head=head)
    event = job.event("workflow_run.completed", pull, head_repository=job.fake.repository)
    step = job.run(
        "workflow_run",
        event,
        pull,
        {"mode": "publish", "report": ARTIFACT},
        artifact={ARTIFACT: json.dumps(well_formed(pull)).encode()},
    )
    assert step.exit_code == 0, step.log
    [comment] = job.fake.comments(7)
    assert "repogym: passed" in comment["body"]


def test_a_merge_queue_with_the_fork_workflows_gets_its_check_run(job: Job) -> None:
    """issue 45: the fork pair's queue job (fork-grade.yml's `queue`, run with the inputs
    it gives) on a merge group of a fork's pull request: the group's head is graded and
    its check run posted, with no comment; fork-publish.yml skips that run (its `if`
    takes pull_request runs only)."""
    workflow = yaml.safe_load((EXAMPLES / "workflows" / "fork-grade.yml").read_text())
    queue = workflow["jobs"]["queue"]
    inputs = queue["steps"][-1].get("with", {})
    pull = opened_fork(job, 9)
    step = job.run("merge_group", job.event("merge_group.checks_requested", pull), pull, inputs)
    assert_published(job, step, passed=True, head=pull.head_sha)
    assert job.fake.comments(9) == []
    publish = yaml.safe_load((EXAMPLES / "workflows" / "fork-publish.yml").read_text())
    assert "workflow_run.event == 'pull_request'" in publish["jobs"]["publish"]["if"]


@pytest.mark.parametrize(
    ("sha", "accepted"), [("b" * 64, True), ("b" * 41, False), ("B" * 40, False)]
)
def test_a_sha_256_head_is_a_commit_as_the_event_reader_takes_it(
    job: Job, sha: str, accepted: bool
) -> None:
    # event.py took SHA-256 ids and publish mode SHA-1 only (issue 46): a SHA-256
    # repository's run is read, and then looked for among the pull requests.
    pull = opened_fork(job)
    payload = job.event("workflow_run.completed", pull, head_repository=FORK)
    payload["workflow_run"]["head_sha"] = sha
    raw = json.dumps(well_formed(pull)).encode()
    inputs = {"mode": "publish", "report": ARTIFACT}
    step = job.run("workflow_run", payload, pull, inputs, artifact={ARTIFACT: raw})
    assert ("not a commit's sha" not in step.log) is accepted, step.log
    if accepted:  # read, then not found among the pull requests (the fake has SHA-1 ones)
        assert f"no open pull request has {sha[:12]} from {FORK}" in step.log, step.log
