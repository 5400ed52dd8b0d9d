"""The grader's plugin in every pytest run it starts (issue 44), copied next to the run's
report as ``repogym_pytest_guard.py``, imported by the grader's ``sitecustomize``
(:mod:`repogym.graders.tests.python_site`) before pytest starts, and registered by ``-p``: it
has no import of repogym's, and runs on the Python of the task's environment (3.8 and
later) and on pytest 7 and later.

The grader starts pytest with the tree off ``sys.path`` (``PYTHONSAFEPATH``, and the
tree's entries of ``PYTHONPATH`` deferred), plugin autoload off
(:mod:`repogym.graders.tests.pytest_start`). What the module then holds the runner to, from
``$REPOGYM_PYTEST_MANIFEST`` (the files the grader wrote into the run, by path and git
blob id):

- the configuration's ``pythonpath`` goes on ``sys.path`` only once the checks below are
  done (pytest 9 puts it there before it imports the ``-p`` plugins);
- the configuration file pytest read is one of those files, as written;
- no module was imported from the tree before this one's checks: the runner is the
  environment's;
- the plugins are the base's: the ``pytest11`` entry points of the distributions its
  configuration names in ``required_plugins``, loaded while the tree is still off
  ``sys.path`` (a ``*.DIST-INFO`` of the tree's is never seen);
- every ``conftest.py`` and every test module pytest imports is one of the files the
  grader wrote, byte for byte (one a ``setup`` or the run itself wrote is refused by name);
- then the tree goes on ``sys.path`` as Python and pytest would have put it: the tests
  import the tree's code as they always did.

A refusal is one line on stderr and in ``$REPOGYM_PYTEST_REFUSED``, and pytest stops with
exit status 4 (a usage error) before it runs a test. The variables the grader set are
given back once pytest has read them, before the first conftest: a process the tests
start gets the task's own.

PYTEST_DONT_REWRITE: imported before pytest names it, it cannot be rewritten, and a
configuration with ``filterwarnings = error`` would stop at pytest's warning that says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

_SET = ("PYTHONSAFEPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")
# What pytest imports once the tree is on sys.path: its highlighting, and the debugger its
# debugging plugin imports at configure (issue 44's red team: a `lib/pdb.py` on the
# configuration's `pythonpath`). Imported from the environment first.
_LATE = (
    "pygments.lexers.python",
    "pygments.lexers.diff",
    "pygments.formatters",
    "pdb",
    "bdb",
    "cmd",
    "code",
    "codeop",
    "rlcompleter",
)
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# The grader's own variables, read (not taken) at import: the guard may be imported by a
# Python that is not pytest, one the command starts before it (repogym_python_start
# imports it in every Python), whose children must still get them.
_OURS = {
    k: os.environ.get(k, "")
    for k in ("REPOGYM_PYTEST_MANIFEST", "REPOGYM_PYTEST_REFUSED", "REPOGYM_PYTEST_OPTIONS")
}
# A command that sets PYTEST_ADDOPTS itself (`PYTEST_ADDOPTS=-ra pytest`) drops the grader's
# `-p` of this plugin and `-c`: imported before pytest reads the variable, this module puts
# them first again, and gives the command's own value back afterwards (issue 44's red team).
_COMMANDS_ADDOPTS: list[str] = []
if _OURS["REPOGYM_PYTEST_OPTIONS"]:
    _ADDOPTS = os.environ.get("PYTEST_ADDOPTS", "")
    if not _ADDOPTS.startswith(_OURS["REPOGYM_PYTEST_OPTIONS"]):
        _COMMANDS_ADDOPTS.append(_ADDOPTS)
        os.environ["PYTEST_ADDOPTS"] = f"{_OURS['REPOGYM_PYTEST_OPTIONS']} {_ADDOPTS}".strip()
_MANIFEST: dict[str, Any] = {}
if _OURS["REPOGYM_PYTEST_MANIFEST"]:
    _MANIFEST = json.loads(Path(_OURS["REPOGYM_PYTEST_MANIFEST"]).read_text(encoding="utf-8"))
_TREE = Path(_MANIFEST.get("tree", Path.cwd()))
_REAL_TREE = Path(os.path.realpath(_TREE))
_FILES: dict[str, str] = _MANIFEST.get("files", {})
_SESSION: list[bool] = []  # not empty once the session started
# pytest 9 puts the configuration's `pythonpath` first on sys.path before it imports the
# plugins named by -p, and then imports more (readline): the tree's. Deferred to the end
# of this plugin's checks (pytest 8 does it in a hook that runs after this one's).
_CONFIGURE_PYTHON_PATH = getattr(pytest.Config, "_configure_python_path", None)
_DEFERRED_CONFIGS: list[pytest.Config] = []
if _MANIFEST and _CONFIGURE_PYTHON_PATH is not None:

    def _deferred(config: pytest.Config) -> None:
        _DEFERRED_CONFIGS.append(config)

    pytest.Config._configure_python_path = _deferred  # type: ignore[method-assign,assignment]


def _give_back_environment() -> None:
    """Put back the variables the grader set (``REPOGYM_WAS_<name>``: ``=value``, or
    empty where it was not set), once pytest has read them: the processes the tests start
    get the task's own. PYTHONPATH is the start-up module's to give back."""
    for name in _SET:
        was = os.environ.pop(f"REPOGYM_WAS_{name}", "")
        if name == "PYTEST_ADDOPTS" and _COMMANDS_ADDOPTS:
            was = "=" + _COMMANDS_ADDOPTS[0]  # what the command set it to
        if was.startswith("="):
            os.environ[name] = was[1:]
        else:
            os.environ.pop(name, None)
    for name in _OURS:
        os.environ.pop(name, None)
    start = sys.modules.get("repogym_python_start")
    if start is not None:
        start.give_back()


def _refuse(why: str, *, early: bool = False) -> None:
    """Stop pytest with ``why``: a usage error before the session, an exit in it."""
    line = f"repogym: {why}"
    refused = _OURS["REPOGYM_PYTEST_REFUSED"]
    if refused:
        Path(refused).write_text(line + "\n", encoding="utf-8")
    if early:
        raise pytest.UsageError(line)
    pytest.exit(line, returncode=4)


def _blob_id(path: Path) -> str | None:
    """The git blob id of what is at ``path``: a regular file's content, or a symlink's
    target (as git stores one); None if neither is there."""
    try:
        if path.is_symlink():
            data = os.fsencode(os.readlink(path))  # noqa: PTH115
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as file:
                if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    return None
                data = file.read()
    except OSError:
        return None
    header = b"blob %d\0" % len(data)
    return hashlib.new(_MANIFEST.get("object_format", "sha1"), header + data).hexdigest()


def _relative(path: Path, tree: Path | None = None) -> str | None:
    try:
        # Not resolved: a link's own path is what pytest imports by.
        return Path(os.path.abspath(path)).relative_to(tree or _TREE).as_posix()  # noqa: PTH100
    except ValueError:
        return None


def _check_written(path: Path, what: str, *, early: bool = False) -> None:
    """Refuse ``path`` (in the tree) unless it is a file the grader wrote, as written."""
    relative = _relative(path)
    if relative is None:
        return  # outside the tree: the environment's
    if relative not in _FILES:  # through a directory link of the tree's: the file it is
        real = _relative(Path(os.path.realpath(path)), _REAL_TREE)
        if real is not None and real in _FILES:
            relative, path = real, Path(os.path.realpath(path))
    if _FILES.get(relative) is None or _blob_id(path) != _FILES[relative]:
        _refuse(
            f"{relative}: pytest would read this {what}, and it is not the file the grader "
            "wrote there (something wrote it since: setup, or the run itself); the tests "
            "and their configuration are the task's and must not be changed",
            early=early,
        )


def _imported_from_tree() -> str | None:
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and _relative(Path(file)) is not None:
            return name
    return None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The entry points of the distributions the base's configuration requires, loaded as
    this plugin is registered: before pytest checks ``required_plugins`` (issue 44's red
    team: loaded later, a task that requires hypothesis could not start), and while the
    tree is off ``sys.path``."""
    if _MANIFEST:
        _load_plugins(pluginmanager)


