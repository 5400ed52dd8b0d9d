"""How the grader starts pytest (issue 44): with the base's configuration named, not found.

A list of the file names pytest reads (:data:`repogym.graders.tests.runfiles.RUNNER_FILES`)
holds only the names someone thought of: pytest 9 reads ``pytest.toml`` first, finds
plugins through any ``*.dist-info`` on ``sys.path`` whatever its case, and imports
packages at start-up (``pygments``; ``org.python.core`` through ``copy``) from wherever
``sys.path`` says. So when ``tests.command`` runs pytest, the grader starts it so that no
file name matters:

- ``-c`` the base's configuration file at the top of the tree (the first pytest itself
  would take; the tree, its directory, is then the rootdir): no other configuration file
  is read. Not where the base has none there (one outside the tree would make the paths
  of ``-o pythonpath=src`` its own), nor when the command changes directory or names a
  configuration itself: pytest finds its file then, and the guard refuses one it finds
  that the grader did not write, in the tree or above it;
- ``PYTHONSAFEPATH=1``: the tree is not on ``sys.path`` while the runner starts, so
  nothing it imports then is the tree's, and no distribution of the tree's is seen;
- ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` and the guard (:mod:`repogym.graders.tests.pytest_guard`)
  by ``-p``: it loads the plugins the base's configuration requires (``required_plugins``)
  by name, checks that the configuration, every ``conftest.py`` and every test module
  pytest imports are the files the grader wrote (a ``setup`` or the run itself that
  wrote one is refused by name), and only then puts the tree on ``sys.path`` as
  ``python -m`` would.

The variables are set by a few lines of shell before the command, so that the image's
own values are kept after the guard's and given back to the processes the tests start.
``PYTHONPATH`` is :mod:`repogym.graders.tests.python_start`'s: the tree's entries of it (a
``PYTHONPATH=src`` of the task's) are off ``sys.path`` until the guard is done.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from repogym.graders.tests import python_start as _python_start

GUARD = "repogym_pytest_guard"
_GUARD_SOURCE = Path(__file__).with_name("pytest_guard.py")
# pytest 9's order: the first of these at a directory that configures pytest is read.
CONFIG_ORDER = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
# A command that finds its configuration some other way: the guard checks what it found.
_OWN_CONFIG = re.compile(
    r"(?<![\w-])(?:cd|pushd)\s|(?:^|\s)(?:-c|--config-file|--rootdir|--inifile)\b"
)
_SET = ("PYTHONSAFEPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")


def prepare(
    command: str,
    tree: Path,
    reports: Path,
    written: Mapping[str, str],
    *,
    config: str | None,
    plugins: tuple[str, ...],
    object_format: str = "sha1",
    select: tuple[str, ...] = (),
) -> tuple[Path, str]:
    """The directory the command must read (the start-up modules of
    :mod:`repogym.graders.tests.python_start`, the guard and its manifest, written there) and
    the command to run instead of ``command``: the variables set, then ``command``
    (``written``: the run's files by path and git blob id; ``config``: the base's
    configuration file at the top of the tree; ``plugins``: its required plugins;
    ``select``: the ids a rerun runs, none for all). The guard's refusal is written into
    ``reports``."""
    guard, started = _python_start.prepare(command, tree, reports, "pytest")
    (guard / f"{GUARD}.py").write_bytes(_GUARD_SOURCE.read_bytes())
    manifest = {
        "tree": str(tree),
        "files": dict(written),
        "plugins": list(plugins),
        "object_format": object_format,
        "select": list(select),
    }
    (guard / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    options = ["-p", GUARD]
    if config is not None and not _OWN_CONFIG.search(command):
        options += ["-c", str(tree / config)]
    ours = " ".join(shlex.quote(o) for o in options)
    lines = [f'export REPOGYM_WAS_{n}="${{{n}+=}}${{{n}-}}"' for n in _SET]
    lines += [
        "export PYTHONSAFEPATH=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
        f'export PYTEST_ADDOPTS={shlex.quote(ours)}"${{PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}}"',
        f"export REPOGYM_PYTEST_OPTIONS={shlex.quote(ours)}",
        f"export REPOGYM_PYTEST_MANIFEST={shlex.quote(str(guard / 'manifest.json'))}",
        f"export REPOGYM_PYTEST_REFUSED={shlex.quote(str(reports / 'refused'))}",
    ]
    return guard, "\n".join([*lines, started])


def refusal(reports: Path) -> str | None:
    """The guard's line if it refused the run."""
    try:
        return (reports / "refused").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
