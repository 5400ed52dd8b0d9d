"""The examples a job grades end to end, and what a published verdict must hold."""

from __future__ import annotations

import json

from repogym._demo import EXAMPLES
from repogym_action.metadata import OUTPUTS
from tests.action.gitrepo import files_of
from tests.action.job import Job, Step


def example(name: str) -> tuple[dict[str, str | bytes | None], dict[str, str | bytes | None]]:
    return files_of(EXAMPLES / name / "repo"), files_of(EXAMPLES / name / "solution")


def check_runs(job: Job, sha: str) -> list[dict[str, object]]:
    return [r for r in job.fake.check_runs(sha) if r["name"] == "repogym"]


def assert_published(job: Job, step: Step, *, passed: bool, head: str) -> None:
    """What every run that graded leaves: the outputs, the job summary, the report, a
    completed check run on the head with the run's verdict."""
    assert step.exit_code == (0 if passed else 1), step.log
    assert set(step.outputs) == set(OUTPUTS)  # every output of action.yml, written
    assert step.outputs["passed"] == ("true" if passed else "false")
    assert step.outputs["summary"].startswith("PASS " if passed else "FAIL ")
    assert step.report is not None and step.report["passed"] is passed
    assert step.report["head"]["sha"] == head
    assert step.outputs["score"] == step.outputs["summary"].split()[1]
    assert step.outputs["report"].endswith("repogym-report.json")
    assert ("repogym: passed" if passed else "repogym: not passed") in step.summary
    runs = check_runs(job, head)
    latest = runs[0]
    assert latest["status"] == "completed"
    assert latest["conclusion"] == ("success" if passed else "failure")
    assert latest["output"]["title"] == step.outputs["summary"]  # type: ignore[index]
    assert step.outputs["check-url"] == latest["html_url"]
    # The log: a group per grader with its commands, and the final line.
    assert "::group::repogym: constraints" in step.log
    assert "::group::repogym: tests" in step.log
    assert "\n$ python -m pytest" in step.log
    assert f"repogym-action: {step.outputs['summary']}" in step.log
    # The token only ever in the line that masks it.
    assert [line for line in step.log.splitlines() if job.fake.token in line] == [
        f"::add-mask::{job.fake.token}"
    ]
    # ... and nowhere in what it posted or wrote.
    posted = json.dumps([job.fake.comments(n) for n in job.fake.state.pulls])
    posted += json.dumps(job.fake.check_runs()) + json.dumps([r.body for r in job.fake.requests])
    written = posted + step.summary + json.dumps(step.outputs) + json.dumps(step.report)
    assert job.fake.token not in written
