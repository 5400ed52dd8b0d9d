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
from tests.security._node import (
    BROKEN_DOUBLE,
    MOCHA_TASK,
    MOCHA_TEST,
    needs_node,
    node_base,
)

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
    # Issue 44: what the list of file names forgot. pytest 9 reads pytest.toml and
    # .pytest.toml before every other configuration file.
    "pytest_toml": {
        "pytest.toml": '[pytest]\npythonpath = ["src"]\naddopts = ["-p", "evil"]\n',
        "evil.py": EVIL_PLUGIN,
    },
    "hidden_pytest_toml": {
        ".pytest.toml": '[pytest]\npythonpath = ["src"]\naddopts = ["-p", "evil"]\n',
        "evil.py": EVIL_PLUGIN,
    },
    # The same distribution, its directory's suffix in upper case: importlib.metadata
    # finds it all the same.
    "upper_case_dist_info": {
        "evil-1.0.DIST-INFO/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        "evil-1.0.DIST-INFO/entry_points.txt": "[pytest11]\nevil = evil\n",
        "evil.py": EVIL_PLUGIN,
    },
    # Packages the runner imports at start-up that are neither its own nor the standard
    # library's: pygments (pytest's highlighting), org.python.core (tried by `copy`).
    "top_level_pygments": {"pygments/__init__.py": TAKEOVER},
    "org_python_core": {
        "org/__init__.py": "",
        "org/python/__init__.py": "",
        "org/python/core.py": TAKEOVER,
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
    # vitest reads vitest.config.*, and vite.config.* where there is none (issue 44).
    "vitest_config_mjs": (
        "vitest",
        {"vitest.config.mjs": "export default { test: { setupFiles: ['./src/patch.js'] } };\n"},
    ),
    "vite_config_js": (
        "vitest",
        {"vite.config.js": "export default { test: { setupFiles: ['./src/patch.js'] } };\n"},
    ),
    "vitest_workspace_js": (
        "vitest",
        {
            "vitest.workspace.js": (
                "export default [{ test: { globals: true, include: ['test/**'], "
                "setupFiles: ['./src/patch.js'] } }];\n"
            )
        },
    ),
}


@needs_node
@pytest.mark.parametrize("attack", sorted(NODE_ATTACKS))
def test_node_runner_configuration_is_the_bases(case: Case, attack: str) -> None:
    runner, files = NODE_ATTACKS[attack]
    node_base(case, runner)
    patch = ASSERT_PATCH if runner == "mocha" else JEST_PATCH
    case.submit({**files, "src/patch.js": patch})
    case.grade().check("fail_to_pass: 0 of 1 passed")


# -- npm test (issue 44) ---------------------------------------------------------------

NPM_SCRIPT = (
    f"node {NODE_MODULES}/mocha/bin/mocha.js --reporter {NODE_MODULES}/mocha-junit-reporter "
    "--reporter-options jenkinsMode=true,suiteTitleSeparatedBy=:: 'test/*.spec.js'"
)
NPM_TASK = MOCHA_TASK.replace(
    MOCHA_TASK.split("command: |-\n")[1].split("\n  fail_to_pass")[0],
    "    MOCHA_FILE={junit} npm test",
)
# What a test script of the submission's writes where the report goes: every test passes.
FORGE_MOCHA = (
    "require('node:fs').writeFileSync(process.env.MOCHA_FILE, '<testsuites><testsuite "
    'name="double"><testcase classname="double" name="doubles two" file="test/double.spec.js"/>'
    '<testcase classname="double" name="doubles zero" file="test/double.spec.js"/>'
    "</testsuite></testsuites>');\n"
)
NPM_ATTACKS = {
    # `npm test` runs the scripts.test of the package.json it finds: the submission's.
    "scripts_test": {
        "package.json": json.dumps({"name": "x", "scripts": {"test": "node src/forge.js"}}),
        "src/forge.js": FORGE_MOCHA,
    },
    # npm reads the project's .npmrc: node-options preloads the submission's code in
    # every node process the script starts...
    "npmrc_node_options": {
        ".npmrc": "node-options=--require ./src/patch.js\n",
        "src/patch.js": ASSERT_PATCH,
    },
    # ...and script-shell names the program that runs the script.
    "npmrc_script_shell": {
        ".npmrc": "script-shell=./src/shell.sh\n",
        "src/shell.sh": "#!/bin/sh\nexec node src/forge.js\n",
        "src/forge.js": FORGE_MOCHA,
    },
}


@needs_node
@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
@pytest.mark.parametrize("attack", sorted(NPM_ATTACKS))
def test_npm_test_runs_the_bases_script(case: Case, attack: str) -> None:
    package = {"name": "x", "private": True, "scripts": {"test": NPM_SCRIPT}}
    case.base(
        task=NPM_TASK,
        files={
            "test/double.spec.js": MOCHA_TEST,
            "src/double.js": BROKEN_DOUBLE,
            "package.json": json.dumps(package),
        },
    )
    case.submit(NPM_ATTACKS[attack], commit=False)
    if attack == "npmrc_script_shell":
        (case.repo.root / "src" / "shell.sh").chmod(0o755)
    case.repo.commit("attack")
    graded = case.grade()
    graded.check("fail_to_pass: 0 of 1 passed")
