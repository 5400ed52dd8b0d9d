"""As root, a sandbox user that cannot reach the task's python stops the grade before it
starts, with the fix (repogym.run.preflight, issue 20). Before: every test failed with
``Permission denied`` (FAIL 0.000, the change blamed), or the shell ran another python
found later on the PATH, with other packages, without a word."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.sandbox import landlock, seal
from repogym.sandbox import users as _sandbox
from tests.security._harness import BUGFIX_TASK, EXAMPLES, Case, Graded
from tests.security._perf import SMALL_PERF

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a sandbox user needs root")
SOLUTION = "src/slugify/core.py"
OFF = ", or REPOGYM_SANDBOX=off to run the commands as root (see docs/security.md)"


@pytest.fixture
def places(case: Case) -> Iterator[tuple[Path, Path]]:
    """Two directories that hold a ``gradepython`` (the grader's python, by a script):
    ``locked`` (0700, as a ``/root`` is) and ``open``; in a directory others go through."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-preflight-"))
    holder.chmod(0o711)
    found = []
    for name in ("locked", "open"):
        program = holder / name / "bin" / "gradepython"
        program.parent.mkdir(parents=True)
        program.write_text(f'#!/bin/sh\nexec {case.python} "$@"\n')
        program.chmod(0o755)
        found.append(holder / name)
    found[0].chmod(0o700)
    yield found[0], found[1]
    found[0].chmod(0o755)
    shutil.rmtree(holder)


def task_on(path: str) -> str:
    """examples/bugfix's task, its tests run by ``gradepython`` on ``path``."""
    command = "  command: python -m pytest"
    assert command in BUGFIX_TASK
    task = BUGFIX_TASK.replace(command, "  command: gradepython -m pytest")
    return task + f"env: {json.dumps({'PATH': path})}\n"


def solved(case: Case, path: str) -> None:
    case.base(task=task_on(path))
    case.submit({SOLUTION: (EXAMPLES / "bugfix" / "solution" / SOLUTION).read_text()})


def verdict(graded: Graded) -> str:
    """The summary line, ``PASS 1.000 (...)``."""
    return next(line for line in graded.stdout.splitlines() if line.startswith(("PASS", "FAIL")))


def test_a_python_out_of_the_sandbox_users_reach_stops_the_grade_with_the_fix(
    case: Case, places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    locked, _ = places
    solved(case, f"{locked}/bin:/usr/bin:/bin")
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert graded.stderr.splitlines() == [
        f"repogym: error: tests.command: the sandbox user (uid {_sandbox.first_uid()}) cannot "
        f"reach {locked}/bin/gradepython: {locked} is mode 0700; run `chmod o+x {locked}`" + OFF
    ]
    assert graded.stdout == ""  # no FAIL line, no table
    assert graded.report is not None and graded.report["error"]["kind"] == "usage"  # type: ignore[index]
    assert not graded.problems("", verdict=False)  # and nothing ran, nothing was left
    # Each way out it names grades the change.
    monkeypatch.setenv("REPOGYM_SANDBOX", "off")
    assert verdict(case.grade()).startswith("PASS 1.000"), graded.output
    monkeypatch.delenv("REPOGYM_SANDBOX")
    locked.chmod(0o701)
    again = case.grade()
    assert again.returncode == 0 and verdict(again).startswith("PASS 1.000"), again.output


def test_a_python_earlier_on_the_path_out_of_its_reach_is_not_silently_passed_over(
    case: Case, places: tuple[Path, Path]
) -> None:
    locked, open_ = places
    solved(case, f"{locked}/bin:{open_}/bin:/usr/bin:/bin")
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert graded.stderr.splitlines() == [
        f"repogym: error: tests.command: the sandbox user (uid {_sandbox.first_uid()}) would "
        f"run {open_}/bin/gradepython, not {locked}/bin/gradepython that PATH finds first: "
        f"{locked} is mode 0700; run `chmod o+x {locked}`" + OFF
    ]
    assert graded.stdout == ""


def test_a_python_it_reaches_grades_as_before(case: Case, places: tuple[Path, Path]) -> None:
    _, open_ = places
    solved(case, f"{open_}/bin:/usr/bin:/bin")
    graded = case.grade()
    assert graded.returncode == 0 and verdict(graded).startswith("PASS 1.000"), graded.output


def test_copies_under_a_0700_directory_are_in_a_sealed_commands_reach(
    case: Case, places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sealed (issue 43), the view is made by root: the directories above a copy are the
    view's, open to all, so no one needs to open a home directory to others."""
    if seal.unavailable() is not None:
        pytest.skip(f"commands run unsealed here: {seal.unavailable()}")
    locked, open_ = places
    (locked / "copies").mkdir()
    monkeypatch.setenv("REPOGYM_COPIES", str(locked / "copies"))
    solved(case, f"{open_}/bin:/usr/bin:/bin")
    graded = case.grade()
    assert graded.returncode == 0 and verdict(graded).startswith("PASS 1.000"), graded.output


@pytest.mark.parametrize(
    "mode",
    [
        "off",
        pytest.param(
            "landlock",
            marks=pytest.mark.skipif(
                landlock.unavailable() is not None, reason=f"{landlock.unavailable()}"
            ),
        ),
    ],
)
def test_copies_out_of_the_sandbox_users_reach_stop_an_unsealed_grade(
    case: Case, places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Unsealed, or confined by Landlock (no view is made for the command): the way to
    the copies is the machine's, and the preflight names what to open."""
    locked, open_ = places
    (locked / "copies").mkdir()
    monkeypatch.setenv("REPOGYM_COPIES", str(locked / "copies"))
    monkeypatch.setenv(seal.SWITCH, mode)
    solved(case, f"{open_}/bin:/usr/bin:/bin")
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert graded.stderr.splitlines() == [
        f"repogym: error: the sandbox user (uid {_sandbox.first_uid()}) cannot reach "
        f"{locked}/copies, where the copies are made: {locked} is mode 0700; run "
        f"`chmod o+x {locked}`" + OFF
    ]


def test_a_measurer_out_of_the_sandbox_users_reach_stops_the_grade_with_the_fix(
    own_case: Case,
) -> None:
    # issue 45: the grader's Python starts the benchmark of `timing: cpu`; from a venv
    # the sandbox user cannot enter, every run ended `Permission denied` (exit 126) and
    # the change was graded FAIL 0.000. The benchmark itself runs on a Python in reach.
    case = own_case
    python = Path(sys.base_prefix, "bin", "python3")
    task = SMALL_PERF["task"].replace("timing: wall", "timing: cpu")
    case.base(
        task=task.replace("command: python ", f"command: {python} "), files=SMALL_PERF["files"]
    )
    case.submit({"src/work.py": SMALL_PERF["files"]["src/work.py"] + "\n"})
    venv = case.python.parent.parent
    venv.chmod(0o700)
    graded = case.grade()
    assert graded.returncode == 2, graded.output
    assert graded.stderr.splitlines() == [
        f"repogym: error: perf (timing: cpu, measured by {case.python}): the sandbox user "
        f"(uid {_sandbox.first_uid()}) cannot reach {case.python}: {venv} is mode 0700; run "
        f"`chmod o+x {venv}`" + OFF
    ]
    assert not graded.problems("", verdict=False)
    venv.chmod(0o755)  # the way it names: the benchmark is measured, the change graded
    graded = case.grade()
    report = graded.report or {}
    [perf] = [c for c in report.get("components", []) if c["name"] == "perf"]  # type: ignore[union-attr]
    assert perf["details"]["speedup"] > 0, graded.output
