"""What a run grades, read from the event that started the workflow.

The runner writes the webhook payload of that event to the file ``GITHUB_EVENT_PATH``
names. ``pull_request`` and ``pull_request_target`` carry the pull request itself;
``workflow_dispatch`` carries only the inputs the workflow was dispatched with, so the
pull request is read from the API by number; ``merge_group`` (a merge queue) carries
the group's head and base, and has no pull request to comment on (issue 10, "Events").

The shas here are the event's: base is the base branch's tip when the event fired, head
the pull request's head. Their merge base, the baseline, is found later, by
:mod:`repogym_action.fetch`, in a history deep enough to hold it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from repogym.errors import UsageError

# The events the Action grades on, and the one publish mode runs on.
GradedEvent = Literal["pull_request", "pull_request_target", "workflow_dispatch", "merge_group"]
Event = GradedEvent | Literal["workflow_run"]
SUPPORTED_EVENTS: tuple[GradedEvent, ...] = get_args(GradedEvent)

# The names a workflow_dispatch input carrying the pull request number may have.
DISPATCH_INPUTS = ("pull-request", "pull_request", "pr", "number")

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or SHA-256 repositories
_NUMBER = re.compile(r"#?([1-9][0-9]{0,9})")


class EventError(UsageError):
    """The event payload does not say what to grade: a missing or unreadable file, a
    payload without its pull request, a dispatch without a pull request number."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequest:
    """A pull request as a payload or the REST API describes it."""

    number: int
    base_ref: str  # the base branch's name, e.g. main
    base_sha: str
    head_ref: str
    head_sha: str
    base_repo: str  # owner/name
    head_repo: str | None  # owner/name of the fork (or the same repository); None once deleted
    html_url: str
    state: str = "open"
    # The repository's default branch (base.repo.default_branch); None when not given.
    default_branch: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What this run grades: ``head_sha`` against ``base_ref`` (``base_sha``)."""

    event: Event
    pull: PullRequest | None  # None for merge_group
    base_ref: str  # a branch name (``main``), or what the `base` input says
    # None when the `base` input names the base: the checkout resolves it on origin.
    base_sha: str | None
    head_sha: str
    comment: bool  # False for merge_group: a queue's group gets the check run only
    # The repository's default branch, from the payload: a check run graded against
    # another base names it (issue 19); None when the payload does not say.
    default_branch: str | None = None


def read_target(
    event_name: str,
    event_path: Path | None,
    *,
    base_override: str | None,
    pull_number: int | None,
    fetch_pull: Callable[[int], PullRequest],
) -> Target | None:
    """The target of an ``event_name`` event whose payload is in ``event_path``; None for
    an event that is not graded (not in :data:`SUPPORTED_EVENTS`).

    ``base_override`` (the `base` input) replaces the pull request's base branch;
    ``pull_number`` (the `pull-request` input) names the pull request of a
    ``workflow_dispatch``, else the dispatch's own inputs must; ``fetch_pull`` reads a
    pull request from the API.

    Raises:
        EventError: the payload cannot be read or lacks what the event must carry.
    """
    if event_name not in SUPPORTED_EVENTS:
        return None
    if event_name == "merge_group":
        target = _merge_group(load_payload(event_path), _where(event_path))
    else:
        pull = _pull(event_name, event_path, pull_number, fetch_pull)
        target = Target(
            event=cast(GradedEvent, event_name),
            pull=pull,
            base_ref=pull.base_ref,
            base_sha=pull.base_sha,
            head_sha=pull.head_sha,
            comment=True,
            default_branch=pull.default_branch,
        )
    return _with_base(target, base_override)


def _pull(
    event_name: str,
    event_path: Path | None,
    pull_number: int | None,
    fetch_pull: Callable[[int], PullRequest],
) -> PullRequest:
    """The pull request of a pull_request(_target) or workflow_dispatch event."""
    if event_name == "workflow_dispatch":
        if pull_number is None:
            pull_number = _dispatch_number(load_payload(event_path), _where(event_path))
        return fetch_pull(pull_number)
    where = _where(event_path)
    data = _payload_object(load_payload(event_path), "pull_request", where, event_name)
    return parse_pull(data, source=f"{where}: pull_request")


def load_payload(event_path: Path | None) -> dict[str, Any]:
    """The JSON object in the event file."""
    if event_path is None:
        raise EventError(
            "GITHUB_EVENT_PATH is not set: the event payload is needed; run the action "
            "in a workflow, or set GITHUB_EVENT_PATH to a payload file"
        )
    try:
        text = event_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8"
        raise EventError(
            f"{event_path}: the event payload (GITHUB_EVENT_PATH) cannot be read: {reason}; "
            "point GITHUB_EVENT_PATH at the payload file"
        ) from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise EventError(
            f"{event_path}: the event payload is not JSON ({error.msg} at line {error.lineno}, "
            f"column {error.colno}); point GITHUB_EVENT_PATH at the payload the runner wrote"
        ) from None
    if not isinstance(payload, dict):
        raise EventError(
            f"{event_path}: the event payload is a JSON {type(payload).__name__}, not an "
            "object; point GITHUB_EVENT_PATH at the payload the runner wrote"
        )
    return payload


def parse_pull(data: Mapping[str, Any], *, source: str = "pull_request") -> PullRequest:
    """A pull request from its JSON (a payload's ``pull_request``, or the REST API's
    answer for ``GET /repos/{owner}/{repo}/pulls/{number}``: the same shape).

    ``source`` names the object in messages (``event.json: pull_request``)."""
    number = data.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise EventError(f"{source}: `number` ({number!r}) is not a pull request number")
    base = _object(data, "base", source)
    head = _object(data, "head", source)
    head_repo = head.get("repo")
    base_repo = _object(base, "repo", f"{source}.base")
    default = base_repo.get("default_branch")
    return PullRequest(
        number=number,
        base_ref=_text(base, "ref", f"{source}.base"),
        base_sha=_sha(base, "sha", f"{source}.base"),
        head_ref=_text(head, "ref", f"{source}.head"),
        head_sha=_sha(head, "sha", f"{source}.head"),
        base_repo=_text(base_repo, "full_name", f"{source}.base.repo"),
        head_repo=(
            _text(head_repo, "full_name", f"{source}.head.repo") if head_repo is not None else None
        ),
        html_url=_text(data, "html_url", source),
        state=_text(data, "state", source),
        default_branch=default if isinstance(default, str) and default else None,
    )


def _merge_group(payload: Mapping[str, Any], where: str) -> Target:
    group = _payload_object(payload, "merge_group", where, "merge_group")
    source = f"{where}: merge_group"
    repository = payload.get("repository")
    default = repository.get("default_branch") if isinstance(repository, Mapping) else None
    return Target(
        event="merge_group",
        pull=None,
        base_ref=_branch(_text(group, "base_ref", source)),
        base_sha=_sha(group, "base_sha", source),
        head_sha=_sha(group, "head_sha", source),
        comment=False,
        default_branch=default if isinstance(default, str) and default else None,
    )


def _dispatch_number(payload: Mapping[str, Any], where: str) -> int:
    inputs = payload.get("inputs")
    if isinstance(inputs, Mapping):
        for name in DISPATCH_INPUTS:
            value = inputs.get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
            match = _NUMBER.fullmatch(value.strip()) if isinstance(value, str) else None
            if match is None:
                raise EventError(
                    f"{where}: workflow_dispatch input `{name}` ({value!r}) is not a pull "
                    "request number; dispatch the workflow with a number such as 42"
                )
            return int(match.group(1))
    names = ", ".join(f"`{name}`" for name in DISPATCH_INPUTS)
    raise EventError(
        "workflow_dispatch: no pull request number to grade; set the action's input "
        "`pull-request` (e.g. `pull-request: ${{ inputs.pr }}`) or give the workflow an "
        f"input named one of {names}"
    )


def _with_base(target: Target, base_override: str | None) -> Target:
    """``target`` graded against the `base` input's ref instead, when one is given."""
    if base_override is None:
        return target
    sha = base_override.lower() if _SHA.fullmatch(base_override.lower()) else None
    return Target(
        event=target.event,
        pull=target.pull,
        base_ref=_branch(base_override),
        base_sha=sha,
        head_sha=target.head_sha,
        comment=target.comment,
        default_branch=target.default_branch,
    )


