"""The Action's own container confines the submission's commands by Landlock (issue 43).

The runner starts the Action's image with Docker's defaults: no namespace can be made in
it (no ``bwrap`` either), its cgroups are read-only, but the kernel's Landlock is there.
A pull request whose fix works only when its code can open what lies outside its copy,
on a task without ``environment``, graded by the image as the runner starts it: the
checkout of the base in ``/github/workspace``, and the file under ``/github/runner_temp``
where actions/checkout v6 persisted the token. Confined, it fails;
with ``REPOGYM_SEAL=off`` (a uid of its own, nothing else) the same pull request passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action.calc import BASE
from tests.action.fake_github import FakeGitHub
from tests.action.job import Job, Step
from tests.action.runners import DockerAction

# The fix, which adds only once it has read the base's checkout and found the runner's
# files (the token's own file the Action keeps from others' reading).
REACHING = """\
from pathlib import Path


def add(a, b):
    Path("/github/workspace/.repogym.yml").read_text()
    assert list(Path("/github/runner_temp").glob("git-credentials-*")), "no token's file"
    return a + b
"""


@pytest.fixture
def job(tmp_path: Path, action_image: str) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake, DockerAction(action_image), checkout="v6")
        assert fake.violations == []


def graded(job: Job, **env: str) -> Step:
    pull = job.open_pull(7, base=BASE, head={"src/calc.py": REACHING})
    return job.run("pull_request", job.event("pull_request.opened", pull), pull, env=env)


def test_a_fix_that_reads_outside_its_copy_fails_in_the_actions_container(job: Job) -> None:
    step = graded(job)
    assert "confined by Landlock, not sealed (bwrap is not installed" in step.log, step.log
    assert step.exit_code == 1, step.log
    [run] = job.fake.check_runs()
    assert run["conclusion"] == "failure"
    [comment] = job.fake.comments(7)
    assert "Permission denied: '/github/workspace/.repogym.yml'" in comment["body"]


def test_unconfined_the_same_fix_passes(job: Job) -> None:
    """The control: the file and the token are there for the taking without Landlock."""
    step = graded(job, REPOGYM_SEAL="off")
    assert "run unsealed (REPOGYM_SEAL=off" in step.log, step.log
    assert step.exit_code == 0, job.fake.comments(7)[0]["body"]
    [run] = job.fake.check_runs()
    assert run["conclusion"] == "success"
