"""A command whose program is not found: an error of the place it runs, not a grade
(issue 20).

A task's ``setup``, ``tests.command`` or ``perf.command`` that starts with ``node`` on a
machine without Node exits with 127, and the shell says so on stderr (dash:
``/bin/sh: 1: node: not found``; bash: ``bash: node: command not found``). No submission
could pass such a grade, so ``FAIL 0.000`` would blame the change for the machine: the
graders raise :class:`~repogym.errors.CommandNotFound` instead, one line naming the
program, the PATH and the fix.

Only a program named without a slash counts, and only the command's first: a missing
``./run.sh`` or a program the submission's code starts may be the submission's doing,
and stays a failing grade. So that the submission cannot print the shell's words and
exit 127 to turn its failure into an error, the program is looked for on the PATH (as
the grader, :func:`shutil.which`): found there, the output lied and the grade stands. A
PATH with a relative entry is searched in the submission's copy, where the program may
be missing by the submission's doing: no error either.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from repogym.errors import CommandNotFound
from repogym.sandbox.commandline import first_program

if TYPE_CHECKING:  # the record of a run, as the runners make it
    from repogym.models import CommandResult

NOT_FOUND = 127  # the shell's exit code for a command it did not find (POSIX)
THIS_MACHINE = "this machine"


def missing_program(
    result: CommandResult, command: str, *, found: Callable[[str], bool] | None = None
) -> str | None:
    """The program ``command`` starts with if ``result`` says the shell did not find it
    (exit code 127 and the shell's ``not found`` line for it on stderr), else None.

    A program named with a slash is never missing here (see the module docstring).
    ``found`` tells whether the place the command ran has the program after all (see
    :func:`on_path`); when it says so, the output lied and None is returned.
    """
    if result.exit_code != NOT_FOUND:
        return None
    program = first_program(command)
    if program is None or "/" in program:
        return None
    said = re.compile(rf"^.*: {re.escape(program)}: (command )?not found$", re.MULTILINE)
    if not said.search(result.stderr):
        return None
    if found is not None and found(program):
        return None
    return program


def on_path(path: str) -> Callable[[str], bool]:
    """Whether a program is on ``path`` of this machine, for :func:`missing_program`: a
    PATH with a relative or empty entry (the directory the command ran in) counts as
    having every program, since that part is the submission's."""
    if any(not entry.startswith("/") for entry in path.split(":")):
        return lambda program: True
    return lambda program: shutil.which(program, path=path) is not None


def not_found(program: str, key: str, path: str, where: str = THIS_MACHINE) -> CommandNotFound:
    """The error for ``program``, which the task's ``key`` (``setup``, ``tests.command``,
    ``perf.command``) starts with, missing from ``path`` of ``where``."""
    return CommandNotFound(
        f"{key}: `{program}` was not found on the PATH of {where} (PATH={path}): install "
        "it, or name an environment that has it (environment: in the task, docs/task.md)",
        program=program,
    )


def check(result: CommandResult, key: str, path: str) -> CommandResult:
    """``result`` itself, unless its program was not found on ``path`` of this machine:
    then :class:`CommandNotFound` is raised. (A command run elsewhere, in a container,
    takes :func:`missing_program` with a ``found`` that looks there, and :func:`not_found`
    with ``where`` naming the place.)"""
    program = missing_program(result, result.command, found=on_path(path))
    if program is not None:
        raise not_found(program, key, path)
    return result