def _branch(ref: str) -> str:
    """``main`` for ``refs/heads/main`` (merge_group payloads give full ref names)."""
    return ref.removeprefix("refs/heads/")


def _where(event_path: Path | None) -> str:
    return str(event_path) if event_path is not None else "the event payload"


def _object(data: object, key: str, source: str) -> Mapping[str, Any]:
    """``data[key]``, which must be a JSON object."""
    value = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(value, Mapping):
        raise EventError(f"{source}: `{key}` is missing or not an object")
    return value


def _payload_object(payload: Mapping[str, Any], key: str, where: str, event: str) -> Any:
    """The object an ``event`` payload must carry under ``key``."""
    value = payload.get(key)
    if not isinstance(value, Mapping):
        raise EventError(
            f"{where}: the {event} payload has no `{key}` object; GITHUB_EVENT_NAME and "
            "GITHUB_EVENT_PATH must come from the same event (the runner sets both)"
        )
    return value


def _text(data: object, key: str, source: str) -> str:
    value = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(value, str) or not value:
        raise EventError(f"{source}: `{key}` is missing or not a non-empty string")
    return value


def _sha(data: object, key: str, source: str) -> str:
    value = _text(data, key, source)
    if not _SHA.fullmatch(value):
        raise EventError(f"{source}: `{key}` ({value!r}) is not a full commit sha")
    return value
