"""How a run of chosen test ids is made where the grader tells the runner by its command
(issue 47's reruns): ``node --test``, jest, mocha and ``go test`` (through gotestsum too).
pytest and unittest are told by the grader's own start-up instead
(:mod:`repogym.graders.tests.pytest_guard`, :mod:`repogym.graders.tests.python_site`), and
any other runner by the task's ``tests.rerun_command``.

Each rule keeps the task's command and adds a filter by name, so that a pipe to a JUnit
converter or a ``;`` after the runner still works:

- ``node --test``: ``--test-name-pattern`` after ``--test``, every part of each id (Node 20
  matches a test's own name, not its ``describe`` blocks', and runs a subtest only when its
  parent runs; the others are skipped);
- jest: ``--testNamePattern`` after ``jest``, the full names (the ``describe`` blocks and
  the title, joined by spaces, as jest matches them);
- mocha: ``--grep`` after ``mocha``, the full titles, as mocha matches them;
- ``go test``: ``-run`` in ``GOFLAGS`` (which the ``go`` that gotestsum starts reads as
  well), the top-level tests by name: a subtest runs with its parent.

A filter may let through a test of another file with the same name: only the chosen ids'
outcomes are read. Written by hand: no library makes these filters, and each is two lines
of the runner's documented syntax.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from repogym.junit.testids import file_of

# The runner's word in a shell command: after the start, a space or a path's slash, and
# followed by a space or the end (`npx jest`, `node_modules/.bin/mocha --grep ...`).
_NODE_TEST = re.compile(r"(?:^|(?<=[\s;&|(]))node(?:\s+(?!--test\b)[^\s;&|]+)*\s+--test(?=\s|$)")
_JEST = re.compile(r"(?:^|(?<=[\s/;&|(]))jest(?:\.[cm]?js)?(?=\s|$)")
_MOCHA = re.compile(r"(?:^|(?<=[\s/;&|(]))mocha(?:\.[cm]?js)?(?=\s|$)")
_GO_TEST = re.compile(r"(?:^|(?<=[\s;&|(]))(?:go\s+test|gotestsum)(?=\s|$)")


def _names(ids: Sequence[str]) -> list[list[str]]:
    """Each id's parts after its file, if it names one."""
    return [(i.partition("::")[2] if file_of(i) else i).split("::") for i in ids]


def _alternatives(names: Sequence[str]) -> str:
    """A JavaScript regular expression matching exactly one of ``names``."""
    escaped = (re.sub(r"[\\^$.|?*+()\[\]{}/]", r"\\\g<0>", n) for n in dict.fromkeys(names))
    return "^(?:" + "|".join(escaped) + ")$"


def _after(pattern: re.Pattern[str], option: Callable[[Sequence[str]], str]) -> Rule:
    def rule(command: str, ids: Sequence[str]) -> str:
        found = pattern.search(command)
        assert found is not None
        return f"{command[: found.end()]} {option(ids)}{command[found.end() :]}"

    return rule


def _node(ids: Sequence[str]) -> str:
    # Every part: a subtest runs only when its parent test runs, which the parent's name
    # matching lets it (a test the filter misses is no pass, and at the base no evidence).
    pattern = _alternatives([part for parts in _names(ids) for part in parts])
    return f"--test-name-pattern={shlex.quote(pattern)}"


def _jest(ids: Sequence[str]) -> str:
    pattern = _alternatives([" ".join(parts) for parts in _names(ids)])
    return f"--testNamePattern={shlex.quote(pattern)}"


def _mocha(ids: Sequence[str]) -> str:
    pattern = _alternatives([" ".join(parts) for parts in _names(ids)])
    return f"--grep {shlex.quote(pattern)}"


def _go(command: str, ids: Sequence[str]) -> str:
    tests = [i.partition("::")[2].split("/")[0] for i in ids]  # `pkg::TestA/sub::x`: TestA
    flag = "-run=^(" + "|".join(dict.fromkeys(t for t in tests if t)) + ")$"
    return f'export GOFLAGS="${{GOFLAGS:+$GOFLAGS }}"{shlex.quote(flag)}\n{command}'


Rule = Callable[[str, Sequence[str]], str]
_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = (
    (_NODE_TEST, _after(_NODE_TEST, _node)),
    (_JEST, _after(_JEST, _jest)),
    (_MOCHA, _after(_MOCHA, _mocha)),
    (_GO_TEST, _go),
)


def rule(command: str) -> Rule | None:
    """The rule that makes ``command`` run chosen ids, if the grader knows its runner."""
    for pattern, made in _RULES:
        if pattern.search(command):
            return made
    return None
