"""pytest as the grader starts it, in the Action's own image as the runner runs it (issue 44).

A pull request that leaves the bug in place and brings every way into pytest that a list
of file names missed: a `pytest.toml` that loads its plugin, the same plugin through an
upper-case `*.DIST-INFO`, a `pygments/` and an `org/python/core.py` that forge the report
when pytest or `copy` imports them at start-up. Any one of them alone passed on main
before the issue; together, graded by the image, the pull request fails, and the comment
holds the bug's own assertion: the test ran, as the base has it, and failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action.calc import BASE
from tests.action.fake_github import FakeGitHub
from tests.action.job import Job
from tests.action.runners import DockerAction
from tests.security._payloads import FLIP_CONFTEST

# Writes a report in which the task's test passed, and ends pytest before it writes one.
FORGE = """
import os, sys
for _i, _arg in enumerate(sys.argv):
    if _arg.startswith("--junitxml"):
        _path = _arg.split("=", 1)[1] if "=" in _arg else sys.argv[_i + 1]
        with open(_path, "w") as _out:
            _out.write('<testsuites><testsuite name="pytest" tests="1">'
                       '<testcase classname="tests.test_calc" name="test_add" '
                       'file="tests/test_calc.py"/></testsuite></testsuites>')
        os._exit(0)
"""
ATTACK = {
    "pytest.toml": '[pytest]\npythonpath = ["src"]\naddopts = ["-p", "evil"]\n',
    "evil.py": FLIP_CONFTEST,
    "evil-1.0.DIST-INFO/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
    "evil-1.0.DIST-INFO/entry_points.txt": "[pytest11]\nevil = evil\n",
    "pygments/__init__.py": FORGE,
    "org/__init__.py": "",
    "org/python/__init__.py": "",
    "org/python/core.py": FORGE,
}


@pytest.fixture
def job(tmp_path: Path, action_image: str) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake, DockerAction(action_image), checkout="v6")
        assert fake.violations == []


def test_every_way_into_pytest_a_list_missed_is_shut_in_the_actions_image(job: Job) -> None:
    pull = job.open_pull(7, base=BASE, head=ATTACK)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 1, step.log
    [run] = job.fake.check_runs()
    assert run["conclusion"] == "failure"
    [comment] = job.fake.comments(7)
    assert "assert 0 == 5" in comment["body"], comment["body"]
