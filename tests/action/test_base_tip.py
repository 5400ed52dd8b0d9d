"""The Action grades with the base tip's tests, whatever the pull request's fork point
(issue 19): a pull request on a real origin, branched from an old commit of ``main`` whose
test was still lenient, checked out as actions/checkout checks it out (the test merge), and
graded after ``main`` made the test strict. The diff stays against the merge base."""

from __future__ import annotations

import pytest

from tests.action.gitrepo import Pull
from tests.action.job import Job
from tests.action.published import assert_published, example
from tests.security._base_tip import LENIENT_TEST, SHIPPED_TEST, SLOPPY_CORE, UP_TO_DATE
from tests.security._payloads import FIXED_CORE


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


def open_from(job: Job, number: int, branch: str, fork_point: str, core: str) -> None:
    """A branch from ``fork_point`` that writes ``core``; its pull request opened later."""
    job.origin.commit(branch, {"src/slugify/core.py": core}, message=branch, start=fork_point)


def mirrored(job: Job, number: int, branch: str) -> Pull:
    return job.mirror_pull(number, branch=branch)


def test_a_pull_request_from_before_the_test_was_made_strict(job: Job) -> None:
    base, _ = example("bugfix")
    fork_point = job.origin.commit(
        "main", {**base, "tests/test_slugify.py": LENIENT_TEST}, message="lenient test"
    )
    open_from(job, 1, "sloppy", fork_point, SLOPPY_CORE)
    open_from(job, 2, "honest", fork_point, FIXED_CORE)
    tip = job.origin.commit("main", {"tests/test_slugify.py": SHIPPED_TEST}, message="strict")
    sloppy, honest = mirrored(job, 1, "sloppy"), mirrored(job, 2, "honest")
    assert sloppy.base_sha == tip

    step = job.run("pull_request", job.event("pull_request.opened", sloppy), sloppy)
    assert_published(job, step, passed=False, head=sloppy.head_sha)
    assert step.report is not None
    assert step.report["merge_base"]["sha"] == fork_point
    [tests] = [c for c in step.report["components"] if c["name"] == "tests"]
    assert tests["details"]["tests_from"] == tip
    assert tests["details"]["changed_on_base"] == ["tests/test_slugify.py"]
    [comment] = job.fake.comments(1)
    assert UP_TO_DATE in comment["body"] and "tests/test_slugify.py" in comment["body"]

    # The real fix from the same fork point passes the strict test; the constraints
    # judged its diff against the merge base, which the strict test is not part of.
    step = job.run("pull_request", job.event("pull_request.opened", honest), honest)
    assert_published(job, step, passed=True, head=honest.head_sha)
