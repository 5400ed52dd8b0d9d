"""How the grader starts a Python test runner, pytest or unittest (issue 44): with nothing
of the tree on ``sys.path`` until the runner has started.

A runner imports modules as it starts (``copy``, which tries ``org.python.core``; pytest's
``pygments``), and whatever ``sys.path`` then holds first is what it gets: with the task's
``PYTHONPATH=src`` or an image's ``ENV PYTHONPATH``, a package of the submission's there
would take the runner over before a test ran. So the grader writes a ``sitecustomize.py``
(and :mod:`repogym.graders.tests.python_site` beside it as ``repogym_python_start.py``) into a
directory of the run's and makes that directory all of ``PYTHONPATH`` (the value before
kept in ``REPOGYM_TASK_PYTHONPATH``); ``site`` imports it before the runner imports
anything, and the ``.pth`` files ``site`` reads first see none of the tree. It lays
``sys.path`` out as the task's ``PYTHONPATH`` would have, keeps the tree's entries out
until the runner has started (unittest's and xmlrunner's modules imported, or pytest's
guard done checking), and puts the task's value back into the environment for the
processes the tests start.

A command that sets ``PYTHONPATH`` itself (``PYTHONPATH=src python -m pytest``) would
drop that directory: every mention of the variable in the command is renamed to
``REPOGYM_TASK_PYTHONPATH``, which holds the value before (or is unset where it was), so
that the command's assignments, exports, unsets and ``$PYTHONPATH`` all act on the
task's value, and the start-up module reads it from there. The log and the result show
the command as the task wrote it.

Other runners (and a command that reaches Python another way, such as ``tox`` or a
script) keep the list of restored files (:data:`repogym.graders.tests.runfiles.RUNNER_FILES`).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

SITE_MODULE = "repogym_python_start"
_SITE_SOURCE = Path(__file__).with_name("python_site.py")
# The variable, wherever the command names it (`PYTHONPATH=src cmd`, `export PYTHONPATH`,
# `$PYTHONPATH`, `${PYTHONPATH:-}`), but not as part of a longer name.
_MENTIONS = re.compile(r"(?<![\w])PYTHONPATH(?![\w])")
TASK_VARIABLE = "REPOGYM_TASK_PYTHONPATH"


def prepare(
    command: str, tree: Path, reports: Path, runner: str, select: tuple[str, ...] = ()
) -> tuple[Path, str]:
    """The directory of the run's start-up modules (written beside ``reports``, the
    grader's and only readable to the command: one step of the command before the runner,
    the submission's code, rewrote the sitecustomize in it: issue 44's red team) and the
    command to run instead of ``command``: the variables set, then ``command`` with every
    mention of ``PYTHONPATH`` renamed. ``runner`` is ``pytest`` or ``unittest``;
    ``select``: the ids a rerun of unittest runs (issue 47), none for all."""
    site = reports.with_name(f"{reports.name}-start")
    site.mkdir(mode=0o755)
    site.chmod(0o755)
    (site / f"{SITE_MODULE}.py").write_bytes(_SITE_SOURCE.read_bytes())
    (site / "sitecustomize.py").write_text(f"import {SITE_MODULE}  # noqa: F401\n")
    lines = [
        f'if [ -n "${{PYTHONPATH+set}}" ]; then export {TASK_VARIABLE}="$PYTHONPATH"; '
        f"else unset {TASK_VARIABLE}; fi",
        f"export PYTHONPATH={shlex.quote(str(site))}",
        # No user site: a step before the runner (the submission's) could plant a .pth or a
        # usercustomize in the run's HOME, which site would run first (issue 44's red team).
        'export REPOGYM_WAS_PYTHONNOUSERSITE="${PYTHONNOUSERSITE+=}${PYTHONNOUSERSITE-}"',
        "export PYTHONNOUSERSITE=1",
        f"export REPOGYM_PYTHON_TREE={shlex.quote(str(tree))} REPOGYM_PYTHON_RUNNER={runner}",
    ]
    if select:
        (site / "select.json").write_text(json.dumps(list(select)), encoding="utf-8")
        lines.append(f"export REPOGYM_PYTHON_SELECT={shlex.quote(str(site / 'select.json'))}")
    return site, "\n".join([*lines, _MENTIONS.sub(TASK_VARIABLE, command)])
