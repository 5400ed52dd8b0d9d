"""A verdict belongs to its pull request, its head and its base (issue 19), end to end: a
real origin with a strict `main` and a lax branch, the Action run as the runner runs it,
GitHub answered by the fake API.

Each test is an attack a contributor can make: retarget the pull request so that a run
graded against the old base lands after the new one; open a second pull request of the
same head into the lax branch; have another app echo the comment's marker; publish the
report of one pull request on another of the same head.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repogym._demo import EXAMPLES
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Files, Pull, files_of
from tests.action.job import Job, Step

MARKER = '<!-- repogym-action:comment check="repogym" '
# A rubric any change passes: what the lax branch's .repogym.yml says.
LAX_TASK = """\
version: 1
type: refactor
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  pass_to_pass: [tests/test_slugify.py::test_ascii]
  timeout: 120
constraints:
  paths: [src/**/*.py]
  max_cyclomatic_complexity: 50
"""
FORK = "mallory/octo-repo"
ARTIFACT = "artifact/repogym-report.json"


def strict_and_lax(job: Job) -> tuple[Files, Files]:
    """`main` with the bugfix task, `lax` from it with a task any change passes; and a
    change that fixes nothing (FAIL against main, PASS against lax)."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    job.origin.commit("main", base, message="base")
    job.origin.commit(
        "lax", {".repogym.yml": LAX_TASK}, message="lax", start=job.origin.sha("main")
    )
    return base, {"src/slugify/notes.py": "NOTES = 'nothing fixed'\n"}


def open_pull(
    job: Job, number: int, *, branch: str, base: str, head_repo: str | None = None
) -> Pull:
    return job.mirror_pull(number, branch=branch, base=base, head_repo=head_repo)


def checks(job: Job, sha: str) -> dict[str, dict[str, Any]]:
    """The check run GitHub counts for each name on ``sha``: the newest."""
    return {run["name"]: run for run in job.fake.check_runs(sha)}


def grade(job: Job, pull: Pull, action: str = "opened", **inputs: str) -> Step:
    payload = job.event("pull_request.opened", pull)
    payload["action"] = action
    return job.run("pull_request", payload, pull, inputs)


def test_a_run_graded_against_the_old_base_neither_replaces_the_comment_nor_passes_the_check(
    job: Job,
) -> None:
    """The pull request is opened into `lax` (run A starts, graded against lax: PASS), then
    retargeted to `main` (run B, `edited`: FAIL). A finishes last: before issue 19 its PASS
    replaced B's FAIL comment and, newest, turned the check `repogym` green."""
    _, change = strict_and_lax(job)
    job.origin.commit("fix", change, message="the change", start=job.origin.sha("main"))
    into_lax = open_pull(job, 7, branch="fix", base="lax")
    into_main = job.retarget(7, "main")

    newer = grade(job, into_main, "edited")
    assert newer.exit_code == 1, newer.log
    [comment] = job.fake.comments(7)
    assert "repogym: not passed" in comment["body"]

    late = grade(job, into_lax)  # run A, its event of before the retarget
    assert late.exit_code == 0, late.log
    assert "now targets `main`" in late.log
    [kept] = job.fake.comments(7)
    assert kept["body"] == comment["body"]
    counted = checks(job, into_main.head_sha)
    assert counted["repogym"]["conclusion"] == "failure"  # the check for main stays red
    assert counted["repogym"]["output"]["title"].startswith("FAIL")
    # A's own check run, named for its base, withdrawn: never `success`.
    stale = counted["repogym (lax)"]
    assert stale["conclusion"] == "cancelled", stale
    assert "now targets `main`" in stale["output"]["summary"]


