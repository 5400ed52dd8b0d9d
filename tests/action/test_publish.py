"""What a run publishes, from reports too long or too hostile for GitHub: every text
within GitHub's limits (the fake API refuses more, as GitHub does), annotations only with
a usable path, titles and messages cut with a note, never rejected."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from repogym.report.build import error_report
from repogym.report.schema import Report
from repogym_action.annotations import MAX_MESSAGE, MAX_TITLE, to_annotations
from repogym_action.commands import Commands
from repogym_action.event import PullRequest, Target
from repogym_action.github import GitHub
from repogym_action.grade import Graded
from repogym_action.publish import Publication, publish
from repogym_action.settings import parse_context, parse_settings
from tests.action.fake_github import FakeGitHub
from tests.action.logs import read_outputs

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
HEAD = "c" * 40


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_pull(7, base_ref="main", base_sha="a" * 40, head_ref="fix", head_sha=HEAD)
        yield fake
        assert fake.violations == []


def publication(fake: FakeGitHub, tmp_path: Path) -> Publication:
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_RUN_ID": "77",
        "GITHUB_API_URL": fake.url,
        "GITHUB_SERVER_URL": fake.server_url,
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "RUNNER_TEMP": str(tmp_path),
        "INPUT_GITHUB-TOKEN": fake.token,
    }
    context = parse_context(env)
    pull = PullRequest(
        number=7,
        base_ref="main",
        base_sha="a" * 40,
        head_ref="fix",
        head_sha=HEAD,
        base_repo=fake.repository,
        head_repo=fake.repository,
        html_url="https://x.test/pull/7",
    )
    target = Target(
        event="pull_request",
        pull=pull,
        base_ref="main",
        base_sha="a" * 40,
        head_sha=HEAD,
        comment=True,
    )
    github = GitHub(
        api_url=fake.url, token=fake.token, repository=fake.repository, seconds_between_writes=0
    )
    return Publication(
        context=context,
        settings=parse_settings(env, workspace=tmp_path),
        target=target,
        github=github,
    )


def load(case: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((REPORTS / f"{case}.json").read_text())
    report["head"] = {"sha": HEAD}
    return report


@pytest.mark.parametrize("case", ["long", "hostile", "error_internal"])
def test_every_text_fits_github_and_is_accepted(
    fake: FakeGitHub, tmp_path: Path, case: str
) -> None:
    report = load(case)
    error = report["error"]["message"] if report.get("error") else None
    p = publication(fake, tmp_path)
    p.start(Commands())
    publish(p, Graded(report=report, seconds=1.0, error=error), Commands())
    [run] = fake.check_runs(HEAD)
    assert run["conclusion"] == ("success" if report.get("passed") else "failure")
    for key in ("summary", "text"):
        assert len(run["output"][key]) <= 65535
    [comment] = fake.comments(7)
    assert len(comment["body"]) <= 65536
    if case == "long":
        assert "Shortened to fit" in comment["body"] and "Shortened to fit" in run["output"]["text"]
    assert read_outputs((tmp_path / "output").read_text())["passed"] == "false"
    assert json.loads((tmp_path / "repogym-report.json").read_text()) == report


def test_annotations_keep_only_usable_paths_and_cut_what_is_long() -> None:
    findings = [
        {"path": "src/a.py", "line": 3, "message": "ok"},
        {"path": "/etc/passwd", "line": 1, "message": "absolute"},
        {"path": "../outside.py", "line": 1, "message": "climbs out"},
        {"path": "src/\nb.py", "line": 1, "message": "a line break"},
        {"path": None, "message": "no path: the summary only"},
        {"path": "src/c.py", "title": "t" * 1000, "message": "é" * MAX_MESSAGE},
    ]
    made, left = to_annotations(_report("constraints", findings))
    assert left == 0
    assert [a["path"] for a in made] == ["src/a.py", "src/c.py"]
    long = made[1]
    assert long["start_line"] == 1 and len(long["title"]) <= MAX_TITLE
    assert long["title"].endswith("more characters)")
    assert len(long["message"].encode()) <= MAX_MESSAGE and long["message"].endswith("characters)")
    assert made[0]["title"] == "constraints" and made[0]["annotation_level"] == "failure"
    # Values no annotation could be made of never reach it: the report's schema refuses
    # them where the Action reads a report (a line 0 or true, an unknown level).
    for odd in ({"line": 0}, {"line": True}, {"level": "oops"}):
        finding = {"path": "src/d.py", "message": "odd values", **odd}
        with pytest.raises(ValidationError):
            _report("constraints", [finding])


def _report(name: str, findings: list[dict[str, object]]) -> Report:
    component = {"name": name, "role": "gate", "score": 1.0, "passed": True, "findings": findings}
    return Report.model_validate({"components": [component]})


ONE_LINE_BREAKERS = ["\n", "\r\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("breaker", ONE_LINE_BREAKERS, ids=repr)
def test_an_annotation_title_is_one_line_without_control_characters(breaker: str) -> None:
    findings = [
        {"path": "src/a.py", "line": 1, "title": f"first{breaker}::error::second", "message": "m"},
        {"path": "src/b.py", "line": 2, "title": breaker * 3, "message": f"one{breaker}two"},
        {"path": "src/c.py", "line": 3, "title": f"{breaker}x" * 300, "message": "long"},
    ]
    made, _ = to_annotations(_report("tests", findings))
    titles = [a["title"] for a in made]
    assert titles[0] == "first ::error::second"
    assert titles[1] == "tests"  # nothing left of the title: the component's name
    assert titles[2].startswith("x x x") and titles[2].endswith("more characters)")
    assert len(titles[2]) <= MAX_TITLE
    for title in titles:
        assert title.isprintable() and title == title.strip(), repr(title)
    assert made[1]["message"] == f"one{breaker}two"  # a message may have lines; GitHub shows them
    with pytest.raises(ValidationError):  # a component's name is one line where it is read
        _report(f"tests{breaker}{breaker}evil", findings)


def test_the_check_run_title_is_one_line(fake: FakeGitHub, tmp_path: Path) -> None:
    """An error's message is the check run's title: a message of several lines (a
    template's error) is shown on one line, cut to 255 characters. (A report whose
    ``error.message`` has several lines does not fit the schema: test_publish_mode.py.)"""
    message = "template comment.md.j2: line 1\n::warning::forged\r\n\x1b[0m" + "y" * 400
    report = error_report("usage", message, head={"sha": HEAD})
    p = publication(fake, tmp_path)
    p.start(Commands())
    publish(p, Graded(report=report, seconds=1.0, error=message), Commands())
    [run] = fake.check_runs(HEAD)
    title = run["output"]["title"]
    assert title.startswith("ERROR template comment.md.j2: line 1 ::warning::forged [0m")
    assert title.isprintable() and len(title) <= 255 and title.endswith("more characters)")
