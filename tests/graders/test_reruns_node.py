"""Failing tests run again under the Node runners (issue 47), end to end with the real
``node --test``, jest and mocha: the grader adds each runner's filter by name to the task's
command (repogym/graders/tests/chosen.py), so that a rerun runs the failing ids and not
the suite, and each test's class comes out as it does for pytest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repogym.graders.tests import chosen
from repogym.graders.tests import reruns as _reruns
from repogym.graders.tests.run import run_tests
from repogym.junit import Outcome
from repogym.sandbox.seal import SHOW
from repogym.workspace import Workspace
from tests.graders.projects import grade
from tests.support.repo import Repo

MODULES = Path(__file__).resolve().parents[1] / "runners" / "node_modules"
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not MODULES.is_dir(),
    reason="needs Node.js and `npm ci --prefix tests/runners`",
)

SPEC = """\
const assert = require('node:assert');
const { double } = require('../src/double');
{imports}
describe('double', () => {
  {it}('doubles two (a pair)', () => { assert.strictEqual(double(2), 4); });
  {it}('doubles zero', () => { assert.strictEqual(double(0), 0); });
  {it}('doubles one', () => { assert.strictEqual(double(1), 2); });
});
"""
# Wrong for 0 the first time it runs in a copy of the tree: it leaves a mark there.
WOBBLY = """\
const fs = require('node:fs');
exports.double = (x) => {
  if (x === 0 && !fs.existsSync('.ran')) { fs.writeFileSync('.ran', ''); return 1; }
  return x * 2;
};
"""
STEADY = "exports.double = (x) => x * 2;\n"
BROKEN = "exports.double = (x) => (x === 0 ? 1 : x * 2);\n"

RUNNERS = {
    "node": (
        "node --test --test-reporter=junit --test-reporter-destination={junit} test/",
        "test/double.test.js",
        "const { describe, it } = require('node:test');",
        "it",
        "double::",
    ),
    "jest": (
        "JEST_JUNIT_OUTPUT_FILE={junit} JEST_JUNIT_ADD_FILE_ATTRIBUTE=true "
        "JEST_JUNIT_SUITE_NAME='{filepath}' JEST_JUNIT_CLASSNAME='{classname}' "
        "JEST_JUNIT_TITLE='{title}' JEST_JUNIT_ANCESTOR_SEPARATOR='::' "
        f"node {MODULES}/jest/bin/jest.js --ci --rootDir . --reporters=default "
        f"--reporters={MODULES}/jest-junit",
        "test/double.test.js",
        "",
        "test",
        "test/double.test.js::double::",
    ),
    "mocha": (
        f"node {MODULES}/mocha/bin/mocha.js --reporter {MODULES}/mocha-junit-reporter "
        "--reporter-options mochaFile={junit},jenkinsMode=true,suiteTitleSeparatedBy=:: "
        "'test/*.spec.js'",
        "test/double.spec.js",
        "",
        "it",
        "test/double.spec.js::double::",
    ),
}


def _project(repo: Repo, runner: str) -> str:
    """The base, on a checked-out branch ``pr``; the id prefix of its tests."""
    command, path, imports, it, prefix = RUNNERS[runner]
    task = (
        f'version: 1\ntype: bugfix\ntests:\n  command: "{command}"\n'
        f"  fail_to_pass: ['{prefix}doubles one']\n"
        f"  pass_to_pass: ['{prefix}doubles zero', '{prefix}doubles two (a pair)']\n"
        "  timeout: 120\n"
    )
    spec = SPEC.replace("{imports}", imports).replace("{it}", it)
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            ".gitignore": ".ran\n",
            "package.json": '{"name": "double", "private": true}\n',
            "src/double.js": STEADY,
            path: spec,
        },
    )
    repo.branch("pr")
    return prefix


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_a_rerun_runs_the_failing_ids_alone_and_tells_broken_from_made_flaky(
    tmp_path: Path, runner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runners are this checkout's: shown to a sealed command as an operator shows a
    # directory (docs/security.md).
    monkeypatch.setenv(SHOW, str(MODULES))
    repo = Repo(tmp_path / "repo")
    prefix = _project(repo, runner)
    zero = f"{prefix}doubles zero"
    repo.write({"src/double.js": BROKEN})
    component = grade(repo)
    assert not component.passed
    rerun = component.details["reruns"]["tests"]
    assert rerun == {zero: {"class": _reruns.BROKEN, "runs": "head 0/3 passed, base 2/2"}}
    # A run of the one id: the others do not run (node reports them skipped).
    workspace = Workspace.open(repo.root, base="main")
    assert workspace.task.tests is not None
    (run,) = run_tests(workspace, workspace.task.tests, workspace.command_runner(), select=(zero,))
    ran = {i: r.outcome for i, r in run.results.items() if r.outcome is not Outcome.SKIPPED}
    assert ran == {zero: Outcome.FAILED}, run.run
    repo.write({"src/double.js": WOBBLY})
    rerun = grade(repo).details["reruns"]["tests"]
    assert rerun == {zero: {"class": _reruns.MADE_FLAKY, "runs": "head 1/3 passed, base 2/2"}}


@pytest.mark.parametrize(
    ("command", "narrowed"),
    [
        (
            "npx jest --ci",
            "npx jest --testNamePattern='^(?:a b\\.c)$' --ci",
        ),
        (
            "node --test --test-reporter=junit | cat",
            "node --test --test-name-pattern='^(?:b\\.c)$' --test-reporter=junit | cat",
        ),
        ("npx mocha 'test/*.js'", "npx mocha --grep '^(?:a b\\.c)$' 'test/*.js'"),
        (
            "go test -v ./... 2>&1 | go-junit-report > {junit}",
            "export GOFLAGS=\"${GOFLAGS:+$GOFLAGS }\"'-run=^(b.c)$'\n"
            "go test -v ./... 2>&1 | go-junit-report > {junit}",
        ),
        ("make test", None),
        ("npm test; cp reports/jest-junit.xml {junit}", None),
    ],
)
def test_which_commands_the_grader_narrows_and_how(command: str, narrowed: str | None) -> None:
    made = chosen.rule(command)
    assert (made(command, ["t/x.test.js::a::b.c"]) if made else None) == narrowed