def _load_plugins(manager: pytest.PytestPluginManager) -> None:
    """The entry points of the distributions the base's configuration requires."""
    from importlib import metadata

    for wanted in _MANIFEST.get("plugins", []):
        match = _NAME.match(wanted)
        if match is None:
            continue
        try:
            dist = metadata.distribution(match.group(0))
        except metadata.PackageNotFoundError:
            continue  # pytest says which required plugin is missing
        for point in dist.entry_points:
            if point.group == "pytest11":
                manager.load_setuptools_entrypoints("pytest11", name=point.name)


def _check_conftests(config: pytest.Config) -> None:
    """Check each conftest.py as pytest is about to import it (its own method for that,
    the same from pytest 7 on), else every one in the tree now."""
    manager = config.pluginmanager
    original = getattr(manager, "_importconftest", None)
    if original is None:
        for top, dirs, files in os.walk(_TREE):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
            if "conftest.py" in files:
                _check_written(Path(top) / "conftest.py", "conftest.py", early=True)
        return

    def checked(path: object, *args: object, **kwargs: object) -> object:
        _check_written(Path(str(path)), "conftest.py", early=not _SESSION)
        return original(path, *args, **kwargs)

    manager._importconftest = checked  # type: ignore[method-assign,assignment]


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if not _MANIFEST:
        return
    _give_back_environment()
    read = getattr(early_config, "inipath", None)
    if read is not None:
        if _relative(Path(read)) is None:  # above the tree: a shared temporary directory's
            _refuse(
                f"pytest would read {read}, a configuration file outside the tree that "
                "the grader did not write (another process put it there)",
                early=True,
            )
        _check_written(Path(read), "configuration file", early=True)
    early = _imported_from_tree()
    if early is not None:
        _refuse(
            f"the module {early} was imported from the tree before the tests started; "
            "run pytest on Python 3.11 or later, whose PYTHONSAFEPATH keeps the tree off "
            "sys.path until then",
            early=True,
        )
    _check_conftests(early_config)
    for lazy in _LATE:
        with contextlib.suppress(ImportError):
            __import__(lazy)  # pytest imports them late, with the tree on sys.path
    start = sys.modules.get("repogym_python_start")
    if start is not None:  # the tree's entries of PYTHONPATH, kept out until now
        start.restore()
    if sys.argv and sys.argv[0].endswith("__main__.py"):  # python -m pytest
        sys.path.insert(0, str(early_config.invocation_params.dir))
    for config in _DEFERRED_CONFIGS:  # the configuration's `pythonpath`, first of all
        _CONFIGURE_PYTHON_PATH(config)  # type: ignore[misc]


if hasattr(pytest, "Dir"):  # pytest 8 and later: a directory's conftest.py, __init__.py

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(path: Path) -> None:
        if _MANIFEST and (path / "__init__.py").exists():
            _check_written(path / "__init__.py", "package __init__.py")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart() -> None:
    _SESSION.append(True)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path) -> None:
    if _MANIFEST:
        _check_written(module_path, "test module")


@pytest.hookimpl(tryfirst=True)
def pytest_collectstart(collector: pytest.Collector) -> None:
    """Again just before the module is imported: pytest makes every module of a
    directory before it imports the first, whose code may rewrite the next."""
    if _MANIFEST and isinstance(collector, pytest.Module):
        _check_written(collector.path, "test module")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A rerun (issue 47) runs the ids the grader chose and nothing else: an item is
    kept when its node id is one of them, or lies in a file one of them names whole."""
    chosen = _MANIFEST.get("select")
    if not chosen:
        return
    wanted = set(chosen)
    kept = [i for i in items if i.nodeid in wanted or i.nodeid.split("::")[0] in wanted]
    keeping = {id(i) for i in kept}
    dropped = [i for i in items if id(i) not in keeping]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
