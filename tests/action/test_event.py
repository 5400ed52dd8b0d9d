"""repogym_action.event: the target of each event, from payloads shaped as GitHub sends
them (the fields of @octokit/webhooks-examples' pull_request, merge_group and
workflow_dispatch examples), and a one-line error for each way a payload can be wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from repogym_action.event import (
    SUPPORTED_EVENTS,
    EventError,
    PullRequest,
    Target,
    parse_pull,
    read_target,
)

BASE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
REPOSITORY = "octo-org/octo-repo"


def repo(full_name: str) -> dict[str, Any]:
    owner, name = full_name.split("/")
    return {"id": 1, "name": name, "full_name": full_name, "owner": {"login": owner}}


def pull_json(number: int = 2, *, fork: str | None = REPOSITORY) -> dict[str, Any]:
    """A pull request object as a payload's ``pull_request`` and the REST API hold it."""
    owner = REPOSITORY.split("/")[0]
    return {
        "url": f"https://api.github.com/repos/{REPOSITORY}/pulls/{number}",
        "html_url": f"https://github.com/{REPOSITORY}/pull/{number}",
        "number": number,
        "state": "open",
        "title": "Update the README with new information.",
        "user": {"login": "Codertocat", "type": "User"},
        "head": {
            "label": "Codertocat:changes",
            "ref": "changes",
            "sha": HEAD,
            "user": {"login": "Codertocat"},
            "repo": repo(fork) if fork is not None else None,
        },
        "base": {
            "label": f"{owner}:main",
            "ref": "main",
            "sha": BASE,
            "user": {"login": owner},
            "repo": repo(REPOSITORY),
        },
        "merged": False,
    }


def pull_request_payload(action: str = "opened", **pull: Any) -> dict[str, Any]:
    return {
        "action": action,
        "number": 2,
        "pull_request": pull_json(**pull),
        "repository": repo(REPOSITORY),
        "sender": {"login": "Codertocat"},
    }


def merge_group_payload() -> dict[str, Any]:
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": HEAD,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-104-{BASE}",
            "base_sha": BASE,
            "base_ref": "refs/heads/main",
            "head_commit": {"id": HEAD, "tree_id": BASE, "message": "Merge pull request #104"},
        },
        "repository": repo(REPOSITORY),
        "sender": {"login": "Codertocat"},
    }


def dispatch_payload(inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "inputs": inputs,
        "ref": "refs/heads/main",
        "repository": repo(REPOSITORY),
        "sender": {"login": "Codertocat"},
        "workflow": ".github/workflows/grade.yml",
    }


