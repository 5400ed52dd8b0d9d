"""The rules of a task that span its sections, checked once the schema has read it."""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterator

from repogym.models import Role
from repogym.task._runners import runs_pytest, runs_unittest
from repogym.task.schema import BUILTIN_GRADERS, Task

# A command that starts a Python test runner (pytest, py.test, Debian's pytest-3,
# `-m unittest`, `-m xmlrunner`, `-mpytest`) with the environment cleared (`env -i`) or
# ignored (`python -E`, `-I`, `-S`): the grader starts pytest and unittest through
# variables (issue 44), which such a command drops, and pytest then started with no check
# of what it read (issue 44's red team: PASS for a start-up module of the submission's).
_PYTHON = re.compile(r"(?:.*/)?(?:python|pypy)[\d.]*(?:-dbg)?")  # not python-dateutil


def _clears_environment(command: str) -> bool:
    """Whether a word of ``command`` runs ``env`` with ``-i`` (or ``-``, or a long form) or
    Python with ``-E``, ``-I`` or ``-S`` among its options (told from the arguments the
    options before them take); a word with spaces in it (``sh -c '...'``, ``env -S '...'``)
    is read as a command of its own."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for index, word in enumerate(words):
        rest = words[index + 1 :]
        if " " in word.strip() and _clears_environment(word):
            return True
        if word.rsplit("/", 1)[-1] == "env" and _env_clears(rest):
            return True
        if _PYTHON.fullmatch(word) and _python_ignores(rest):
            return True
    return False


# env's options that take the next word as their argument (-S splits it into more words).
_ENV_ARGUMENT = {
    "-u": "",
    "-C": "",
    "-S": "split",
    "--unset": "",
    "--chdir": "",
    "--split-string": "split",
}


def _env_clears(words: list[str]) -> bool:
    taking = None
    for word in words:
        if taking is not None:
            if taking == "split" and _env_clears(shlex.split(word)):
                return True
            taking = None
        elif word == "-" or word.startswith("--ignore-e") or word == "--i":
            return True
        elif word.startswith("--"):
            taking = _ENV_ARGUMENT.get(word)
        elif word.startswith("-"):
            clears, taking = _env_flags(word[1:])
            if clears:
                return True
        elif "=" not in word:
            return False  # the program env runs
    return False


def _env_flags(flags: str) -> tuple[bool, str | None]:
    """Whether a cluster of env's short options clears the environment, and what the next
    word is to it (the argument of its last option: ``split`` for ``-S``), if anything."""
    for at, flag in enumerate(flags):
        if flag == "i":
            return True, None
        if f"-{flag}" in _ENV_ARGUMENT:
            attached = flags[at + 1 :]
            if flag == "S" and attached and _env_clears(shlex.split(attached)):
                return True, None
            return False, None if attached else _ENV_ARGUMENT[f"-{flag}"]
    return False, None


_PYTHON_ARGUMENT = frozenset("XWcmQ")  # python's options that take an argument
_PYTHON_LONG_ARGUMENT = frozenset({"--check-hash-based-pycs"})


def _python_ignores(words: list[str]) -> bool:
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in _PYTHON_LONG_ARGUMENT:
            skip = True
            continue
        if not word.startswith("-") or word in ("-", "--") or word.startswith("--"):
            return False
        for at, flag in enumerate(word[1:]):
            if flag in "EIS":
                return True
            if flag in _PYTHON_ARGUMENT:
                if flag in "cm":
                    return False  # what follows is the program's
                skip = at == len(word) - 2  # the argument is the next word
                break
    return False


def _clearing_commands(task: Task) -> Iterator[tuple[tuple[str, ...], str]]:
    """``tests.command`` and ``tests.rerun_command`` (issue 47's red team) when one starts
    pytest or unittest with the environment cleared or ignored."""
    tests = task.tests
    if tests is None:
        return
    for which, command in (("command", tests.command), ("rerun_command", tests.rerun_command)):
        if command is None or not (runs_pytest(command) or runs_unittest(command)):
            continue
        if _clears_environment(command):
            yield (
                ("tests", which),
                (
                    "starts the test runner with the environment cleared or ignored (`env -i`, "
                    "`python -E`, `-I` or `-S`), which drops what the grader starts it with; "
                    "set what the tests need with `env:` instead"
                ),
            )


def cross_checks(task: Task) -> Iterator[tuple[tuple[str, ...], str]]:
    """Rules that span sections, as (key path, message) pairs."""
    yield from _clearing_commands(task)
    roles = task.builtin_roles()
    custom = task.grading.graders
    if Role.OBJECTIVE not in roles.values() and all(g.role is Role.GATE for g in custom):
        yield (
            (),
            (
                "the task has no objective, so no submission could earn credit: declare "
                "`tests.fail_to_pass` (ids, or `added`), a `perf` section, quality limits on a "
                "`type: refactor` task, or an objective in `grading.graders`"
            ),
        )
    for name in task.grading.weights:
        key = ("grading", "weights", name)
        if roles.get(name) is Role.GATE:
            yield key, f"{name} is a gate in this task and carries no weight; remove the entry"
        elif name in BUILTIN_GRADERS and name not in roles:
            yield (
                key,
                f"this task does not run the {name} grader; remove the entry or add its section",
            )
        elif name not in BUILTIN_GRADERS and not custom:
            guess = difflib.get_close_matches(name, list(roles), n=1)
            hint = f"did you mean `{guess[0]}`?" if guess else "fix the name"
            yield key, f"no grader is called {name!r} (graders: {', '.join(roles)}); {hint}"
