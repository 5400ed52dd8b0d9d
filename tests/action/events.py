"""Webhook payloads for GITHUB_EVENT_PATH, naming a real test repository's PR and commits.

The payloads are @octokit/webhooks-examples' (tests/action/data/events, see its README): the
shape GitHub sends. `payload` puts the test's repository name, PR number, refs and shas into a
copy, wherever the example names its own (full names, logins, URLs, labels), so the Action
under test reads an event that agrees with the git repository and the fake API it talks to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).parent / "data" / "events"
NAMES = (
    "pull_request.opened",
    "pull_request.synchronize",
    "merge_group.checks_requested",
    "workflow_dispatch",
    "workflow_run.completed",
)


def example(name: str) -> dict[str, Any]:
    """The published example payload, unchanged."""
    if name not in NAMES:
        raise ValueError(f"event {name!r}: not one of {', '.join(NAMES)}")
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


def payload(
    name: str,
    *,
    repository: str,
    number: int,
    base_ref: str,
    base_sha: str,
    head_ref: str,
    head_sha: str,
    head_repository: str | None = None,
    before: str | None = None,
    inputs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Event `name` (one of NAMES) about PR `number` of `repository` ("owner/name").

    head_repository: the fork the PR comes from (default: `repository`).
    before: the head before a `synchronize` push (default: base_sha).
    inputs: a workflow_dispatch's inputs (default: {"pull-request": "<number>"}).
    """
    event = example(name)
    old = event["repository"]["full_name"]
    event = _replaced(event, _names(old, repository))
    event = _default_branch(event, "main")  # the test repository's, as the fake API says
    if name.startswith("pull_request."):
        pull = event["pull_request"]
        shas = {pull["head"]["sha"]: head_sha, pull["base"]["sha"]: base_sha}
        event = _numbered(_replaced(event, shas), number)
        pull = event["pull_request"]
        _branch(pull["base"], base_ref)
        _branch(pull["head"], head_ref)
        if head_repository is not None:
            pull["head"] = _replaced(pull["head"], _names(repository, head_repository))
            pull["head"]["repo"]["fork"] = True
        if "before" in event:
            event["before"] = before or base_sha
            event["after"] = head_sha
    elif name.startswith("merge_group."):
        group = event["merge_group"]
        group["base_ref"] = f"refs/heads/{base_ref}"
        group["base_sha"] = base_sha
        group["head_ref"] = f"refs/heads/gh-readonly-queue/{base_ref}/pr-{number}-{head_sha}"
        group["head_sha"] = head_sha
        group["head_commit"]["id"] = head_sha
    elif name.startswith("workflow_run."):
        # The grading run of a pull request from a fork: GitHub leaves pull_requests empty.
        run = event["workflow_run"]
        run.update(event="pull_request", conclusion="success", status="completed")
        run.update(head_sha=head_sha, head_branch=head_ref, pull_requests=[])
        run["head_repository"] = json.loads(json.dumps(run["repository"]))
        if head_repository is not None:
            names = _names(repository, head_repository)
            run["head_repository"] = _replaced(run["head_repository"], names)
            run["head_repository"]["fork"] = True
    else:
        event["ref"] = f"refs/heads/{base_ref}"
        event["inputs"] = dict(inputs) if inputs is not None else {"pull-request": str(number)}
    return event


def _default_branch(node: Any, branch: str) -> Any:
    """Every repository object's `default_branch` set to `branch`."""
    if isinstance(node, dict):
        return {
            key: branch if key == "default_branch" else _default_branch(value, branch)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_default_branch(item, branch) for item in node]
    return node


def _numbered(event: dict[str, Any], number: int) -> dict[str, Any]:
    """The PR's number in its fields and URLs (/pull/N, /pulls/N, /issues/N)."""
    pattern = re.compile(rf"/(pull|pulls|issues)/{event['number']}(?=$|[/.?#])")
    event = _map_strings(event, lambda text: pattern.sub(rf"/\g<1>/{number}", text))
    event["number"] = event["pull_request"]["number"] = number
    return event


def _branch(side: dict[str, Any], ref: str) -> None:
    """One side (base or head) of the PR named `ref` (its sha is already replaced)."""
    side["ref"] = ref
    side["label"] = f"{side['label'].split(':', 1)[0]}:{ref}"


def _names(old: str, new: str) -> dict[str, str]:
    """Repository `old` ("owner/name") renamed `new`: the full name, the owner, the name."""
    (old_owner, old_name), (new_owner, new_name) = old.split("/"), new.split("/")
    return {old: new, old_owner: new_owner, old_name: new_name}


def _replaced(node: Any, table: Mapping[str, str]) -> Any:
    """Every whole word or path segment in `table` replaced, in every string under `node`.

    Names ("owner/name", the owner, the name) and shas: in full names, logins, labels, URLs
    and e-mails alike, never inside a longer word.
    """
    words = "|".join(re.escape(word) for word in sorted(table, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.-])({words})(?![\w-])")
    return _map_strings(node, lambda text: pattern.sub(lambda m: table[m.group(1)], text))


def _map_strings(node: Any, change: Callable[[str], str]) -> Any:
    if isinstance(node, str):
        return change(node)
    if isinstance(node, dict):
        return {key: _map_strings(value, change) for key, value in node.items()}
    if isinstance(node, list):
        return [_map_strings(item, change) for item in node]
    return node