class Api:
    """Pull requests by number, as the API would answer; records what was asked."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def __call__(self, number: int) -> PullRequest:
        self.asked.append(number)
        return parse_pull(pull_json(number))


def write(tmp_path: Path, payload: object) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return path


def read(
    event: str,
    path: Path | None,
    *,
    base: str | None = None,
    number: int | None = None,
    api: Api | None = None,
) -> Target | None:
    return read_target(event, path, base_override=base, pull_number=number, fetch_pull=api or Api())


@pytest.mark.parametrize("event", ["pull_request", "pull_request_target"])
def test_a_pull_request_event_grades_its_pull_request(tmp_path: Path, event: str) -> None:
    api = Api()
    target = read(event, write(tmp_path, pull_request_payload("synchronize")), api=api)

    assert target == Target(
        event=event,
        pull=PullRequest(
            number=2,
            base_ref="main",
            base_sha=BASE,
            head_ref="changes",
            head_sha=HEAD,
            base_repo=REPOSITORY,
            head_repo=REPOSITORY,
            html_url=f"https://github.com/{REPOSITORY}/pull/2",
            state="open",
        ),
        base_ref="main",
        base_sha=BASE,
        head_sha=HEAD,
        comment=True,
    )
    assert api.asked == []


def test_a_fork_that_was_deleted_has_no_head_repository(tmp_path: Path) -> None:
    target = read("pull_request", write(tmp_path, pull_request_payload(fork=None)))
    assert target is not None and target.pull is not None
    assert target.pull.head_repo is None

    target = read("pull_request", write(tmp_path, pull_request_payload(fork="someone/fork")))
    assert target is not None and target.pull is not None
    assert target.pull.head_repo == "someone/fork"


def test_a_merge_group_grades_the_group_and_posts_no_comment(tmp_path: Path) -> None:
    target = read("merge_group", write(tmp_path, merge_group_payload()))

    assert target == Target(
        event="merge_group",
        pull=None,
        base_ref="main",
        base_sha=BASE,
        head_sha=HEAD,
        comment=False,
    )


def test_workflow_dispatch_reads_the_pull_request_the_input_names(tmp_path: Path) -> None:
    api = Api()
    # The input wins over the dispatch's own inputs; no payload is needed then.
    target = read("workflow_dispatch", None, number=12, api=api)

    assert api.asked == [12]
    assert target is not None and target.pull is not None
    assert (target.pull.number, target.head_sha, target.comment) == (12, HEAD, True)


@pytest.mark.parametrize(
    ("inputs", "number"),
    [
        ({"pull-request": "5"}, 5),
        ({"pull_request": "#6"}, 6),
        ({"pr": " 7 "}, 7),
        ({"number": 8}, 8),
        ({"pull-request": "", "pr": "9"}, 9),
        ({"other": "x", "number": "10"}, 10),
    ],
)
def test_workflow_dispatch_takes_the_number_from_its_inputs(
    tmp_path: Path, inputs: dict[str, Any], number: int
) -> None:
    api = Api()
    target = read("workflow_dispatch", write(tmp_path, dispatch_payload(inputs)), api=api)

    assert api.asked == [number]
    assert target is not None and target.pull is not None and target.pull.number == number


def test_a_dispatch_without_a_number_says_how_to_give_one(tmp_path: Path) -> None:
    with pytest.raises(EventError) as raised:
        read("workflow_dispatch", write(tmp_path, dispatch_payload({})))

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("workflow_dispatch: no pull request number to grade")
    assert "input `pull-request`" in message
    assert "`pull-request`, `pull_request`, `pr`, `number`" in message


@pytest.mark.parametrize("value", ["abc", "0", "-3", "4.5", True, [1]])
def test_a_dispatch_input_that_is_no_number(tmp_path: Path, value: object) -> None:
    path = write(tmp_path, dispatch_payload({"pr": value}))
    with pytest.raises(EventError, match=r"workflow_dispatch input `pr` \(.*\) is not a pull"):
        read("workflow_dispatch", path)


@pytest.mark.parametrize("event", ["push", "schedule", "issue_comment", "pull_request_review"])
def test_other_events_are_not_graded(tmp_path: Path, event: str) -> None:
    # Not even the payload is read: it does not matter that there is none.
    assert read(event, tmp_path / "missing.json") is None
    assert event not in SUPPORTED_EVENTS


def test_the_base_input_replaces_the_base_branch(tmp_path: Path) -> None:
    path = write(tmp_path, pull_request_payload())

    branch = read("pull_request", path, base="release/1.x")
    assert branch is not None
    assert (branch.base_ref, branch.base_sha, branch.head_sha) == ("release/1.x", None, HEAD)

    sha = "a" * 40
    commit = read("pull_request", path, base=sha.upper())
    assert commit is not None
    assert (commit.base_ref, commit.base_sha) == (sha.upper(), sha)

    group = read("merge_group", write(tmp_path, merge_group_payload()), base="refs/heads/next")
    assert group is not None
    assert (group.base_ref, group.base_sha, group.comment) == ("next", None, False)


def broken(key: str) -> dict[str, Any]:
    """A pull_request payload with ``key`` (dotted) removed from its pull request."""
    payload = pull_request_payload()
    *parents, last = key.split(".")
    data = payload["pull_request"]
    for parent in parents:
        data = data[parent]
    del data[last]
    return payload


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (broken("head.sha"), r": pull_request\.head: `sha` is missing"),
        (broken("base.ref"), r": pull_request\.base: `ref` is missing"),
        (broken("base.repo"), r": pull_request\.base: `repo` is missing or not an object"),
        (broken("number"), r": pull_request: `number` \(None\) is not a pull request number"),
        (broken("head"), r": pull_request: `head` is missing or not an object"),
        (
            {"ref": "refs/heads/main", "before": BASE},
            r": the pull_request payload has no `pull_request` object",
        ),
        ([1, 2], r": the event payload is a JSON list, not an object"),
    ],
)
def test_a_broken_payload_is_one_line_naming_the_file_and_key(
    tmp_path: Path, payload: object, expected: str
) -> None:
    path = write(tmp_path, payload)
    with pytest.raises(EventError, match=rf"^{re.escape(str(path))}{expected}") as raised:
        read("pull_request", path)
    assert "\n" not in str(raised.value)


def test_a_sha_that_is_not_one(tmp_path: Path) -> None:
    payload = merge_group_payload()
    payload["merge_group"]["head_sha"] = "HEAD"
    path = write(tmp_path, payload)
    with pytest.raises(EventError, match=r": merge_group: `head_sha` \('HEAD'\) is not a full"):
        read("merge_group", path)


def test_an_unreadable_or_missing_payload(tmp_path: Path) -> None:
    with pytest.raises(EventError, match=r"^GITHUB_EVENT_PATH is not set"):
        read("pull_request", None)

    missing = tmp_path / "nowhere.json"
    with pytest.raises(
        EventError, match=rf"^{re.escape(str(missing))}: .* cannot be read: No such file"
    ):
        read("merge_group", missing)

    bad = tmp_path / "bad.json"
    bad.write_text('{"pull_request": ')
    with pytest.raises(
        EventError, match=rf"^{re.escape(str(bad))}: the event payload is not JSON \(.* line 1"
    ):
        read("pull_request", bad)


def test_parse_pull_reads_the_apis_answer() -> None:
    data = pull_json(31)
    data["state"] = "closed"
    pull = parse_pull(data, source="GET pulls/31")
    assert (pull.number, pull.state, pull.head_sha) == (31, "closed", HEAD)

    del data["html_url"]
    with pytest.raises(EventError, match=r"^GET pulls/31: `html_url` is missing"):
        parse_pull(data, source="GET pulls/31")
