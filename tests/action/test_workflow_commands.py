"""No text of a report, a submission, git or an exception runs a workflow command (issue 19).

The runner reads two syntaxes in every line a step prints: ``::name props::data`` at the
start of a line, and the old ``##[name props]data`` anywhere in it (tests/action/
test_commands.py parses both as the runner's rules say). A forged report in publish mode,
whose job holds a token that can write, and a pull request whose tests print commands and
are named after them, are run end to end; the log the runner would read must run only
the commands the Action means: its groups, the mask of its token, its annotations, and the
stop-commands around what the submission printed.
"""

from __future__ import annotations

import json
from typing import Any

from repogym._demo import EXAMPLES
from repogym_action.commands import inert
from tests.action.forks import FORK, opened_fork, publish, well_formed
from tests.action.gitrepo import files_of
from tests.action.job import Job, Step
from tests.action.logs import commands_run

# Every command a step could be made to run, in both syntaxes; "PWNED" marks the forged.
PAYLOADS = (
    "##[warning]PWNED-legacy-warning",
    "##[set-output name=passed;]true",
    "##[add-mask]PWNED-legacy-mask",
    "::set-output name=passed::true",
    "::add-mask::PWNED-mask",
    "::warning::PWNED-warning",
)
HOSTILE = " ".join(PAYLOADS)
OURS = {"group", "endgroup", "add-mask", "stop-commands", "error", "warning", "notice"}


def assert_only_our_commands(job: Job, step: Step, *, shown: bool = True) -> list[tuple[str, str]]:
    """Every command the runner would run for ``step.log`` is one the Action writes, in
    the ``::`` syntax; ``shown``: the forged text is in the log, inert (else it is not
    there at all). The annotations (name, message) are returned for the caller."""
    done = commands_run(step.log)
    legacy = [command for command, old in done if old]
    assert legacy == [], legacy
    tokens = {data for (name, _, data), _ in done if name == "stop-commands"}
    names = {name for (name, _, _), _ in done}
    assert names <= OURS | tokens, names - OURS - tokens
    masks = [data for (name, _, data), _ in done if name == "add-mask"]
    assert masks == [job.fake.token], masks
    for (name, properties, data), _ in done:
        if name in {"group", "endgroup"}:
            assert "PWNED" not in data
        assert not any("PWNED" in value for value in properties.values())
    assert ("PWNED" in step.log) is shown  # shown, only inert; or kept out
    assert step.outputs.get("passed") != "true" or step.exit_code == 0
    return [(name, data) for (name, _, data), _ in done if name in {"error", "warning", "notice"}]


def forged(pull: Any) -> dict[str, Any]:
    """A report of the right shape about the pull request's head, every text it may
    hold (summary, names, messages, findings) full of commands."""
    report = well_formed(pull, passed=False, score=0.0)
    report["summary"] = f"FAIL 0.000 (tests=0.00✗ {HOSTILE})"
    for component in report["components"]:
        component["name"] = f"{component['name']} {HOSTILE}"
        component["messages"] = [HOSTILE, "\n".join(PAYLOADS)]
        component["findings"] = [
            {
                "path": "src/slugify/core.py",
                "line": 1,
                "title": HOSTILE,
                "message": "\n".join(PAYLOADS),
                "level": "failure",
            }
        ]
    return report


def test_a_forged_report_runs_no_command_in_the_job_that_can_write(job: Job) -> None:
    pull = opened_fork(job)
    step = publish(job, pull, json.dumps(forged(pull)).encode())
    assert step.exit_code == 1, step.log
    assert assert_only_our_commands(job, step) == []
    assert step.outputs["passed"] == "false"


def test_a_forged_error_report_runs_no_command(job: Job) -> None:
    pull = opened_fork(job)
    report = well_formed(pull, passed=False, score=0.0)
    report["error"] = {"kind": "task", "message": HOSTILE}
    step = publish(job, pull, json.dumps(report).encode())
    assert step.exit_code == 2, step.log
    annotations = assert_only_our_commands(job, step)
    # The message, as the data of our own annotation, which reads the same.
    assert annotations == [("error", inert(HOSTILE))]
    assert inert(HOSTILE).replace("\u200b", "") == HOSTILE


HOSTILE_TESTS = """\
import sys

import pytest

PAYLOADS = {payloads!r}


@pytest.mark.parametrize("payload", PAYLOADS, ids=PAYLOADS)
def test_hostile(payload):
    print(payload)
    print("\\n".join(PAYLOADS), file=sys.stderr)
    sys.__stdout__.write(payload + "\\n")
    assert False, payload
"""


def test_a_submission_that_prints_commands_and_names_its_tests_after_them(any_job: Job) -> None:
    """The tests print every payload, on stdout, stderr and the real stdout, and are named
    after them; two files' names hold them too, one after a line break. All of it is in
    the report, and none of it in the log."""
    job = any_job
    base = files_of(EXAMPLES / "bugfix" / "repo")
    head = {
        **files_of(EXAMPLES / "bugfix" / "solution"),
        "tests/test_hostile.py": HOSTILE_TESTS.format(payloads=PAYLOADS),
        "src/##[warning]PWNED-file.txt": "x\n",
        "src/evil\n::set-output name=passed::true.txt": "x\n",
    }
    pull = job.open_pull(7, base=base, head=head, head_repo=FORK)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 1, step.log
    assert step.report is not None and "PWNED" in json.dumps(step.report["components"])
    assert assert_only_our_commands(job, step, shown=False) == []
    assert step.outputs["passed"] == "false"


def test_gits_error_quoting_an_input_runs_no_command(any_job: Job) -> None:
    """The ``base`` input reaches git, whose error the log quotes in our lines (the fetch,
    the final summary line) and in the error annotation."""
    job = any_job
    base = files_of(EXAMPLES / "bugfix" / "repo")
    pull = job.open_pull(7, base=base, head=files_of(EXAMPLES / "bugfix" / "solution"))
    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, {"base": "x##[warning]PWNED"})
    assert step.exit_code == 2, step.log
    [(name, message)] = assert_only_our_commands(job, step)
    assert name == "error" and "invalid refspec" in message
