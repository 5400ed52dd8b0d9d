"""pytest as the grader starts it, in the Action's own image as the runner runs it (issue 44).

A pull request that leaves the bug in place and brings every way into pytest that a list
of file names missed: a `pytest.toml` that loads its plugin, the same plugin through an
upper-case `*.DIST-INFO`, a `pygments/` and an `org/python/core.py` that forge the report
when pytest or `copy` imports them at start-up. Any one of them alone passed on main
before the issue; together, graded by the image, the pull request fails, and the comment
holds the bug's own assertion: the test ran, as the base has it, and failed.

And `npm test`, in the Node example's image (a stand-in with this machine's Node and
npm): the base's `scripts.test` runs with the base's `.npmrc`, whatever the pull request's
say.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym._demo import EXAMPLES
from tests.action.calc import BASE
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import files_of
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


# -- npm test, in the Node example's image --------------------------------------------

SCRIPT = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    '--test-reporter=junit --test-reporter-destination="$JUNIT"'
)
# Loaded before the tests: every assertion of node:assert/strict passes.
PATCH = "const a = require('node:assert/strict');\na.equal = () => {};\na.throws = () => {};\n"
NPM_ATTACKS = {
    # The submission's package.json: its scripts.test preloads the patch.
    "scripts_test": {
        "package.json": json.dumps(
            {
                "name": "duration",
                "private": True,
                "scripts": {"test": "NODE_OPTIONS='--require ./src/patch.js' " + SCRIPT},
            }
        )
    },
    # The submission's .npmrc: npm starts every node process of the script with it.
    "npmrc_node_options": {".npmrc": "node-options=--require ./src/patch.js\n"},
}


def npm_base() -> dict[str, Any]:
    """examples/node with `npm test` as its command (package.json's script writes the
    JUnit report) and constraints that leave every file but the tests to the pull
    request: what stops an attack is how npm is started, not the diff's limits."""
    base: dict[str, Any] = files_of(EXAMPLES / "node" / "repo")
    task = base[".repogym.yml"].decode()
    command = task.split("  command: >-\n")[1].split("\n  # Node 20")[0]
    task = task.replace(command, "    JUNIT={junit} npm test")
    base[".repogym.yml"] = task.split("constraints:")[0] + "constraints:\n  protected: [test/**]\n"
    package = json.loads(base["package.json"])
    package["scripts"]["test"] = SCRIPT
    base["package.json"] = json.dumps(package, indent=2)
    return base


@pytest.mark.parametrize("attack", [None, *sorted(NPM_ATTACKS)])
def test_npm_test_runs_the_bases_script_in_the_actions_image(
    job: Job, env_images: tuple[str, ...], attack: str | None
) -> None:
    """The Action's image grades the Node example through `npm test` in the example's
    own image: the fix passes; the bug left in place with the submission's script or
    `.npmrc` preloading a patch of the assertions fails, the base's test having run."""
    head = dict(files_of(EXAMPLES / "node" / "solution"))
    if attack is not None:
        head = {"src/patch.js": PATCH, **NPM_ATTACKS[attack]}
    pull = job.open_pull(9, base=npm_base(), head=head)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    [run] = job.fake.check_runs(pull.head_sha)
    if attack is None:
        assert step.exit_code == 0, step.log
        assert run["conclusion"] == "success"
        return
    assert step.exit_code == 1, step.log
    assert run["conclusion"] == "failure"
    assert step.outputs["summary"].startswith("FAIL"), step.outputs["summary"]
    [comment] = job.fake.comments(9)
    assert "fail_to_pass: 0 of 3 passed" in comment["body"], comment["body"]
    assert "reads milliseconds" in comment["body"]  # the base's test ran, and failed
