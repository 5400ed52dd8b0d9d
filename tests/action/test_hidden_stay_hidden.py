"""Hidden tests stay hidden (issue 19): ``repogym-action`` end to end on a real repository
graded with hidden tests (the ``hidden-tests`` input, a directory an earlier step checked
out), whose pull request reads them from its copy and makes a public test fail with an
exception that carries them.

The hidden test's source, its path and even its name are then nowhere others read: not in
the comment, the check run (summary, text, annotations), the job summary, the outputs or
the report file (which the fork workflow uploads). What is published is counts and the
public ids.
"""

from __future__ import annotations

import json

import pytest

from tests.action.gitrepo import Pull
from tests.action.job import Job, Step
from tests.action.runners import Layout

CANARY = "CANARY-of-the-hidden-test"
TASK = """\
version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass:
    - tests/test_public.py::test_public
    - tests/test_secret_edge.py::test_secret_edge
  timeout: 120
"""
BASE = {
    ".repogym.yml": TASK,
    "pytest.ini": "[pytest]\npythonpath = src\n",
    "src/calc.py": "def add(a, b):\n    return 0\n",
    "tests/test_public.py": (
        "from calc import add\n\n\ndef test_public():\n    assert add(2, 3) == 5\n"
    ),
}
HIDDEN = (
    f"from calc import add\n\n\ndef test_secret_edge():\n    assert add(40, 2) == 42  # {CANARY}\n"
)
# The pull request: every call reads the hidden test from the run's copy and raises it, on
# one line (what is shown of a failure is its first line), in the failure's message, and
# prints it too.
LEAKING = (
    "import pathlib\n\n\n"
    "def add(a, b):\n"
    '    secret = pathlib.Path("tests/test_secret_edge.py").read_text()\n'
    "    print(secret)\n"
    '    raise RuntimeError("LEAK " + repr(secret))\n'
)


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


def hidden_tests_checked_out(layout: Layout) -> None:
    """The step before the Action: the hidden tests, laid out at their paths."""
    path = layout.workspace / ".hidden-tests" / "tests" / "test_secret_edge.py"
    path.parent.mkdir(parents=True)
    path.write_text(HIDDEN)


def run_with_hidden_tests(job: Job, pull: Pull) -> Step:
    """The Action on the pull request's opening, with the hidden tests checked out."""
    return job.run(
        "pull_request",
        job.event("pull_request.opened", pull),
        pull,
        {"hidden-tests": ".hidden-tests"},
        before=hidden_tests_checked_out,
    )


def everything_published(job: Job, step: Step) -> dict[str, str]:
    [comment] = job.fake.comments(7)
    [run] = job.fake.check_runs()
    return {
        "comment": comment["body"],
        "check summary": run["output"]["summary"],
        "check text": run["output"]["text"],
        "check title": run["output"]["title"],
        "annotations": json.dumps(run["annotations"]),
        "job summary": step.summary,
        "outputs": json.dumps(step.outputs),
        "report": json.dumps(step.report),
        "requests": json.dumps([r.body for r in job.fake.requests]),
    }


def test_a_submission_that_raises_the_hidden_tests_shows_nothing_of_them(job: Job) -> None:
    pull = job.open_pull(7, base=BASE, head={"src/calc.py": LEAKING})
    step = run_with_hidden_tests(job, pull)
    assert step.exit_code == 1, step.log
    published = everything_published(job, step)
    for where, text in published.items():
        for secret in (CANARY, "LEAK", "add(40, 2)", "RuntimeError"):
            assert secret not in text, f"{secret!r} in the {where}"
        # The hidden test's name, even in Markdown's escapes.
        assert "secret_edge" not in text.replace("&#95;", "_") or where in ("report", "requests")
    assert CANARY not in step.log
    # What is shown: counts and the public ids.
    comment = published["comment"]
    assert "fail_to_pass: 0 of 2 passed" in comment
    assert "fail_to_pass failed: tests/test_public.py::test_public" in comment
    assert "1 hidden test" in comment
    [run] = job.fake.check_runs()
    assert run["conclusion"] == "failure"
    messages = [a["message"] for a in run["annotations"]]
    assert messages == ["tests/test_public.py::test_public failed"]


ADDED_TASK = """\
version: 1
type: bugfix
tests:
  command: python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: added
  pass_to_pass: baseline
  timeout: 120
"""
# The pull request's own test, whose id spells out the hidden test's source: pytest makes
# a parameter's id of its value when the module is collected, in the copy where the
# hidden tests are (issue 44: that id reached the report file the fork workflow uploads).
SPELLING = """\
import pathlib

import pytest

HIDDEN = pathlib.Path("tests/test_secret_edge.py")
SECRET = HIDDEN.read_text().replace("\\n", " ") if HIDDEN.exists() else "none"


@pytest.mark.parametrize("leak", [SECRET])
def test_added(leak):
    from calc import add

    assert add(2, 3) == 5
"""


def test_the_ids_of_the_tests_a_pull_request_adds_carry_nothing_of_the_hidden_ones(
    job: Job,
) -> None:
    base = {**BASE, ".repogym.yml": ADDED_TASK}
    head = {"src/calc.py": "def add(a, b):\n    return a + b\n", "tests/test_added.py": SPELLING}
    pull = job.open_pull(7, base=base, head=head)
    step = run_with_hidden_tests(job, pull)
    published = everything_published(job, step)
    for where, text in published.items():
        assert CANARY not in text, f"the hidden test's source in the {where}"
    assert CANARY not in step.log
    # What is shown: that the change passed, and how many tests it added.
    assert step.exit_code == 0, step.log
    assert "fail_to_pass: 1 of 1 passed" in published["comment"]
