"""repogym_action.github against the fake API: a POST is never sent twice blindly, the
annotations go 50 per request, the sticky comment is found through every page and only
when the token wrote it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from repogym_action.github import GitHub, comment_marker
from repogym_action.retry import ApiError, WaitBudget
from tests.action.fake_github import FakeGitHub, Fault

BASE, HEAD = "a" * 40, "b" * 40
CHECKS = "/repos/{owner}/{repo}/check-runs"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_pull(7, base_ref="main", base_sha=BASE, head_ref="fix", head_sha=HEAD)
        yield fake
        assert fake.violations == []


@pytest.fixture
def github(fake: FakeGitHub) -> Iterator[GitHub]:
    client = GitHub(
        api_url=fake.url, token=fake.token, repository=fake.repository, seconds_between_writes=0
    )
    yield client
    client.close()


def posts(fake: FakeGitHub, path: str) -> list[int]:
    return [r.status for r in fake.requests if r.method == "POST" and r.path.endswith(path)]


@pytest.mark.parametrize(
    "fault",
    [
        Fault(status=502, body={"message": "Bad Gateway"}, applied=True),
        Fault(status=0, disconnect=True, applied=True),
    ],
    ids=["502-after-posting", "answer-lost"],
)
def test_a_comment_posted_but_not_answered_is_found_not_posted_again(
    fake: FakeGitHub, github: GitHub, fault: Fault
) -> None:
    marker, _ = comment_marker("repogym", "1-1-grade")
    fake.fail("POST", COMMENTS, fault)
    url = github.new_comment(7, f"{marker}\nbody", marker)
    [comment] = fake.comments(7)
    assert url == comment["html_url"]
    assert len(posts(fake, "/issues/7/comments")) == 1


def test_a_comment_refused_by_a_server_error_is_posted_again_once(
    fake: FakeGitHub, github: GitHub
) -> None:
    marker, _ = comment_marker("repogym", "1-1-grade")
    fake.fail("POST", COMMENTS, (503, {}, {"message": "unavailable"}))
    github.new_comment(7, f"{marker}\nbody", marker)
    assert len(fake.comments(7)) == 1
    assert posts(fake, "/issues/7/comments") == [503, 201]


def test_a_refused_post_is_one_line_and_not_retried(fake: FakeGitHub, github: GitHub) -> None:
    marker, _ = comment_marker("repogym", "1-1-grade")
    fake.fail("POST", COMMENTS, (403, {}, {"message": "Resource not accessible by integration"}))
    with pytest.raises(ApiError) as raised:
        github.new_comment(7, f"{marker}\nbody", marker)
    assert raised.value.lines == (
        "GitHub API: post comment answered 403: Resource not accessible by integration; the "
        "token may not do this: give the job `permissions:` with `checks: write` and "
        "`pull-requests: write` (a pull request from a fork gets a read-only token)",
    )
    assert fake.comments(7) == [] and len(posts(fake, "/issues/7/comments")) == 1


def test_a_check_run_made_but_not_answered_is_found_by_its_external_id(
    fake: FakeGitHub, github: GitHub
) -> None:
    fake.fail("POST", CHECKS, Fault(status=500, applied=True))
    check = github.checks.start_check(
        name="repogym", head_sha=HEAD, external_id="9-1-grade", details_url="https://x.test/r"
    )
    [run] = fake.check_runs(HEAD)
    assert (run["id"], run["status"]) == (check.id, "in_progress")
    assert len(posts(fake, "/check-runs")) == 1


def test_annotations_go_fifty_per_request_and_complete_last(
    fake: FakeGitHub, github: GitHub
) -> None:
    check = github.checks.start_check(
        name="repogym", head_sha=HEAD, external_id="9-1-grade", details_url="https://x.test/r"
    )
    annotations = [
        {
            "path": f"src/f{i}.py",
            "start_line": i + 1,
            "end_line": i + 1,
            "annotation_level": "warning",
            "message": f"finding {i}",
        }
        for i in range(120)
    ]
    github.checks.finish_check(
        check, conclusion="failure", title="FAIL", summary="s", text="t", annotations=annotations
    )
    [run] = fake.check_runs(HEAD)
    assert [a["message"] for a in run["annotations"]] == [f"finding {i}" for i in range(120)]
    patches = [r.body for r in fake.requests if r.method == "PATCH"]
    assert [len(p["output"]["annotations"]) for p in patches] == [50, 50, 20]
    assert [p.get("status") for p in patches] == [None, None, "completed"]
    assert (run["status"], run["conclusion"]) == ("completed", "failure")


def test_the_sticky_comment_is_found_on_any_page_and_only_when_ours(
    fake: FakeGitHub, github: GitHub
) -> None:
    marker, shared = comment_marker("repogym", "1-1-grade")
    for index in range(130):
        fake.add_comment(7, f"comment {index}", login="someone")
    fake.add_comment(7, f"{marker}\nforged", login="mallory")  # a user: not ours
    github.new_comment(7, f"{marker}\nfirst", marker)
    fake.add_comment(7, "later", login="someone")
    other, _ = comment_marker("repogym-docs", "1-1-grade")
    github.new_comment(7, f"{other}\nanother configuration", other)

    newer, _ = comment_marker("repogym", "2-1-grade")
    github.update_comment(7, f"{newer}\nsecond", shared=shared, marker=newer)
    bodies = [c["body"] for c in fake.comments(7)]
    assert bodies.count(f"{marker}\nforged") == 1
    assert f"{newer}\nsecond" in bodies and f"{marker}\nfirst" not in bodies
    assert f"{other}\nanother configuration" in bodies
    pages = [r.query.get("page") for r in fake.requests if r.path.endswith("/7/comments")]
    assert len(pages) >= 2  # 133 comments, 100 a page


def test_the_marker_cannot_be_closed_or_faked_by_a_check_name() -> None:
    marker, shared = comment_marker('x" --><!-- repogym-action:comment check="y', "1")
    assert marker.count("-->") == 1 and marker.endswith(" -->")
    encoded = "x%22%20--%3E%3C%21--%20repogym-action%3Acomment%20check%3D%22y"
    assert shared == f'<!-- repogym-action:comment check="{encoded}" '


def test_a_patch_is_retried_after_a_server_error(fake: FakeGitHub, github: GitHub) -> None:
    check = github.checks.start_check(
        name="repogym", head_sha=HEAD, external_id="9-1-grade", details_url="https://x.test/r"
    )
    fake.fail("PATCH", CHECKS + "/{check_run_id}", (502, {}, {"message": "Bad Gateway"}))
    github.checks.finish_check(
        check, conclusion="success", title="PASS", summary="s", text="t", annotations=[]
    )
    [run] = fake.check_runs(HEAD)
    assert run["conclusion"] == "success"
    assert [r.status for r in fake.requests if r.method == "PATCH"] == [502, 200]


SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."}


def test_a_secondary_rate_limit_without_retry_after_waits_the_set_time(fake: FakeGitHub) -> None:
    said: list[str] = []
    client = GitHub(
        api_url=fake.url,
        token=fake.token,
        repository=fake.repository,
        seconds_between_writes=0,
        budget=WaitBudget(log=said.append),
        secondary_wait=0.2,
    )
    marker, _ = comment_marker("repogym", "1-1-grade")
    fake.fail("POST", COMMENTS, (403, {}, SECONDARY))
    fake.fail("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", (403, {}, SECONDARY))
    client.new_comment(7, f"{marker}\nbody", marker)
    assert client.pull(7).head_sha == HEAD
    assert len(fake.comments(7)) == 1
    assert len(said) == 2 and all("waiting 0.2 s" in line for line in said)
    client.close()


def test_waiting_is_capped_per_run(fake: FakeGitHub) -> None:
    client = GitHub(
        api_url=fake.url,
        token=fake.token,
        repository=fake.repository,
        seconds_between_writes=0,
        budget=WaitBudget(total=1.0),
    )
    fake.fail("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", (429, {"Retry-After": "30"}, {}))
    with pytest.raises(ApiError) as raised:
        client.pull(7)
    assert raised.value.lines == (
        "GitHub API: GET pull request #7 failed: answered 429: waiting 30 s more would pass "
        "the 1 s a run may wait for GitHub",
    )
    client.close()


def test_timeouts_retry_a_read_and_find_a_post_that_was_done(fake: FakeGitHub) -> None:
    client = GitHub(
        api_url=fake.url,
        token=fake.token,
        repository=fake.repository,
        seconds_between_writes=0,
        timeout=1,
    )
    fake.fail("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", Fault(status=0, hang=True))
    assert client.pull(7).head_sha == HEAD
    marker, _ = comment_marker("repogym", "1-1-grade")
    fake.fail("POST", COMMENTS, Fault(status=0, hang=True, applied=True))
    client.new_comment(7, f"{marker}\nbody", marker)
    assert len(fake.comments(7)) == 1
    assert posts(fake, "/issues/7/comments") == [0]
    client.close()
