"""Runner configuration from the submission (issue 9): a conftest.py, a plugin, an ini
file, a module that takes over the runner. What runs must be the base's configuration.

Most attacks are graded against a *loose* version of examples/bugfix, whose constraints
allow any file but the tests, so that what catches them is the runner configuration
being the base's, not `allowed_files`. The first two are graded against examples/bugfix
exactly as it ships.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, NODE_MODULES, Case

# A plugin module at the top of the tree, named by `-p`: the flip plugin, registered.
EVIL_PLUGIN = (
    p.FLIP_PLUGIN
    + "\n\ndef pytest_configure(config):\n"
    + ('    config.pluginmanager.register(_Flip(), "flip")\n')
)
# A module that pytest imports, shadowed: it forges the report and ends the process
# before pytest can write the real one.
TAKEOVER = p.FORGE_JUNIT + "\n\n_forge_junit()\nimport os\n\nos._exit(0)\n"


def test_src_conftest_on_the_shipped_bugfix_example(case: Case) -> None:
    # The one-file submission of the issue: PASS 1.000 on examples/bugfix itself.
    case.base()
    case.submit({"src/conftest.py": p.FLIP_CONFTEST})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_conftest_inside_the_package(case: Case) -> None:
    case.base()
    case.submit({"src/slugify/conftest.py": p.FLIP_CONFTEST})
    case.grade().check("fail_to_pass: 0 of 2 passed")


ATTACKS = {
    # A test module outside the test directories: pytest collects src/ too.
    "test_module_outside_tests": {"src/slugify/test_helpers.py": p.FLIP_BY_PATCH},
    "root_conftest": {"conftest.py": p.FLIP_CONFTEST},
    "pytest_ini_addopts": {
        "pytest.ini": "[pytest]\npythonpath = src\naddopts = -p evil\n",
        "evil.py": EVIL_PLUGIN,
    },
    "hidden_pytest_ini": {
        ".pytest.ini": "[pytest]\npythonpath = src\naddopts = -p evil\n",
        "evil.py": EVIL_PLUGIN,
    },
    "tox_ini": {
        "tox.ini": "[pytest]\npythonpath = src\naddopts = -p evil\n",
        "evil.py": EVIL_PLUGIN,
    },
    "setup_cfg": {
        "setup.cfg": "[tool:pytest]\npythonpath = src\naddopts = -p evil\n",
        "evil.py": EVIL_PLUGIN,
    },
    "pyproject_toml": {
        "pyproject.toml": (
            '[tool.pytest.ini_options]\npythonpath = ["src"]\naddopts = "-p evil"\n'
        ),
        "evil.py": EVIL_PLUGIN,
    },
    # `python -m pytest` finds the top of the tree first on sys.path.
    "top_level_pytest_py": {"pytest.py": TAKEOVER},
    # pytest imports `py` (its shim) at start-up, from the top of the tree first.
    "top_level_py_py": {"py.py": TAKEOVER},
    # pdb imports cmd after `pythonpath = src` is on sys.path.
    "cmd_on_pythonpath": {"src/cmd.py": TAKEOVER},
    # An installed-looking distribution at the top of the tree: pytest loads the
    # `pytest11` entry points of every distribution on sys.path.
    "dist_info_entry_point": {
        "evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        "evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evil\n",
        "evil.py": EVIL_PLUGIN,
    },
}
# pytest reads the first of pytest.ini, .pytest.ini, pyproject.toml, tox.ini, setup.cfg
# that has its section: the others need the base's pytest.ini out of the way.
REPLACES_PYTEST_INI = {"hidden_pytest_ini", "tox_ini", "setup_cfg", "pyproject_toml"}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_runner_configuration_is_the_bases(case: Case, attack: str) -> None:
    case.base(task=LOOSE_TASK)
    delete = ("pytest.ini",) if attack in REPLACES_PYTEST_INI else ()
    case.submit(ATTACKS[attack], delete=delete)
    case.grade().check("fail_to_pass: 0 of 2 passed")


# -- node runners ----------------------------------------------------------------------

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
BROKEN_DOUBLE = "exports.double = (x) => x + x * 0;\n"
# Loaded before the tests: every strictEqual passes.
ASSERT_PATCH = "require('node:assert').strictEqual = () => {};\n"
# jest gives each test file its own globals: wrap `test` so a failure is swallowed.
JEST_PATCH = (
    "const real = globalThis.test;\n"
    "globalThis.test = (name, fn) => real(name, () => { try { fn(); } catch (e) {} });\n"
)

PATCH = "./src/patch.js"
NODE_ATTACKS = {
    "mocharc_yml": ("mocha", {".mocharc.yml": "require: ./src/patch.js\n"}),
    "package_json_mocha_key": (
        "mocha",
        {"package.json": json.dumps({"name": "x", "mocha": {"require": "./src/patch.js"}})},
    ),
    "jest_config_js": (
        "jest",
        {"jest.config.js": "module.exports = { setupFilesAfterEnv: ['./src/patch.js'] };\n"},
    ),
    "package_json_jest_key": (
        "jest",
        {"package.json": json.dumps({"name": "x", "jest": {"setupFilesAfterEnv": [PATCH]}})},
    ),
}


def node_base(case: Case, runner: str) -> None:
    """The base of a node case (`mocha` or `jest`): a broken `double` and its test."""
    test_file = "test/double.spec.js" if runner == "mocha" else "test/double.test.js"
    case.base(
        task=MOCHA_TASK if runner == "mocha" else JEST_TASK,
        files={
            test_file: MOCHA_TEST if runner == "mocha" else JEST_TEST,
            "src/double.js": BROKEN_DOUBLE,
            "package.json": json.dumps({"name": "x", "private": True}),
        },
    )


@needs_node
@pytest.mark.parametrize("attack", sorted(NODE_ATTACKS))
def test_node_runner_configuration_is_the_bases(case: Case, attack: str) -> None:
    runner, files = NODE_ATTACKS[attack]
    node_base(case, runner)
    patch = ASSERT_PATCH if runner == "mocha" else JEST_PATCH
    case.submit({**files, "src/patch.js": patch})
    case.grade().check("fail_to_pass: 0 of 1 passed")
