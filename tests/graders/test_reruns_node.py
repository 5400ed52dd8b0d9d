"""Failing tests run again under the Node runners (issue 47), end to end with the real
``node --test``, jest and mocha: the grader adds each runner's filter by name to the task's
command (repogym/graders/tests/chosen.py), so that a rerun runs the failing ids and not
the suite, and each test's class comes out as it does for pytest."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import repogym
from repogym.graders.tests import chosen
from repogym.graders.tests import reruns as _reruns
from repogym.graders.tests.run import run_tests
from repogym.junit import Outcome
from repogym.models import CommandResult
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
    # node's filter names the describe block too (a subtest runs only with its parent),
    # which runs the block's other tests; jest's and mocha's match the full name.
    assert ran[zero] is Outcome.FAILED and (runner == "node" or len(ran) == 1), run.run
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
            "node --test --test-name-pattern='^(?:a|b\\.c)$' --test-reporter=junit | cat",
        ),
        ("npx mocha 'test/*.js'", "npx mocha --grep '^(?:a b\\.c)$' 'test/*.js'"),
        (
            "go test -v ./... 2>&1 | go-junit-report > {junit}",
            "export GOFLAGS=\"${GOFLAGS:+$GOFLAGS }\"'-run=^(a::b.c)$'\n"
            "go test -v ./... 2>&1 | go-junit-report > {junit}",
        ),
        ("make test", None),
        ("npm test; cp reports/jest-junit.xml {junit}", None),
    ],
)
def test_which_commands_the_grader_narrows_and_how(command: str, narrowed: str | None) -> None:
    made = chosen.rule(command)
    assert (made(command, ["t/x.test.js::a::b.c"]) if made else None) == narrowed


SUBTESTS = """\
const test = require('node:test');
const assert = require('node:assert');
const { double } = require('../src/double');
test('math', async (t) => {
  await t.test('doubles zero', () => { assert.strictEqual(double(0), 0); });
  await t.test('doubles one', () => { assert.strictEqual(double(1), 2); });
});
"""


def test_a_broken_node_subtest_is_run_again_with_its_parent_and_stays_broken(
    tmp_path: Path,
) -> None:
    """A subtest runs only when its parent test runs: the filter names every part of the
    id. Had it missed (the red team's case), the test would still be broken, not forgiven
    as flaky before the change: a run that did not record it is no evidence."""
    command = "node --test --test-reporter=junit --test-reporter-destination={junit} test/"
    task = (
        f'version: 1\ntype: bugfix\ntests:\n  command: "{command}"\n'
        "  fail_to_pass: ['math::doubles one']\n  pass_to_pass: ['math::doubles zero']\n"
    )
    repo = Repo(tmp_path / "repo")
    files = {".repogym.yml": task, "src/double.js": STEADY, "test/math.test.js": SUBTESTS}
    repo.commit("base", files)
    repo.branch("pr")
    repo.write({"src/double.js": BROKEN})
    rerun = grade(repo).details["reruns"]["tests"]
    assert rerun == {
        "math::doubles zero": {"class": _reruns.BROKEN, "runs": "head 0/3 passed, base 2/2"}
    }


@dataclass
class Commands:
    """What a grade tells whoever watches it (the Action's log) of its commands."""

    said: list[str] = field(default_factory=list)

    def grader_started(self, name: str) -> None: ...

    def grader_finished(self, component: object, seconds: float) -> None: ...

    def command_started(self, command: str, cwd: Path) -> None:
        self.said.append(command)

    def command_finished(self, result: CommandResult) -> None:
        self.said.append(result.command)


def test_a_hidden_test_run_again_is_not_named_in_the_log(tmp_path: Path) -> None:
    """The name filter holds the failing tests' names; the log shows the task's command
    and how many ids, so a hidden test's name stays hidden (issue 47's red team)."""
    command = "node --test --test-reporter=junit --test-reporter-destination={junit} test/"
    task = (
        f'version: 1\ntype: bugfix\ntests:\n  command: "{command}"\n'
        "  hidden: .repogym/hidden\n  fail_to_pass: ['secret::keeps the quiet sum']\n"
    )
    secret = SUBTESTS.replace("'math'", "'secret'").replace(
        "'doubles zero'", "'keeps the quiet sum'"
    )
    repo = Repo(tmp_path / "repo")
    files = {
        ".repogym.yml": task,
        "src/double.js": BROKEN,
        ".repogym/hidden/test/s.test.js": secret,
    }
    repo.commit("base", files)
    repo.branch("pr")
    repo.write({"README": "nothing fixed\n"})
    commands = Commands()
    graded = repogym.grade(repo.root, base="main", progress=commands)
    (tests,) = [c for c in graded.result.components if c.name == "tests"]
    assert tests.details["reruns"]["hidden"] == {"failing": 1}
    assert any("# run again: 1 chosen test" in c for c in commands.said), commands.said
    assert not any("quiet" in c for c in commands.said), commands.said
