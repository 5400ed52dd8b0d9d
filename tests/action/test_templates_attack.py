"""The rubric is the base's, templates included (issue 19): ``repogym-action`` end to end
on a real repository whose pull request attacks the templates the verdict is written by.

The pull request edits a template of the ``template`` directory to print a forged
"passed", or commits links to ``/proc/self/environ`` and ``.git/config`` and includes them;
a template of the base's divides by zero, recurses, asks for a terabyte or never ends. The
templates are read at the base commit (as the task is), through git: a pull request's copy
is never read, a link is refused wherever it comes from, and whatever a template does, the
check run is completed, one ``::error::`` line says what failed and nothing has the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym._demo import EXAMPLES
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Files, Pull, Symlink, files_of
from tests.action.job import Job, Step
from tests.action.runners import DockerAction, Layout, Process

TEMPLATES = ".github/repogym"
# A template of the base's: the built-in pieces, and a line of its own to be recognised by.
BASE_COMMENT = (
    '{% import "_macros.md.j2" as m with context %}\n'
    "THE BASE'S TEMPLATE\n"
    "{{ m.headline(report) -}}\n"
    "{{ m.table(report) -}}\n"
)
FORGED = "### ✅ repogym: passed, score 1.000\n\nAll checks passed.\n"


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


@pytest.fixture
def process_job(tmp_path: Path) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake, Process())
        assert fake.violations == []


def unsolved(base_templates: Files, head: Files) -> tuple[Files, Files]:
    """The bugfix example, not fixed by the pull request (its grade fails), with
    ``base_templates`` in the base's template directory and ``head`` in the change."""
    base = {**files_of(EXAMPLES / "bugfix" / "repo"), **base_templates}
    return base, head


def errors(step: Step) -> list[str]:
    return [line for line in step.log.splitlines() if line.startswith("::error")]


def published(job: Job, step: Step) -> str:
    """Everything the run posted or wrote where others read it."""
    posted = json.dumps([job.fake.comments(n) for n in job.fake.state.pulls])
    posted += json.dumps(job.fake.check_runs()) + json.dumps([r.body for r in job.fake.requests])
    return posted + step.summary + json.dumps(step.outputs) + json.dumps(step.report)


def assert_no_token(job: Job, step: Step) -> None:
    assert job.fake.token not in published(job, step)
    # The token of actions/checkout's extraheader, base64 in .git/config, is the same one.
    assert "x-access-token" not in published(job, step)
    assert [line for line in step.log.splitlines() if job.fake.token in line] == [
        f"::add-mask::{job.fake.token}"
    ]


def the_check(job: Job, pull: Pull) -> dict[str, object]:
    [run] = [r for r in job.fake.check_runs(pull.head_sha) if r["name"] == "repogym"]
    return run


