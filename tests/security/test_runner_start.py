"""The runner started with the base's configuration, and `setup` before the tests go in
(issue 44): attacks that no list of file names can stop, graded end to end.

Each is graded against the loose examples/bugfix (any file but the tests may change), so
that what stops it is the guard pytest is started with (repogym/graders/tests/pytest_guard.py)
or the check after `setup`, not a constraint on the diff.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from repogym.task import parse_task
from tests.security import _payloads as p
from tests.security._harness import EXAMPLES, LOOSE_TASK, Case

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


def fix_passes(case: Case, link: tuple[str, str] | None = None) -> None:
    """The bugfix example's fix (and ``link``: a symlink, path and target), graded: PASS,
    nothing left behind."""
    gold = (EXAMPLES / "bugfix" / "solution" / "src" / "slugify" / "core.py").read_text()
    case.submit({"src/slugify/core.py": gold}, commit=False)
    if link is not None:
        (case.repo.root / link[0]).symlink_to(link[1])
    case.repo.commit("fix")
    graded = case.grade()
    assert graded.problems(verdict=False) == []
    report = graded.report or {}
    assert (graded.returncode, report.get("passed")) == (0, True), graded.output


# -- the tree on PYTHONPATH while the runner starts ---------------------------------------

# Imported while a runner starts (by `copy`, or pytest's highlighting): the report forged
# where the command line says it goes (pytest's --junitxml, xmlrunner's --output-file),
# and the process ended before the runner writes its own.
FORGE_ANY = (
    "import os, sys\n"
    "_unittest = '--output-file' in sys.argv\n"
    "_ids = ['test_ascii', 'test_accents_are_transliterated']\n"
    "if not _unittest:  # the bugfix example's pytest ids, as pytest writes them\n"
    "    _ids += ['test_examples[hello, world]', 'test_examples[cr\\\\xe8me br\\\\xfbl\\\\xe9e]']\n"
    "_class = 'tests.test_slugify.TestSlugify' if _unittest else 'tests.test_slugify'\n"
    "_cases = ''.join('<testcase classname=\"%s\" name=\"%s\" '\n"
    "                 'file=\"tests/test_slugify.py\"/>' % (_class, n) for n in _ids)\n"
    "for _i, _a in enumerate(sys.argv):\n"
    "    _path = _a.split('=', 1)[1] if _a.startswith('--junitxml=') else None\n"
    "    if _a == '--output-file':\n"
    "        _path = sys.argv[_i + 1]\n"
    "    if _path:\n"
    "        with open(_path, 'w') as _out:\n"
    "            _out.write('<testsuites><testsuite name=\"x\">' + _cases\n"
    "                       + '</testsuite></testsuites>')\n"
    "        os._exit(0)\n"
)
# The same, run where Python exits: imported while `site` reads the environment's .pth
# files (setuptools' distutils-precedence.pth imports _distutils_hack), before sys.argv
# says where the report goes.
FORGE_AT_EXIT = (
    "import atexit, os, sys\n\n\ndef add_shim():\n    pass\n\n\ndef _forge():\n"
    + "".join("    " + line + "\n" for line in FORGE_ANY.splitlines())
    + "\n\natexit.register(_forge)\n"
)
START_UP = {
    "_distutils_hack": {"_distutils_hack/__init__.py": FORGE_AT_EXIT},
    # What `site` imports after sitecustomize (issue 44's red team: under xmlrunner, after
    # the tree had gone back on sys.path).
    "usercustomize": {"usercustomize.py": FORGE_ANY},
    "org": {"org/__init__.py": "", "org/python/__init__.py": "", "org/python/core.py": FORGE_ANY},
    "pygments": {"pygments/__init__.py": FORGE_ANY},
}
UNITTEST_SLUGIFY = (
    "import unittest\n\nfrom slugify import slugify\n\n\nclass TestSlugify(unittest.TestCase):\n"
    "    def test_ascii(self):\n"
    '        self.assertEqual(slugify("Plain Title 2"), "plain-title-2")\n\n'
    "    def test_accents_are_transliterated(self):\n"
    '        self.assertEqual(slugify("Déjà vu"), "deja-vu")\n'
)
UNITTEST_FILES = {"tests/__init__.py": "", "tests/test_slugify.py": UNITTEST_SLUGIFY}
UNITTEST_TASK = (
    "version: 1\ntype: bugfix\ntests:\n"
    "  command: {command}\n"
    "  fail_to_pass: [tests/test_slugify.py::TestSlugify::test_accents_are_transliterated]\n"
    "  pass_to_pass: [tests/test_slugify.py::TestSlugify::test_ascii]\n"
    "constraints:\n  protected: [tests/**]\n"
)
XMLRUNNER = "python -m xmlrunner discover -s tests -t . --output-file {junit}"
# Where the package goes, and how the task puts the directory on PYTHONPATH: the top of
# the tree (python -m's own), `src` by the command's own assignment, or by the task's env.
PLACES = {
    "top": ("", "PYTHONPATH=src "),
    "command": ("src/", "PYTHONPATH=src "),
    "env": ("src/", ""),
    # The command's own lines on the variable act on the task's value (the red team's
    # honest fixes that failed: `$PYTHONPATH` was the grader's directory, and a separate
    # `export PYTHONPATH` exported nothing of the task's).
    "append": ("src/", "PYTHONPATH=src:$PYTHONPATH "),
    "export": ("src/", "PYTHONPATH=src; export PYTHONPATH; "),
}
# The task's `env: PYTHONPATH`, and what the tests' own processes must see.
ENV_VALUE = {"env": "src", "append": "vendor"}
SEEN = {"append": "src:vendor"}


def _python_path_task(runner: str, place: str) -> str:
    prefix = PLACES[place][1]
    if runner == "pytest":
        task = LOOSE_TASK.replace("command: python -m pytest", f"command: {prefix}python -m pytest")
    else:
        task = UNITTEST_TASK.format(command=prefix + XMLRUNNER)
    return task + (f"env:\n  PYTHONPATH: {ENV_VALUE[place]}\n" if place in ENV_VALUE else "")


# unittest imports no pygments.
STARTS = [(r, m) for r in ("pytest", "unittest") for m in sorted(START_UP)]
STARTS.remove(("unittest", "pygments"))


@pytest.mark.parametrize(("runner", "module"), STARTS)
@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_module_the_runner_imports_as_it_starts_is_the_environments(
    case: Case, runner: str, place: str, module: str
) -> None:
    files = UNITTEST_FILES if runner == "unittest" else {}
    case.base(task=_python_path_task(runner, place), files=files)
    where = PLACES[place][0]
    case.submit({where + path: text for path, text in START_UP[module].items()})
    case.grade().check("fail_to_pass: 0 of 1 passed" if runner == "unittest" else "0 of 2")


# The tests' own processes see the task's PYTHONPATH, not the grader's.
CHILD = (
    "import subprocess, sys\n\n\ndef _child():\n"
    "    code = 'import os; print(os.environ.get(\"PYTHONPATH\"))'\n"
    "    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
)
ENV_TEST = {
    "pytest": CHILD + "\n\ndef test_environment():\n    assert _child().stdout == 'SEEN\\n'\n",
    "unittest": CHILD
    + "\n\nimport unittest\n\n\nclass TestEnv(unittest.TestCase):\n"
    + "    def test_environment(self):\n        self.assertEqual(_child().stdout, 'SEEN\\n')\n",
}
ENV_ID = {
    "pytest": "tests/test_env.py::test_environment",
    "unittest": "tests/test_env.py::TestEnv::test_environment",
}


@pytest.mark.parametrize("runner", ["pytest", "unittest"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_fix_passes_whoever_sets_pythonpath(case: Case, runner: str, place: str) -> None:
    # The command's own PYTHONPATH= is renamed for the grader's start-up module, which
    # gives it back: the fix passes, and the tests' own processes see the task's value.
    files = UNITTEST_FILES if runner == "unittest" else {}
    task = _python_path_task(runner, place).replace(
        "pass_to_pass: [", f"pass_to_pass: [{ENV_ID[runner]}, "
    )
    if runner == "pytest":
        task = task.replace("  pass_to_pass:\n", f"  pass_to_pass:\n    - {ENV_ID[runner]}\n")
    seen = ENV_TEST[runner].replace("SEEN", SEEN.get(place, "src"))
    case.base(task=task, files={**files, "tests/test_env.py": seen})
    fix_passes(case)


# -- what issue 44's red team found in the runner's start --------------------------------

# Clears the guard's record of the files it checks, if it can reach the guard.
NEUTER = (
    "import sys\n_g = sys.modules.get('repogym_pytest_guard')\n"
    "if _g is not None:\n    _g._MANIFEST.clear()\n"
)
# Every failed report of pytest's made a pass, from inside pytest's own class.
FLIP_REPORTS = (
    "from _pytest.reports import TestReport\n"
    "_made = TestReport.from_item_and_call.__func__\n\n\n"
    "def _flipped(cls, item, call):\n"
    "    report = _made(cls, item, call)\n"
    "    if report.failed:\n"
    "        report.outcome = 'passed'\n"
    "        report.longrepr = None\n"
    "    return report\n\n\n"
    "TestReport.from_item_and_call = classmethod(_flipped)\n"
)


def test_a_module_of_the_guards_name_in_the_configurations_pythonpath_is_not_the_guard(
    case: Case,
) -> None:
    # pytest 9 puts the configuration's `pythonpath` (src, here) first on sys.path before
    # it imports the -p plugins: src/repogym_pytest_guard.py stood in for the guard and
    # flipped every failure (PASS 1.000 on the bugfix example as it ships).
    case.base()
    case.submit({"src/repogym_pytest_guard.py": p.FLIP_CONFTEST})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_plugins_are_not_autoloaded_whatever_the_tree_holds(case: Case) -> None:
    # The guard gave PYTEST_DISABLE_PLUGIN_AUTOLOAD back before pytest read it: every
    # installed pytest11 entry point loaded, and one of an upper-case DIST-INFO in src
    # (which the copy kept) cleared the guard's records and flipped the reports.
    case.base(task=LOOSE_TASK)
    case.submit(
        {
            "src/zzevil-1.0.DIST-INFO/METADATA": "Metadata-Version: 2.1\nName: zzevil\n",
            "src/zzevil-1.0.DIST-INFO/entry_points.txt": "[pytest11]\nzz = zzplug\n",
            "src/zzplug.py": NEUTER + FLIP_REPORTS,
        }
    )
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_a_link_named_after_a_module_pytest_imports_is_not_that_module(case: Case) -> None:
    # src/readline, a symlink to a package of the submission's: pytest imports readline
    # while the tree was on sys.path, and the list of shadows took only `readline.py`.
    case.base(task=LOOSE_TASK)
    case.submit({"src/rl/__init__.py": NEUTER + FLIP_REPORTS}, commit=False)
    (case.repo.root / "src" / "readline").symlink_to("rl")
    case.repo.commit("attack")
    case.grade().check("fail_to_pass: 0 of 2 passed")


PROBE_PLUGINS = (
    "import os\n\n\ndef test_started_as_the_grader_says(pytestconfig):\n"
    "    manager = pytestconfig.pluginmanager\n"
    "    loaded = [name for name, _ in manager.list_name_plugin()]\n"
    "    assert not any('hypothesis' in str(n) for n in loaded), loaded\n"
    "    assert 'PYTEST_DISABLE_PLUGIN_AUTOLOAD' not in os.environ\n"
    "    ours = [k for k in os.environ if k.startswith('REPOGYM_') and k != 'REPOGYM_RUN']\n"
    "    assert not ours, ours  # REPOGYM_RUN: the marker of the command's processes\n"
)


def test_a_fix_passes_with_no_plugin_autoloaded_and_the_environment_given_back(
    case: Case,
) -> None:
    # hypothesis's pytest11 entry point is installed beside pytest here: not loaded.
    task = LOOSE_TASK.replace(
        "  pass_to_pass:\n",
        "  pass_to_pass:\n    - tests/test_probe.py::test_started_as_the_grader_says\n",
    )
    case.base(task=task, files={"tests/test_probe.py": PROBE_PLUGINS})
    fix_passes(case, link=("src/slugify_compat", "slugify"))  # read through a link too


# -- the red team's second round ----------------------------------------------------------

# Stands in for a module of the standard library: flips pytest's reports, then puts the
# real module in its place, so that whoever imported it gets what they expected.
STAND_IN = (
    "import os as _os, sys as _sys\n"
    "try:\n"
    + "".join("    " + line + "\n" for line in (NEUTER + FLIP_REPORTS).splitlines())
    + "except ImportError:\n    pass\n"
    "_here = _os.path.dirname(_os.path.abspath(__file__))\n"
    "_name = __name__\n"
    "del _sys.modules[_name]\n"
    "_saved = _sys.path[:]\n"
    "_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or '.') != _here]\n"
    "try:\n    _real = __import__(_name)\nfinally:\n    _sys.path[:] = _saved\n"
    "_sys.modules[_name] = _real\n"
)


def test_the_debugger_pytest_imports_late_is_the_environments(case: Case) -> None:
    # pytest's debugging plugin imports pdb (and cmd, code, codeop) at configure, once the
    # tree is on sys.path: a `lib/pdb.py` on the pytest.toml's `pythonpath`, a root the
    # list of shadows does not know, passed.
    case.base(task=LOOSE_TASK, files={"pytest.toml": '[pytest]\npythonpath = ["src", "lib"]\n'})
    case.repo.git("checkout", "--quiet", "main")
    case.repo.delete("pytest.ini")
    case.repo.commit("pytest.toml only")
    case.repo.git("checkout", "--quiet", "-B", "attack", "main")
    case.submit({"lib/pdb.py": STAND_IN})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_a_step_before_pytest_cannot_rewrite_the_graders_start(case: Case) -> None:
    # `python src/build.py && python -m pytest`: the build step, the submission's code,
    # appended to the grader's sitecustomize.py, which was in the report's directory
    # (writable by the command). It is beside it now, the grader's, read-only.
    task = LOOSE_TASK.replace(
        "command: python -m pytest", "command: python src/build.py && python -m pytest"
    )
    tamper = (
        "import os\n"
        "start = os.environ.get('PYTHONPATH', '')\n"
        "for name in ('sitecustomize.py', 'repogym_pytest_guard.py', 'manifest.json'):\n"
        "    try:\n"
        f"        open(os.path.join(start, name), 'a').write({FLIP_REPORTS!r})\n"
        "    except OSError as error:\n"
        "        print('refused:', error)\n"
    )
    case.base(task=task, files={"src/build.py": "print('built')\n"})
    case.submit({"src/build.py": tamper})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_a_command_that_clears_the_environment_is_the_tasks_error(case: Case) -> None:
    # `env -i ... python -m pytest` drops what the grader starts pytest with: pytest then
    # ran with no check, and a start-up module of the submission's passed.
    task = LOOSE_TASK.replace(
        "command: python -m pytest", 'command: env -i PATH="$PATH" python -m pytest'
    )
    case.base(task=task)
    case.submit({"pygments/__init__.py": FORGE_ANY})
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert "`tests.command`: starts the test runner with the environment cleared" in (
        graded.stderr
    ), graded.stderr
    assert not graded.problems("", verdict=False)


@pytest.mark.parametrize(
    "ini",
    ["required_plugins = hypothesis\n", "filterwarnings =\n    error\n"],
    ids=["required_plugins", "filterwarnings-error"],
)
def test_a_fix_passes_with_the_bases_own_strictness(case: Case, ini: str) -> None:
    # The red team's honest fixes graded FAIL: a required plugin loaded after pytest
    # checked it ("Missing required plugins"), and the guard's import warned under
    # `filterwarnings = error` (it cannot be rewritten).
    case.base(task=LOOSE_TASK, files={"pytest.ini": "[pytest]\npythonpath = src\n" + ini})
    fix_passes(case)


# -- the red team's third round -----------------------------------------------------------

# Run at exit: the failures taken out of pytest's report, and the process ended well.
STRIP_AT_EXIT = (
    "import atexit, os, re, sys\n\n\ndef _strip():\n"
    "    for a in sys.argv:\n"
    "        if a.startswith('--junitxml='):\n"
    "            path = a.split('=', 1)[1]\n"
    "            text = re.sub(r'<failure\\b.*?</failure>', '', open(path).read(), flags=re.S)\n"
    "            open(path, 'w').write(re.sub(r'failures=\"\\d+\"', 'failures=\"0\"', text))\n"
    "            sys.stdout.flush()\n"
    "            os._exit(0)\n\n\n"
    "atexit.register(_strip)\n"
)


def _python_with_a_user_site(venvs: Path) -> Path:
    """A Python whose user site is on, as a system's or pyenv's is (a venv's is off unless
    it sees the system's packages), with this one's packages (pytest) through a .pth."""
    dest = Path(tempfile.mkdtemp(prefix="user-site-", dir=venvs))
    dest.chmod(0o711)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(dest / "v")],
        check=True,
    )
    python = dest / "v" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "_ours.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


@pytest.mark.parametrize("planted", ["pth", "usercustomize"])
def test_a_step_before_pytest_cannot_plant_in_the_user_site(
    case: Case, venvs: Path, planted: str
) -> None:
    # The run's HOME is the command's to write: a build step (the submission's code) made
    # the user site there, and a .pth or a usercustomize in it ran in pytest's process
    # before anything of the grader's.
    python = _python_with_a_user_site(venvs)
    task = LOOSE_TASK.replace(
        "command: python -m pytest", f"command: {python} src/build.py && {python} -m pytest"
    )
    name = "zz_planted" if planted == "pth" else "usercustomize"
    pth = "open(os.path.join(d, 'zz.pth'), 'w').write('import zz_planted\\n')\n"
    plant = (
        "import os, site\nd = site.getusersitepackages()\nos.makedirs(d, exist_ok=True)\n"
        f"open(os.path.join(d, '{name}.py'), 'w').write({STRIP_AT_EXIT!r})\n"
        + (pth if planted == "pth" else "")
    )
    case.base(task=task, files={"src/build.py": "print('built')\n"})
    case.submit({"src/build.py": plant})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_pytest_named_without_a_space_is_started_by_the_grader(case: Case) -> None:
    # `python -mpytest` was not taken for pytest: no guard, and a pygments of the tree's
    # forged the report.
    task = LOOSE_TASK.replace("command: python -m pytest", "command: python -mpytest")
    case.base(task=task)
    case.submit({"pygments/__init__.py": FORGE_ANY})
    case.grade().check("fail_to_pass: 0 of 2 passed")


@pytest.mark.parametrize(
    "command",
    [
        'env -v -i PATH="$PATH" python -m pytest',
        'env -u LANG --ignore-environment PATH="$PATH" python -m pytest',
        "python -X dev -E -m pytest",
        "python3 -W error -I -m pytest",
        'env --unset LANG -i PATH="$PATH" python -m pytest',
        'sh -c \'exec env -i PATH=/usr/bin:/bin "$0" "$@"\' python -m pytest',
    ],
)
def test_every_way_of_clearing_the_environment_is_the_tasks_error(case: Case, command: str) -> None:
    # The first refusal read only env's first option and no option's argument; a top-level
    # repogym_pytest_guard.py then stood in for the guard under -E.
    task = LOOSE_TASK.replace("command: python -m pytest", f"command: {command}")
    case.base(task=task)
    case.submit({"repogym_pytest_guard.py": p.FLIP_CONFTEST, "pygments/__init__.py": FORGE_ANY})
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert "starts the test runner with the environment cleared or ignored" in graded.stderr
    assert not graded.problems("", verdict=False)


def test_a_fix_passes_under_a_python_named_by_its_path(case: Case, venvs: Path) -> None:
    # A Python on no PATH entry, named in the command: the seal shows what the task's
    # command names, not the first word of the grader's lines before it (those hid it:
    # `... python: not found`).
    python = _python_with_a_user_site(venvs)
    task = LOOSE_TASK.replace("command: python -m pytest", f"command: {python} -m pytest")
    case.base(task=task)
    fix_passes(case)


# -- the red team's fourth round ----------------------------------------------------------

# A build step's bytecode for the base's test module, in the tree's __pycache__ under the
# name pytest's assertion rewriter reads, with the source's time and size: its slugify is
# always right.
PLANT_PYC = r"""
import importlib.util, marshal, os
from _pytest.assertion import rewrite
src = os.path.join("tests", "test_slugify.py")
fake = open(src, encoding="utf-8").read().replace(
    "from slugify import slugify",
    "import re, unicodedata\n"
    "def slugify(t):\n"
    "    t = unicodedata.normalize('NFKD', t).encode('ascii', 'ignore').decode()\n"
    "    return re.sub(r'[^a-z0-9]+', '-', t.lower()).strip('-')\n",
)
code = compile(fake, os.path.abspath(src), "exec")
st = os.stat(src)
os.makedirs(os.path.join("tests", "__pycache__"), exist_ok=True)
with open(os.path.join("tests", "__pycache__", "test_slugify" + rewrite.PYC_TAIL), "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + bytes(4)
            + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
"""


def test_bytecode_planted_for_a_test_module_is_never_read(case: Case) -> None:
    # pytest's rewriter checks a cached module's source time and size only: the forged
    # one ran in place of the base's tests. The runner now keeps its bytecode elsewhere.
    task = LOOSE_TASK.replace(
        "command: python -m pytest", "command: python src/build.py && python -m pytest"
    )
    case.base(task=task, files={"src/build.py": "print('built')\n"})
    case.submit({"src/build.py": PLANT_PYC})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_pytest_run_as_its_main_module_is_started_by_the_grader(case: Case) -> None:
    task = LOOSE_TASK.replace("command: python -m pytest", "command: python -m pytest.__main__")
    case.base(task=task)
    case.submit({"pygments/__init__.py": FORGE_ANY})
    case.grade().check("fail_to_pass: 0 of 2 passed")


@pytest.mark.parametrize("form", ["PYTEST_ADDOPTS=-ra ", "export PYTEST_ADDOPTS=-ra && "])
def test_a_fix_passes_where_the_command_sets_pytest_addopts(case: Case, form: str) -> None:
    # The command's own PYTEST_ADDOPTS replaced the grader's -p of the guard: the
    # configuration's pythonpath, held back for it, never went on sys.path.
    case.base(
        task=LOOSE_TASK.replace("command: python -m pytest", f"command: {form}python -m pytest")
    )
    fix_passes(case)


@pytest.mark.parametrize(
    "command",
    [
        "pip install python-dateutil -I && python -m pytest",
        "apt-get install -y python3-dev -q -S; python -m pytest",
        "grep -E x setup.cfg; python -X dev -Wdefault -m pytest",
    ],
)
def test_a_command_that_keeps_the_environment_is_not_refused(command: str) -> None:
    # python-dateutil is no Python, and pip's -I and apt's -S are not Python's.
    task = parse_task(LOOSE_TASK.replace("command: python -m pytest", f"command: {command}"))
    assert task.tests is not None and task.tests.command.startswith(command)