def test_a_new_commit_on_the_same_base_does_not_hold_the_comment_back(job: Job) -> None:
    """`main` gets a commit while the run grades: no pull_request event grades again for
    it, so the run's verdict is posted (said against the base it graded)."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    solution = files_of(EXAMPLES / "bugfix" / "solution")
    pull = job.open_pull(5, base=base, head=solution)
    tip = job.origin.commit("main", {"CHANGELOG.md": "busy\n"}, message="another merge")
    job.fake.retarget(5, base_ref="main", base_sha=tip)  # the same ref, a newer tip
    step = grade(job, pull)
    assert step.exit_code == 0, step.log
    [comment] = job.fake.comments(5)
    assert "repogym: passed" in comment["body"]
    run = checks(job, pull.head_sha)["repogym"]
    assert run["conclusion"] == "success"
    assert f"`main` at `{pull.base_sha[:12]}`" in run["output"]["summary"]
    assert f"main is now at {tip[:12]}" in step.log


def test_two_pull_requests_of_one_head_keep_a_check_each(job: Job) -> None:
    """One head, pull request 8 into `main` (FAIL) and 7 into `lax` (PASS, graded last).
    Before issue 19 they shared the check `repogym`: the lax grade, newest, turned the
    check that main's branch protection requires green."""
    _, change = strict_and_lax(job)
    job.origin.commit("fix", change, message="the change", start=job.origin.sha("main"))
    into_main = open_pull(job, 8, branch="fix", base="main")
    into_lax = open_pull(job, 7, branch="fix", base="lax")
    assert into_main.head_sha == into_lax.head_sha

    assert grade(job, into_main).exit_code == 1
    assert grade(job, into_lax).exit_code == 0
    counted = checks(job, into_main.head_sha)
    assert counted["repogym"]["conclusion"] == "failure"
    assert f"`main` at `{into_main.base_sha[:12]}`" in counted["repogym"]["output"]["summary"]
    assert counted["repogym (lax)"]["conclusion"] == "success"
    assert f"`lax` at `{into_lax.base_sha[:12]}`" in counted["repogym (lax)"]["output"]["summary"]
    assert "repogym: not passed" in job.fake.comments(8)[0]["body"]
    assert "repogym: passed" in job.fake.comments(7)[0]["body"]


def publish(job: Job, pull: Pull, report: dict[str, Any]) -> Step:
    event = job.event("workflow_run.completed", pull, head_repository=FORK)
    return job.run(
        "workflow_run",
        event,
        pull,
        {"mode": "publish", "report": ARTIFACT},
        artifact={ARTIFACT: json.dumps(report).encode()},
    )


def report_of(pull: Pull, *, base_ref: str, base_sha: str, passed: bool = True) -> dict[str, Any]:
    """A well-formed report about ``pull``'s head graded against ``base_ref``."""
    reports = Path(__file__).resolve().parents[1] / "data" / "reports"
    report: dict[str, Any] = json.loads((reports / "pass.json").read_text())
    report["base"] = {"ref": base_ref, "sha": base_sha}
    report["merge_base"] = {"sha": base_sha}
    report["head"] = {"sha": pull.head_sha}
    return report


def test_publish_mode_posts_on_the_pull_request_of_the_reports_base(job: Job) -> None:
    """A fork's head in two pull requests, 8 into `main` and 7 into `lax`. The grade of 7
    (against lax, PASS) is published: before issue 19 it landed on the first open pull
    request of that head, 8, the one into main."""
    _, change = strict_and_lax(job)
    job.origin.commit("fix", change, message="the change", start=job.origin.sha("main"))
    open_pull(job, 8, branch="fix", base="main", head_repo=FORK)
    into_lax = open_pull(job, 7, branch="fix", base="lax", head_repo=FORK)

    step = publish(job, into_lax, report_of(into_lax, base_ref="lax", base_sha=into_lax.base_sha))
    assert step.exit_code == 0, step.log
    assert job.fake.comments(8) == []
    [comment] = job.fake.comments(7)
    assert "repogym: passed" in comment["body"]
    counted = checks(job, into_lax.head_sha)
    assert set(counted) == {"repogym (lax)"}