def grade(job: Job, pull: Pull, inputs: dict[str, str] | None = None, **kwargs: object) -> Step:
    given = {"template": TEMPLATES, **(inputs or {})}
    return job.run(
        "pull_request",
        job.event("pull_request.opened", pull),
        pull,
        given,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_pull_request_that_rewrites_a_template_is_shown_with_the_bases(job: Job) -> None:
    base, head = unsolved(
        {f"{TEMPLATES}/comment.md.j2": BASE_COMMENT},
        {f"{TEMPLATES}/comment.md.j2": FORGED, f"{TEMPLATES}/check_summary.md.j2": FORGED},
    )
    pull = job.open_pull(7, base=base, head=head)
    step = grade(job, pull)
    assert step.exit_code == 1, step.log
    [comment] = job.fake.comments(7)
    assert "THE BASE'S TEMPLATE" in comment["body"]
    assert "repogym: not passed" in comment["body"]
    assert "All checks passed" not in published(job, step)
    run = the_check(job, pull)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert "repogym: not passed" in run["output"]["summary"]  # type: ignore[index]
    assert_no_token(job, step)


def test_a_template_directory_only_the_pull_request_has_is_refused(job: Job) -> None:
    """The pull request adds the directory the workflow names, with links to the job's
    environment and to the checkout's .git/config (where actions/checkout keeps the
    token) and a comment that includes them."""
    links = {
        f"{TEMPLATES}/env.md.j2": Symlink("/proc/self/environ"),
        f"{TEMPLATES}/git.md.j2": Symlink("../../.git/config"),
        f"{TEMPLATES}/comment.md.j2": '{% include "env.md.j2" %}\n{% include "git.md.j2" %}\n',
    }
    base, head = unsolved({}, links)
    pull = job.open_pull(8, base=base, head=head)
    step = grade(job, pull)
    assert step.exit_code == 2, step.log
    assert errors(step) == [
        f"::error::input `template`: {TEMPLATES!r} is not a directory at the base (main) and "
        "the pull request's commits have it: a pull request cannot change the templates its "
        "verdict is written by; commit the templates on the base branch"
    ]
    run = the_check(job, pull)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    [comment] = job.fake.comments(8)
    assert "could not grade" in comment["body"]
    assert_no_token(job, step)


def test_a_link_in_the_bases_template_directory_is_refused(job: Job) -> None:
    base, head = unsolved(
        {
            f"{TEMPLATES}/comment.md.j2": '{% include "env.md.j2" %}\n',
            f"{TEMPLATES}/env.md.j2": Symlink("/proc/self/environ"),
        },
        {},
    )
    pull = job.open_pull(9, base=base, head=head)
    step = grade(job, pull)
    assert step.exit_code == 2, step.log
    assert errors(step) == [
        f"::error::input `template`: {TEMPLATES}/env.md.j2 at main is a symbolic link; "
        "commit the template itself there"
    ]
    assert the_check(job, pull)["conclusion"] == "failure"
    assert_no_token(job, step)


def made_by_an_earlier_step(files: Files) -> object:
    """What a step before the Action does: templates written into the workspace, in a
    directory no commit has."""

    def write(layout: Layout) -> None:
        for name, content in files.items():
            path = layout.workspace / "ci-templates" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Symlink):
                path.symlink_to(content.target)
            else:
                assert isinstance(content, str)
                path.write_text(content)

    return write


def test_a_directory_an_earlier_step_made_is_read_from_the_workspace(process_job: Job) -> None:
    job = process_job
    base, head = unsolved({}, {})
    pull = job.open_pull(10, base=base, head=head)
    step = grade(
        job,
        pull,
        {"template": "ci-templates"},
        before=made_by_an_earlier_step({"comment.md.j2": BASE_COMMENT}),
    )
    assert step.exit_code == 1, step.log
    [comment] = job.fake.comments(10)
    assert "THE BASE'S TEMPLATE" in comment["body"]


def test_a_link_in_a_directory_an_earlier_step_made_is_refused(process_job: Job) -> None:
    job = process_job
    base, head = unsolved({}, {})
    pull = job.open_pull(11, base=base, head=head)
    step = grade(
        job,
        pull,
        {"template": "ci-templates"},
        before=made_by_an_earlier_step(
            {
                "comment.md.j2": '{% include "env.md.j2" %}\n',
                "env.md.j2": Symlink("/proc/self/environ"),
            }
        ),
    )
    assert step.exit_code == 2, step.log
    [line] = errors(step)
    assert line.startswith("::error::input `template`: ci-templates/env.md.j2 is a symbolic link")
    assert the_check(job, pull)["conclusion"] == "failure"
    assert_no_token(job, step)


def test_the_pull_request_adding_to_a_directory_an_earlier_step_made_is_refused(
    process_job: Job,
) -> None:
    job = process_job
    base, head = unsolved({}, {"ci-templates/comment.md.j2": FORGED})
    pull = job.open_pull(12, base=base, head=head)
    step = grade(
        job,
        pull,
        {"template": "ci-templates"},
        before=made_by_an_earlier_step({"check_text.md.j2": BASE_COMMENT}),
    )
    assert step.exit_code == 2, step.log
    [line] = errors(step)
    assert "the pull request's commits have it" in line
    assert "All checks passed" not in published(job, step)


