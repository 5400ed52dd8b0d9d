"""The runner started with the base's configuration, and `setup` before the tests go in
(issue 44): attacks that no list of file names can stop, graded end to end.

Each is graded against the loose examples/bugfix (any file but the tests may change), so
that what stops it is the guard pytest is started with (repogym/graders/_pytest_guard.py)
or the check after `setup`, not a constraint on the diff.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case

# The bugfix's test module, every assertion gone: what an attack would have pytest run.
HOLLOW = "def test_accents_are_transliterated():\n    pass\n"
# Rewrites the task's test module with the hollow one; the path found as a submission
# finds it (its own file's place in the tree).
REWRITE = f"""
import pathlib
_tests = pathlib.Path(__file__).resolve().parents[{{up}}] / "tests"
for _name in ("test_slugify.py", "test_zz.py"):
    if (_tests / _name).exists():
        (_tests / _name).write_text({HOLLOW!r})
"""
# A task with a second test module, collected after the first: what the submission's
# code, imported by the first, can reach before pytest reads it.
TWO_MODULES_TASK = LOOSE_TASK.replace(
    "  pass_to_pass:",
    "    - tests/test_zz.py::test_accents_are_transliterated\n  pass_to_pass:",
)
ZZ_TEST = "from slugify import slugify\n\n\ndef test_accents_are_transliterated():\n" + (
    '    assert slugify("Déjà vu") == "deja-vu"\n'
)
SETUP_TASK = LOOSE_TASK.replace("tests:\n", "setup: python src/prepare.py\ntests:\n", 1)


def test_a_test_module_rewritten_while_pytest_collects_is_refused(case: Case) -> None:
    # The package, imported by the first test module, rewrites the second before pytest
    # reads it: only a check made as pytest imports the module sees it.
    case.base(task=TWO_MODULES_TASK, files={"tests/test_zz.py": ZZ_TEST})
    init = Path(case.repo.root, "src/slugify/__init__.py").read_text()
    case.submit({"src/slugify/__init__.py": init + REWRITE.format(up=2)})
    case.grade().check("tests/test_zz.py: pytest would read this test module")


def test_a_setup_that_rewrites_a_test_is_refused_by_name(case: Case) -> None:
    case.base(task=SETUP_TASK, files={"src/prepare.py": "print('ready')\n"})
    case.submit({"src/prepare.py": REWRITE.format(up=1)})
    case.grade().check("setup wrote tests/test_slugify.py")


def test_a_conftest_that_setup_adds_is_refused_by_name(case: Case) -> None:
    # No file of that name in the base or the submission: no list of paths holds it.
    conftest = (
        f"import pathlib\npathlib.Path('tests/conftest.py').write_text({p.FLIP_CONFTEST!r})\n"
    )
    case.base(task=SETUP_TASK, files={"src/prepare.py": "print('ready')\n"})
    case.submit({"src/prepare.py": conftest})
    case.grade().check("tests/conftest.py: pytest would read this conftest.py")


def test_a_configuration_that_setup_adds_is_not_read(case: Case) -> None:
    # pytest.toml made by setup, where the base has pytest.ini: pytest is started with
    # the base's file by -c and never looks for another.
    evil = "[pytest]\npythonpath = ['src']\naddopts = ['-p', 'evil']\n"
    script = f"import pathlib\npathlib.Path('pytest.toml').write_text({evil!r})\n"
    case.base(task=SETUP_TASK, files={"src/prepare.py": "print('ready')\n"})
    plugin = (
        p.FLIP_PLUGIN
        + '\n\ndef pytest_configure(config):\n    config.pluginmanager.register(_Flip(), "flip")\n'
    )
    case.submit({"src/prepare.py": script, "evil.py": plugin})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_hidden_tests_go_in_after_setup(case: Case, tmp_path: Path) -> None:
    # setup writes a hollow module where the hidden test will be: refused by name (the
    # grader's copy would have replaced it: setup never sees the hidden tests).
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_hidden.py").write_text(ZZ_TEST)
    task = SETUP_TASK.replace(
        "  pass_to_pass:",
        "    - tests/test_hidden.py::test_accents_are_transliterated\n  pass_to_pass:",
    )
    plant = f"import pathlib\npathlib.Path('tests/test_hidden.py').write_text({HOLLOW!r})\n"
    case.base(task=task, files={"src/prepare.py": "print('ready')\n"})
    case.submit({"src/prepare.py": plant})
    case.grade("--hidden", str(hidden)).check("setup wrote tests/test_hidden.py")


def test_a_configuration_above_the_tree_is_refused(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A base with no configuration of its own: pytest looks in the copy's parents. Sealed,
    # a command sees none of them; confined by Landlock, it may not read them; with
    # REPOGYM_SEAL=off (a uid of its own, nothing else) it may, and a pytest.ini that
    # another process (here, this test) left there would be read, plugins and all.
    shared = Path(tempfile.mkdtemp(prefix="repogym-shared-"))
    shared.chmod(0o755)
    planted = shared / "pytest.ini"
    planted.write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    planted.chmod(0o644)
    monkeypatch.setenv("REPOGYM_SEAL", "off")
    monkeypatch.setenv("REPOGYM_COPIES", str(shared))
    task = LOOSE_TASK.replace("--junitxml", "-o pythonpath=src --junitxml")
    case.base(task=task)
    case.repo.git("checkout", "--quiet", "main")
    case.repo.delete("pytest.ini")
    case.repo.commit("no configuration")
    case.repo.git("checkout", "--quiet", "-B", "attack", "main")
    case.submit({"src/slugify/core.py": Path(case.repo.root, "src/slugify/core.py").read_text()})
    try:
        case.grade().check(f"pytest would read {planted}, a configuration file outside")
    finally:
        shutil.rmtree(shared)
