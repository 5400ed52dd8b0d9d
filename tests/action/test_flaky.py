"""A test the pull request makes flaky (issue 47), through the Action end to end: the grade
fails, and the comment, the check run and the job summary each say which test was run
again, its class and its runs at each side."""

from __future__ import annotations

from repogym._demo import EXAMPLES
from tests.action.job import Job
from tests.action.published import assert_published, check_runs, example

# The reference fix, wrong the first time slugify() runs in a copy of the tree (it leaves
# a file there): the first test to run, a regression test, fails; run again in a copy of
# its own, it fails once more, then passes.
WARM = (
    '    if not os.path.exists(".warm"):\n        open(".warm", "w").close()\n        return ""\n'
)


def test_a_test_made_flaky_fails_and_each_place_says_so(job: Job) -> None:
    base, solution = example("bugfix")
    fixed = (EXAMPLES / "bugfix/solution/src/slugify/core.py").read_text()
    body = fixed.index("    decomposed = ")
    flaky = "import os\n" + fixed[:body] + WARM + fixed[body:]
    pull = job.open_pull(7, base=base, head={**solution, "src/slugify/core.py": flaky})
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert_published(job, step, passed=False, head=pull.head_sha)
    row = (
        "| tests/test_slugify.py::test_ascii | ❌ made flaky by the change "
        "| head 1/3 passed, base 2/2 |"
    )
    [comment] = job.fake.comments(7)
    [run] = check_runs(job, pull.head_sha)
    output = run["output"]
    assert isinstance(output, dict)
    for shown in (comment["body"], output["text"], step.summary):
        assert "| Run again | Class | Runs |" in shown
        assert row in shown, shown
    assert "run again: 1 failing test: 1 made flaky by the change" in comment["body"]
