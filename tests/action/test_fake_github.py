"""The fake GitHub API, driven by the client the Action uses (PyGithub) and by plain urllib."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import github
import pytest
from github import Auth, Github

from tests.action.fake_github import FakeGitHub, Fault, description
from tests.action.fake_state import State

BASE = "a" * 40
HEAD = "b" * 40
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENTS_OF_7 = "/repos/octo-org/octo-repo/issues/7/comments"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_pull(7, base_ref="main", base_sha=BASE, head_ref="fix", head_sha=HEAD)
        yield fake


def connect(fake: FakeGitHub, token: str | None = None, **options: Any) -> Github:
    """PyGithub on the fake, without its pauses between requests (0.25 s, 1 s after a write)."""
    auth = Auth.Token(token or fake.token)
    return Github(
        base_url=fake.url,
        auth=auth,
        seconds_between_requests=0,
        seconds_between_writes=0,
        **options,
    )


@pytest.fixture
def client(fake: FakeGitHub) -> Iterator[Github]:
    client = connect(fake)
    yield client
    client.close()


def call(
    fake: FakeGitHub, method: str, path: str, body: Any = None, *, token: str | None = None
) -> tuple[int, dict[str, str], Any]:
    """A request with urllib: status, headers, parsed body."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(fake.url + path, data=data, method=method)
    request.add_header("Authorization", f"token {token or fake.token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as failure:
        with failure:
            return failure.code, dict(failure.headers), json.loads(failure.read() or b"null")


def annotation(line: int) -> dict[str, Any]:
    return {
        "path": "src/app.py",
        "start_line": line,
        "end_line": line,
        "annotation_level": "failure",
        "message": f"line {line}",
    }


def test_the_repository_and_a_pull_read_with_pygithub(fake: FakeGitHub, client: Github) -> None:
    fake.add_pull(
        8,
        base_ref="main",
        base_sha=BASE,
        head_ref="x",
        head_sha="c" * 40,
        head_repo="fork/octo-repo",
    )
    repo = client.get_repo("octo-org/octo-repo")
    pull = repo.get_pull(7)
    forked = repo.get_pull(8)
    assert repo.full_name == "octo-org/octo-repo"
    assert (pull.base.ref, pull.base.sha, pull.head.ref, pull.head.sha) == (
        "main",
        BASE,
        "fix",
        HEAD,
    )
    assert pull.head.repo.full_name == "octo-org/octo-repo"
    assert (forked.head.repo.full_name, forked.head.repo.fork) == ("fork/octo-repo", True)
    assert pull.url.startswith(fake.url + "/")
    fake.move_head(7, "d" * 40)
    assert repo.get_pull(7).head.sha == "d" * 40
    with pytest.raises(github.UnknownObjectException):
        repo.get_pull(9)
    assert client.get_repo("Octo-Org/OCTO-REPO").get_pull(7).number == 7  # names ignore case
    with pytest.raises(github.UnknownObjectException):
        client.get_repo("octo-org/other")
    with pytest.raises(ValueError, match="add_pull"):
        fake.add_comment(9, "on a PR the fake does not have", login="someone")
    assert fake.violations == []


def test_comments_are_listed_page_by_page_like_github(fake: FakeGitHub, client: Github) -> None:
    for index in range(70):
        fake.add_comment(7, f"comment {index}", login="reviewer")
    pull = client.get_repo(fake.repository).get_pull(7)
    listed = [comment.body for comment in pull.get_issue_comments()]
    assert listed == [f"comment {index}" for index in range(70)]
    pages = [r.query.get("page") for r in fake.requests if r.path.endswith("/7/comments")]
    assert pages == [None, ["2"], ["3"]]  # PyGithub followed the Link header's "next"
    assert pull.get_issue_comments().totalCount == 70  # per_page=1 and the "last" link
    status, headers, body = call(
        fake, "GET", "/repos/octo-org/octo-repo/issues/7/comments?per_page=20&page=2"
    )
    assert (status, [c["body"] for c in body]) == (200, [f"comment {i}" for i in range(20, 40)])
    link = f"{fake.url}/repos/octo-org/octo-repo/issues/7/comments?per_page=20&page="
    assert headers["Link"] == ", ".join(
        [
            f'<{link}1>; rel="prev"',
            f'<{link}3>; rel="next"',
            f'<{link}4>; rel="last"',
            f'<{link}1>; rel="first"',
        ]
    )
    assert fake.violations == []


def test_a_comment_posted_and_edited_by_the_token_is_the_bots(
    fake: FakeGitHub, client: Github
) -> None:
    theirs = fake.add_comment(7, "a reviewer's word", login="reviewer")
    pull = client.get_repo(fake.repository).get_pull(7)
    ours = pull.create_issue_comment("<!-- repogym -->\nfirst")
    ours.edit("<!-- repogym -->\nsecond")
    shown = {comment["id"]: comment for comment in fake.comments(7)}
    assert shown[ours.id]["body"] == "<!-- repogym -->\nsecond"
    assert (shown[ours.id]["user"]["login"], shown[ours.id]["user"]["type"]) == (
        "github-actions[bot]",
        "Bot",
    )
    assert (ours.user.login, ours.user.type) == (fake.bot_login, "Bot")
    assert (shown[theirs]["body"], shown[theirs]["user"]["type"]) == ("a reviewer's word", "User")
    for comment in fake.comments(7):
        assert (
            description().check_response(
                _operation("GET", "/repos/o/r/issues/7/comments"), 200, [comment]
            )
            == []
        )
    assert fake.violations == []


def test_the_user_is_forbidden_to_an_installation_token_and_known_to_a_pat(client: Github) -> None:
    with pytest.raises(github.GithubException) as raised:
        client.get_user().login  # noqa: B018 (the property makes the request)
    assert (raised.value.status, raised.value.data["message"]) == (
        403,
        "Resource not accessible by integration",
    )
    with FakeGitHub(user_login="octocat", token="ghp_pat") as fake:
        fake.add_pull(1, base_ref="main", base_sha=BASE, head_ref="fix", head_sha=HEAD)
        pat = connect(fake, "ghp_pat")
        assert pat.get_user().login == "octocat"
        comment = pat.get_repo(fake.repository).get_pull(1).create_issue_comment("hi")
        assert (comment.user.login, comment.user.type) == ("octocat", "User")
        pat.close()
        assert fake.violations == []


def test_a_check_run_keeps_every_annotation_across_updates(
    fake: FakeGitHub, client: Github
) -> None:
    repo = client.get_repo(fake.repository)
    run = repo.create_check_run(
        name="repogym", head_sha=HEAD, status="in_progress", details_url="http://x.test/run/1"
    )
    assert (run.status, run.name) == ("in_progress", "repogym")
    assert run.conclusion is None
    output = {
        "title": "FAIL 0.500",
        "summary": "two of four",
        "annotations": [annotation(n) for n in range(1, 51)],
    }
    run.edit(output=output)
    output["annotations"] = [annotation(n) for n in range(51, 61)]
    run.edit(status="completed", conclusion="failure", output=output)
    assert (run.status, run.conclusion, run.output.title) == ("completed", "failure", "FAIL 0.500")
    [stored] = fake.check_runs(HEAD)
    assert [note["start_line"] for note in stored["annotations"]] == list(range(1, 61))
    assert (stored["updates"], stored["output"]["annotations_count"]) == (2, 60)
    assert stored["completed_at"] is not None and stored["pull_requests"][0]["number"] == 7
    assert fake.violations == []


def test_check_runs_of_a_ref_filtered_by_name(fake: FakeGitHub, client: Github) -> None:
    repo = client.get_repo(fake.repository)
    first = repo.create_check_run(name="repogym", head_sha=HEAD, conclusion="failure")
    second = repo.create_check_run(name="repogym", head_sha=HEAD, conclusion="success")
    other = repo.create_check_run(name="lint", head_sha=HEAD, status="queued")
    repo.create_check_run(name="repogym", head_sha="c" * 40, status="queued")
    commit = repo.get_commit(HEAD)
    assert [run.id for run in commit.get_check_runs(check_name="repogym")] == [second.id]
    assert [run.id for run in commit.get_check_runs(check_name="repogym", filter="all")] == [
        second.id,
        first.id,
    ]
    assert {run.id for run in commit.get_check_runs()} == {second.id, other.id}
    status, _, body = call(
        fake, "GET", "/repos/octo-org/octo-repo/commits/fix/check-runs?check_name=lint"
    )
    assert (status, body["total_count"], body["check_runs"][0]["id"]) == (200, 1, other.id)
    assert fake.violations == []


def test_a_bad_or_missing_token_is_answered_401_and_never_recorded(fake: FakeGitHub) -> None:
    wrong = connect(fake, "ghs_wrong")
    with pytest.raises(github.BadCredentialsException):
        wrong.get_repo(fake.repository)
    wrong.close()
    request = urllib.request.Request(fake.url + "/repos/octo-org/octo-repo")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    raised.value.close()
    assert raised.value.code == 401
    assert [r.status for r in fake.requests] == [401, 401]
    assert "ghs_wrong" not in repr(fake.requests) and fake.token not in repr(fake.requests)


def test_faults_are_answered_in_order_then_the_fake_answers_again(
    fake: FakeGitHub, client: Github
) -> None:
    fake.fail("POST", COMMENTS, (422, {}, {"message": "nope", "documentation_url": "x"}))
    fake.fail("GET", "/repos/*/pulls/7", Fault(status=404, body={"message": "Not Found"}))
    pull = client.get_repo(fake.repository)
    with pytest.raises(github.UnknownObjectException):
        pull.get_pull(7)
    pr = pull.get_pull(7)
    with pytest.raises(github.GithubException) as raised:
        pr.create_issue_comment("first try")
    assert (raised.value.status, raised.value.data["message"]) == (422, "nope")
    pr.create_issue_comment("second try")
    assert [c["body"] for c in fake.comments(7)] == ["second try"]
    assert [r.status for r in fake.requests[1:]] == [404, 200, 422, 201]
    assert fake.violations == []


def test_pygithubs_default_retry_posts_twice_when_an_answer_is_lost(
    fake: FakeGitHub, client: Github
) -> None:
    """Why the Action must not let PyGithub retry a POST: GitHub may have done it already."""
    fake.fail("POST", COMMENTS, Fault(status=502, body={"message": "Server Error"}, applied=True))
    client.get_repo(fake.repository).get_pull(7).create_issue_comment("once")
    assert [c["body"] for c in fake.comments(7)] == ["once", "once"]
    no_retry = connect(fake, retry=None)
    fake.fail("POST", COMMENTS, Fault(status=0, disconnect=True, applied=True))
    with pytest.raises(Exception, match=r"Connection aborted|RemoteDisconnected"):
        no_retry.get_repo(fake.repository).get_pull(7).create_issue_comment("twice?")
    no_retry.close()
    assert [c["body"] for c in fake.comments(7)] == ["once", "once", "twice?"]
    assert fake.requests[-1].status == 0


def test_a_request_that_breaks_the_description_is_a_violation(fake: FakeGitHub) -> None:
    status, _, body = call(
        fake, "POST", "/repos/octo-org/octo-repo/check-runs", {"name": "repogym", "status": "done"}
    )
    assert (status, body["message"]) == (422, "Validation Failed")
    assert fake.violations == [
        "POST /repos/octo-org/octo-repo/check-runs: body: 'head_sha' is a required property",
        "POST /repos/octo-org/octo-repo/check-runs: body['status']: 'done' is not one of "
        "['queued', 'in_progress', 'completed']",
    ]
    fake.violations.clear()
    assert (
        call(fake, "GET", "/repos/octo-org/octo-repo/issues/7/comments?per_page=many&sort=asc")[0]
        == 422
    )
    assert call(fake, "DELETE", "/repos/octo-org/octo-repo/issues/comments/1")[0] == 404
    assert (
        call(
            fake,
            "PATCH",
            "/repos/octo-org/octo-repo/issues/comments/1",
            {"body": "x", "title": "y"},
        )[0]
        == 422
    )
    assert fake.violations == [
        f"GET {COMMENTS_OF_7}: query parameter `per_page`: 'many' is not of type integer",
        f"GET {COMMENTS_OF_7}: query parameter `sort` is not declared",
        "DELETE /repos/octo-org/octo-repo/issues/comments/1: no such operation in GitHub's "
        "description",
        "PATCH /repos/octo-org/octo-repo/issues/comments/1: body: Additional properties are not "
        "allowed ('title' was unexpected)",
    ]


def test_what_github_rejects_beyond_the_schema_is_a_violation_too(fake: FakeGitHub) -> None:
    too_long = {"body": "x" * 65537}
    assert call(fake, "POST", "/repos/octo-org/octo-repo/issues/7/comments", too_long)[0] == 422
    run = {"name": "repogym", "head_sha": HEAD, "output": {"title": "t", "summary": "s"}}
    run["output"]["annotations"] = [annotation(n) for n in range(51)]  # type: ignore[index]
    assert call(fake, "POST", "/repos/octo-org/octo-repo/check-runs", run)[0] == 422
    assert (
        call(
            fake,
            "POST",
            "/repos/octo-org/octo-repo/check-runs",
            {**run, "output": None, "status": "completed"},
        )[0]
        == 422
    )
    assert [v.split(": ", 1)[1] for v in fake.violations] == [
        "GitHub rejects it: body is too long (maximum is 65536 characters)",
        "body['output']['annotations']: 51 items, more than 50",
        "body['output']: None is not of type 'object'",
    ]
    assert fake.comments(7) == [] and fake.check_runs() == []


def test_a_client_that_drops_the_api_path_fails(fake: FakeGitHub) -> None:
    request = urllib.request.Request(fake.server_url + "/repos/octo-org/octo-repo")
    request.add_header("Authorization", f"Bearer {fake.token}")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    raised.value.close()
    assert raised.value.code == 404
    assert fake.violations == [
        "GET /repos/octo-org/octo-repo: not under /api/v3 (GITHUB_API_URL's path)"
    ]


def test_every_operation_described_is_served_and_nothing_else() -> None:
    state = State(site=None, repository="o/r", user_login=None)  # type: ignore[arg-type]
    served = set(state.routes)
    assert served == {(op.method, op.template) for op in description().operations}
    document = description().document
    assert (document["x-trimmed-from"]["package"], document["x-trimmed-from"]["version"]) == (
        "@octokit/openapi",
        "23.0.2",
    )


def _operation(method: str, path: str) -> Any:
    operation, _, _ = description().operation(method, path)
    assert operation is not None
    return operation
