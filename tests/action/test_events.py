"""The webhook payloads: the published examples, with a test repository's names and shas."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.action.events import EVENTS, NAMES, example, payload

BASE = "1" * 40
HEAD = "2" * 40
PR = {
    "repository": "acme/widget",
    "number": 17,
    "base_ref": "main",
    "base_sha": BASE,
    "head_ref": "fix-parser",
    "head_sha": HEAD,
}


def load_script(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A script of tests/action/data, imported as its command line runs it (its folder first)."""
    monkeypatch.syspath_prepend(str(EVENTS.parent))
    path = EVENTS.parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shas(event: object) -> set[str]:
    return set(re.findall(r"\b[0-9a-f]{40}\b", json.dumps(event)))


@pytest.mark.parametrize("name", NAMES)
def test_no_name_of_the_example_repository_is_left(name: str) -> None:
    original = example(name)
    event = payload(name, **PR)  # type: ignore[arg-type]
    old_owner, old_name = original["repository"]["full_name"].split("/")
    text = json.dumps(event)
    assert re.search(rf"\b{re.escape(old_owner)}/|/{re.escape(old_name)}\b", text) is None
    assert event["repository"]["full_name"] == "acme/widget"
    assert event["repository"]["owner"]["login"] == "acme"
    assert event["repository"]["html_url"] == "https://github.com/acme/widget"


@pytest.mark.parametrize("name", ["pull_request.opened", "pull_request.synchronize"])
def test_a_pull_request_event_names_the_test_pr(name: str) -> None:
    event = payload(name, **PR)  # type: ignore[arg-type]
    pull = event["pull_request"]
    assert event["number"] == pull["number"] == 17
    assert (pull["base"]["ref"], pull["base"]["sha"]) == ("main", BASE)
    assert (pull["head"]["ref"], pull["head"]["sha"]) == ("fix-parser", HEAD)
    assert pull["head"]["label"] == "acme:fix-parser"
    assert pull["html_url"] == "https://github.com/acme/widget/pull/17"
    assert pull["issue_url"] == "https://api.github.com/repos/acme/widget/issues/17"
    assert pull["statuses_url"].endswith(f"/statuses/{HEAD}")
    assert shas(event) <= {BASE, HEAD}
    if name.endswith("synchronize"):
        assert (event["before"], event["after"]) == (BASE, HEAD)


def test_a_pull_request_from_a_fork() -> None:
    event = payload("pull_request.opened", **PR, head_repository="forker/widget")  # type: ignore[arg-type]
    head, base = event["pull_request"]["head"], event["pull_request"]["base"]
    assert (head["repo"]["full_name"], head["repo"]["fork"], head["label"]) == (
        "forker/widget",
        True,
        "forker:fix-parser",
    )
    assert (base["repo"]["full_name"], base["label"]) == ("acme/widget", "acme:main")


def test_a_merge_group_event_names_the_group_head_and_base() -> None:
    group = payload("merge_group.checks_requested", **PR)["merge_group"]  # type: ignore[arg-type]
    assert (group["base_ref"], group["base_sha"], group["head_sha"]) == (
        "refs/heads/main",
        BASE,
        HEAD,
    )
    assert group["head_ref"] == f"refs/heads/gh-readonly-queue/main/pr-17-{HEAD}"
    assert group["head_commit"]["id"] == HEAD


def test_a_workflow_dispatch_names_the_pr_in_its_inputs() -> None:
    event = payload("workflow_dispatch", **PR)  # type: ignore[arg-type]
    assert (event["ref"], event["inputs"]) == ("refs/heads/main", {"pull-request": "17"})
    other = payload("workflow_dispatch", **PR, inputs={"pr": "17"})  # type: ignore[arg-type]
    assert other["inputs"] == {"pr": "17"}


def test_an_unknown_event_is_refused() -> None:
    with pytest.raises(ValueError, match="push"):
        payload("push", **PR)  # type: ignore[arg-type]


def test_the_payloads_are_the_published_examples_of_the_recorded_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script("take_events", monkeypatch)
    assert tuple(script.EVENTS) == NAMES
    assert f"`{script.PACKAGE}` {script.VERSION}" in (EVENTS / "README.md").read_text()
    for file, (webhook, action) in script.EVENTS.items():
        published = json.loads((EVENTS / f"{file}.json").read_text())
        assert published.get("action") == action, webhook


def test_the_trimmed_description_is_closed_and_regenerates_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trimming the committed file again changes nothing: every $ref it holds is in it."""
    script = load_script("trim_openapi", monkeypatch)
    committed = json.loads(Path(script.OUTPUT).read_text())
    assert committed["x-trimmed-from"]["version"] == script.VERSION
    again = script.trim(committed, script.VERSION)
    assert again == {**committed, "x-trimmed-from": again["x-trimmed-from"]}
    assert {(m, p) for p, ms in committed["paths"].items() for m in ms} == set(script.OPERATIONS)
