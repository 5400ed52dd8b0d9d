"""Node test runners in the attacks: when they can run, and a base that uses one."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.security._harness import NODE_MODULES, Case

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not NODE_MODULES.is_dir(),
    reason="needs Node.js and `npm ci --prefix tests/runners`",
)


MOCHA_TEST = """\
const assert = require('node:assert');
const { double } = require('../src/double');

describe('double', () => {
  it('doubles two', () => { assert.strictEqual(double(2), 4); });
  it('doubles zero', () => { assert.strictEqual(double(0), 0); });
});
"""


MOCHA_TASK = f"""\
version: 1
type: bugfix
tests:
  command: |-
    node {NODE_MODULES}/mocha/bin/mocha.js --reporter {NODE_MODULES}/mocha-junit-reporter --reporter-options mochaFile={{junit}},jenkinsMode=true,suiteTitleSeparatedBy=:: 'test/*.spec.js'
  fail_to_pass: ['test/double.spec.js::double::doubles two']
  pass_to_pass: ['test/double.spec.js::double::doubles zero']
  timeout: 120
constraints:
  protected: [test/**]
"""  # noqa: E501


JEST_TEST = MOCHA_TEST.replace("describe(", "describe(").replace("it(", "test(")


JEST_TASK = f"""\
version: 1
type: bugfix
tests:
  command: |-
    JEST_JUNIT_OUTPUT_FILE={{junit}} JEST_JUNIT_ADD_FILE_ATTRIBUTE=true JEST_JUNIT_SUITE_NAME='{{filepath}}' JEST_JUNIT_CLASSNAME='{{classname}}' JEST_JUNIT_TITLE='{{title}}' JEST_JUNIT_ANCESTOR_SEPARATOR='::' node {NODE_MODULES}/jest/bin/jest.js --ci --rootDir . --reporters=default --reporters={NODE_MODULES}/jest-junit
  fail_to_pass: ['test/double.test.js::double::doubles two']
  pass_to_pass: ['test/double.test.js::double::doubles zero']
  timeout: 120
constraints:
  protected: [test/**]
"""  # noqa: E501


VITEST_TASK = f"""\
version: 1
type: bugfix
tests:
  command: |-
    node {NODE_MODULES}/vitest/vitest.mjs run --globals --reporter=default --reporter=junit --outputFile.junit={{junit}}
  fail_to_pass: ['test/double.test.js::double > doubles two']
  pass_to_pass: ['test/double.test.js::double > doubles zero']
  timeout: 120
constraints:
  protected: [test/**]
"""  # noqa: E501
# vitest's globals, as an ES module.
VITEST_TEST = MOCHA_TEST.replace(
    "const assert = require('node:assert');\nconst { double } = require('../src/double');",
    "import assert from 'node:assert';\nimport { double } from '../src/double.mjs';",
).replace("it(", "test(")


BROKEN_DOUBLE = "exports.double = (x) => x + x * 0;\n"


def node_base(case: Case, runner: str) -> None:
    """The base of a node case (`mocha`, `jest` or `vitest`): a broken `double` and its
    test."""
    if runner == "vitest":
        files = {
            "test/double.test.js": VITEST_TEST,
            "src/double.mjs": "export "
            + BROKEN_DOUBLE.replace("exports.double =", "const double ="),
        }
    else:
        test_file = "test/double.spec.js" if runner == "mocha" else "test/double.test.js"
        files = {
            test_file: MOCHA_TEST if runner == "mocha" else JEST_TEST,
            "src/double.js": BROKEN_DOUBLE,
        }
    case.base(
        task={"mocha": MOCHA_TASK, "jest": JEST_TASK, "vitest": VITEST_TASK}[runner],
        files={**files, "package.json": json.dumps({"name": "x", "private": True})},
    )
