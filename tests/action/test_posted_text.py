"""What the Action sends GitHub is text GitHub takes as it is meant (issue 19).

- A file name that is not UTF-8 (git hands it over as bytes; read with ``surrogateescape``
  it holds lone surrogates) never reaches the API as a lone surrogate, which is no
  Unicode and which JSON cannot carry: texts show the byte as ``\\xe9``, and an annotation
  on such a file is left out (the API names files in UTF-8, so it could only name another
  file); the finding stays in the summary and the comment.
- A bare run of 7 or more hex digits in a text is linked by GitHub to the commit it
  abbreviates: a report's messages cannot link a commit (tests/report/test_render.py's
  ``LINKED`` finds in the rendered text every link GitHub would make).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from repogym._demo import EXAMPLES
from tests.action.forks import opened_fork, publish, well_formed
from tests.action.gitrepo import files_of
from tests.action.job import Job, Step
from tests.support.github_html import LINKED, Shown, github_html

LATIN1 = "src/slugify/caf\udce9.py"  # the bytes caf\xe9.py, as os.fsdecode gives them


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


def lone_surrogates(value: Any, where: str = "") -> list[str]:
    """Where in ``value`` (a request's JSON body) a string holds a lone surrogate."""
    if isinstance(value, str):
        return [where] if re.search(r"[\ud800-\udfff]", value) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in lone_surrogates(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in lone_surrogates(v, f"{where}[{i}]")]
    return []


def sent(job: Job) -> list[tuple[str, Any]]:
    return [(f"{r.method} {r.path}", r.body) for r in job.fake.requests if r.method != "GET"]


def assert_sent_as_text(job: Job, step: Step) -> None:
    """No request carried a lone surrogate; nothing GitHub renders links a commit."""
    found = [f"{what}{where}" for what, body in sent(job) for where in lone_surrogates(body)]
    assert found == [], found
    [comment] = job.fake.comments(7)
    body = comment["body"].split("\n", 1)[1]  # after the Action's marker
    [run] = job.fake.check_runs()
    for markdown in (body, run["output"]["summary"], run["output"]["text"]):
        text = "".join(Shown(github_html(markdown)).text)  # outside code and links
        assert [m.group() for m in LINKED.finditer(text)] == []
    assert "Traceback" not in step.log


def test_a_file_name_that_is_not_utf8_reaches_no_request(job: Job) -> None:
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = {**files_of(EXAMPLES / "bugfix" / "solution"), LATIN1: "breakpoint()\n"}
    pull = job.open_pull(7, base=base, head=head)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 1, step.log
    assert_sent_as_text(job, step)
    [run] = job.fake.check_runs()
    assert run["annotations"] == []  # the one finding is on that file
    assert "caf&#92;xe9.py" in run["output"]["summary"]  # shown, the byte escaped
    assert "caf\\xe9.py" in step.summary


def test_a_forged_report_quoting_shas_links_no_commit(job: Job) -> None:
    """Every string of a forged report (names, summary, messages, findings) holds the sha
    of a commit of the repository, whole and abbreviated. (A lone surrogate cannot come
    this way: JSON's ``\\udce9`` is refused by the report's schema, a string of text.)"""
    pull = opened_fork(job)
    hostile = f"fixed in {pull.base_sha}, see {pull.base_sha[:7]}"
    report = well_formed(pull, passed=False, score=0.0, summary=f"FAIL 0.000 {hostile}")
    for component in report["components"]:
        component["name"] += f" {hostile}"
        component["messages"] = [hostile]
        component["findings"] = [
            {"path": "src/slugify/core.py", "line": 1, "title": hostile, "message": hostile}
        ]
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 1, step.log
    assert_sent_as_text(job, step)


def test_a_forged_report_with_a_lone_surrogate_is_refused(job: Job) -> None:
    pull = opened_fork(job)
    report = well_formed(pull, summary="PASS 1.000 caf\udce9")
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 2, step.log
    assert "`summary` is 'PASS 1.000 caf\\udce9': should be a valid string" in step.log
    assert [what for what, _ in sent(job)] == []
