"""The checks the fake makes with GitHub's OpenAPI description, on their own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.action import fake_objects as gh
from tests.action.fake_github import description
from tests.action.openapi import Operation

SITE = gh.Site(api="http://127.0.0.1:1/api/v3", html="http://127.0.0.1:1")
PULL = gh.Pull(
    number=3, base_ref="main", base_sha="a" * 40, head_ref="x", head_sha="b" * 40, head_repo="o/r"
)


def operation(method: str, path: str) -> tuple[Operation, dict[str, str]]:
    found, params, known = description().operation(method, path)
    assert found is not None and known
    return found, params


def test_a_ref_with_slashes_names_the_most_specific_operation() -> None:
    runs, params = operation("GET", "/repos/o/r/commits/feature/x/check-runs")
    commit, commit_params = operation("GET", "/repos/o/r/commits/feature/x")
    assert (runs.template, params["ref"]) == (
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        "feature/x",
    )
    assert (commit.template, commit_params["ref"]) == (
        "/repos/{owner}/{repo}/commits/{ref}",
        "feature/x",
    )
    assert description().operation("PUT", "/repos/o/r/commits/x") == (None, {}, True)
    assert description().operation("GET", "/repos/o/r/tags") == (None, {}, False)


def test_nullable_fields_take_null_and_nothing_else_does() -> None:
    get_pull, _ = operation("GET", "/repos/o/r/pulls/3")
    shown = gh.pull_request(SITE, "o/r", PULL)
    assert shown["body"] is None and shown["mergeable"] is None
    assert description().check_response(get_pull, 200, shown) == []
    assert description().check_response(get_pull, 200, {**shown, "title": None}) == [
        "response 200 body['title']: None is not of type 'string'"
    ]
    assert description().check_response(get_pull, 200, {**shown, "state": "merged"}) == [
        "response 200 body['state']: 'merged' is not one of ['open', 'closed']"
    ]
    assert description().check_response(get_pull, 418, {}) == [
        "response status 418 is not declared"
    ]


@pytest.mark.parametrize(
    ("started_at", "problems"),
    [
        ("2024-05-01T12:00:00Z", []),
        ("2024-05-01T12:00:00.123+02:00", []),
        (
            "2024-13-01T12:00:00Z",
            ["body['started_at']: '2024-13-01T12:00:00Z' is not a 'date-time'"],
        ),
        ("2024-05-01 12:00:00", ["body['started_at']: '2024-05-01 12:00:00' is not a 'date-time'"]),
    ],
)
def test_timestamps_are_rfc_3339(started_at: str, problems: list[str]) -> None:
    create, _ = operation("POST", "/repos/o/r/check-runs")
    body: dict[str, Any] = {"name": "repogym", "head_sha": "b" * 40, "started_at": started_at}
    assert description().check_body(create, body) == problems


def test_a_completed_update_needs_a_conclusion() -> None:
    update, params = operation("PATCH", "/repos/o/r/check-runs/12")
    assert description().check_request(
        update, path_params=params, query={}, body={"status": "completed"}
    ) == ["body: {'status': 'completed'} is not valid under any of the given schemas"]
    done = {"status": "completed", "conclusion": "success"}
    assert description().check_request(update, path_params=params, query={}, body=done) == []
    assert description().check_request(update, path_params=params, query={}, body=None) == [
        "the body is missing"
    ]