def test_publish_mode_refuses_a_report_whose_base_it_cannot_tell(job: Job) -> None:
    """The same two pull requests; a report graded against a third branch matches neither:
    refused, nothing posted."""
    _, change = strict_and_lax(job)
    job.origin.commit("fix", change, message="the change", start=job.origin.sha("main"))
    open_pull(job, 8, branch="fix", base="main", head_repo=FORK)
    into_lax = open_pull(job, 7, branch="fix", base="lax", head_repo=FORK)
    step = publish(job, into_lax, report_of(into_lax, base_ref="dev", base_sha="d" * 40))
    assert step.exit_code == 2, step.log
    errors = [line for line in step.log.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "graded against `dev`" in errors[0], errors
    assert "#7 (lax)" in errors[0] and "#8 (main)" in errors[0]
    assert job.fake.comments(7) == job.fake.comments(8) == [] and job.fake.check_runs() == []


TOKENS = {
    # kind: (FakeGitHub's arguments, the account it writes as, an impostor with the marker)
    "workflow": ({}, ("github-actions[bot]", "Bot"), ("echo-app[bot]", "Bot")),
    "app": ({"app_slug": "grader"}, ("grader[bot]", "Bot"), ("github-actions[bot]", "Bot")),
    "personal": ({"user_login": "octocat"}, ("octocat", "User"), ("echo-app[bot]", "Bot")),
}


@pytest.mark.parametrize("kind", TOKENS)
def test_the_sticky_comment_is_the_tokens_own_account_s_alone(tmp_path: Path, kind: str) -> None:
    """Another account's comment that starts with the marker (an app echoing what a
    contributor wrote) is left alone and a comment of the Action's own is made; the next
    run edits that one. Before issue 19 any Bot account's comment was the Action's: the
    impostor's was edited, and the impostor could put its PASS back."""
    fake_args, (login, kind_of), (impostor, impostor_type) = TOKENS[kind]
    with FakeGitHub(**fake_args) as fake:  # type: ignore[arg-type]
        job = Job(tmp_path, fake)
        base = files_of(EXAMPLES / "bugfix" / "repo")
        solution = files_of(EXAMPLES / "bugfix" / "solution")
        pull = job.open_pull(3, base=base, head={"src/slugify/notes.py": "x = 1\n"})
        echoed = f'{MARKER}run="x" -->\n### ✅ repogym: passed, score 1.000'
        forged = fake.add_comment(3, echoed, login=impostor, type=impostor_type)
        # A personal token cannot write check runs (only a GitHub App's can).
        inputs = {"check-run": "false"} if kind == "personal" else {}
        first = grade(job, pull, **inputs)
        assert first.exit_code == 1, first.log
        [theirs, ours] = fake.comments(3)
        assert (theirs["id"], theirs["body"]) == (forged, echoed)
        assert (ours["user"]["login"], ours["user"]["type"]) == (login, kind_of)
        assert "repogym: not passed" in ours["body"]

        pull = job.push(3, solution)
        second = grade(job, pull, "synchronize", **inputs)
        assert second.exit_code == 0, second.log
        [theirs, again] = fake.comments(3)
        assert theirs["body"] == echoed
        assert again["id"] == ours["id"] and "repogym: passed" in again["body"]
        # An installation token is known by the check run it made: it asks GET /user,
        # which refuses it, nothing; a personal token asks once a run.
        asked = [r for r in fake.requests if r.path == "/user"]
        assert len(asked) == (2 if kind == "personal" else 0)
        assert fake.violations == []


def test_an_apps_token_without_a_check_run_never_edits_another_apps_comment(
    tmp_path: Path,
) -> None:
    """With `check-run: false` an app's token cannot learn its account before it posts (it
    takes the workflow token's, github-actions[bot]): another app's comment with the
    marker is not taken for its own, a comment of its own is posted, and a notice says to
    keep the check run."""
    with FakeGitHub(app_slug="grader") as fake:
        job = Job(tmp_path, fake)
        base = files_of(EXAMPLES / "bugfix" / "repo")
        pull = job.open_pull(3, base=base, head=files_of(EXAMPLES / "bugfix" / "solution"))
        echoed = f'{MARKER}run="x" -->\nsomeone else'
        fake.add_comment(3, echoed, login="echo-app[bot]", type="Bot")
        step = grade(job, pull, **{"check-run": "false"})
        assert step.exit_code == 0, step.log
        [theirs, ours] = fake.comments(3)
        assert theirs["body"] == echoed and ours["user"]["login"] == "grader[bot]"
        assert "::notice::the token writes as grader[bot], not github-actions[bot]" in step.log
        assert fake.violations == []