def test_a_template_directory_reached_through_a_link_of_the_pull_request_is_refused(
    job: Job,
) -> None:
    """`template: shared/templates`, which no commit has at that path: the pull request
    commits `shared -> elsewhere` and `elsewhere/templates/`. Git's tree has nothing at
    `shared/templates` (it does not look through links); the workspace's directory does."""
    base, head = unsolved(
        {}, {"shared": Symlink("elsewhere"), "elsewhere/templates/comment.md.j2": FORGED}
    )
    pull = job.open_pull(13, base=base, head=head)
    step = grade(job, pull, {"template": "shared/templates"})
    assert step.exit_code == 2, step.log
    [line] = errors(step)
    assert "'shared/templates' is not a directory at the base" in line, line
    assert "the pull request's commits have it" in line, line
    assert "All checks passed" not in published(job, step)
    assert the_check(job, pull)["conclusion"] == "failure"


# A template of the base's that fails, and how its failure reads in the one ::error:: line.
FAILING = {
    "a division by zero": ("{{ 1 // 0 }}", "ZeroDivisionError: integer division or modulo by zero"),
    "endless recursion": (
        "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
        "RecursionError: maximum recursion depth exceeded",
    ),
    "a terabyte": ('{{ "x" * 2 ** 40 }}', "MemoryError"),
    "a loop that never ends": (
        "{% for i in range(99999) %}{% for j in range(99999) %}{% for k in range(99999) %}"
        "{% endfor %}{% endfor %}{% endfor %}",
        "did not finish in 15 s",
    ),
}


@pytest.mark.parametrize("case", list(FAILING))
def test_a_template_that_fails_still_completes_the_check_run(process_job: Job, case: str) -> None:
    job = process_job
    source, said = FAILING[case]
    base, head = unsolved({f"{TEMPLATES}/check_text.md.j2": source}, {})
    pull = job.open_pull(13, base=base, head=head)
    step = grade(job, pull)
    assert step.exit_code == 2, step.log
    assert "Traceback" not in step.log
    [line] = errors(step)
    assert line.startswith("::error::template check_text.md.j2: ") and said in line, line
    run = the_check(job, pull)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert said in run["output"]["summary"]  # type: ignore[index]
    # The built-in templates wrote what was posted.
    [comment] = job.fake.comments(13)
    assert "could not grade" in comment["body"]
    assert "could not grade" in step.summary
    assert step.report is not None and said in step.report["error"]["message"]


def test_a_template_that_never_ends_in_the_container_completes_the_check_run(
    tmp_path: Path, action_image: str
) -> None:
    with FakeGitHub() as fake:
        job = Job(tmp_path, fake, DockerAction(action_image))
        source, said = FAILING["a loop that never ends"]
        base, head = unsolved({f"{TEMPLATES}/comment.md.j2": source}, {})
        pull = job.open_pull(14, base=base, head=head)
        step = grade(job, pull)
        assert step.exit_code == 2, step.log
        [line] = errors(step)
        assert line.startswith("::error::template comment.md.j2: ") and said in line, line
        assert the_check(job, pull)["conclusion"] == "failure"
        assert_no_token(job, step)
        assert fake.violations == []


def test_an_error_nothing_else_catches_still_completes_the_check_run(process_job: Job) -> None:
    """Whatever escapes on the way out, the check run this run opened is completed: here
    GitHub answers the check run's completion with a body that is not JSON, which the API
    client raises as no API error."""
    job = process_job
    job.fake.fail("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}", (200, {}, "{broken"))
    base, head = unsolved({}, {})
    pull = job.open_pull(15, base=base, head=head)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 3, step.log
    [line] = errors(step)
    assert line.startswith("::error::repogym-action failed: JSONDecodeError: "), line
    run = the_check(job, pull)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert "repogym-action stopped before it finished" in run["output"]["summary"]  # type: ignore[index]
    assert "the check run is completed as failure" in step.log
