"""The sandbox user's way to the task's programs, judged from the file system
(repogym.run.preflight, issue 20). These compute for a uid that owns nothing here, so they
run as any user; tests/security/test_preflight.py grades through it as root."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.run.preflight import EXECUTE, READ, Obstacle, obstacle, problems
from repogym.task import parse_task

UID = 59800  # a sandbox uid: owns nothing, in no group of these files
OFF = ", or REPOGYM_SANDBOX=off to run the commands as root (see docs/security.md)"


@pytest.fixture
def root() -> Iterator[Path]:
    """An open directory (pytest's own is 0700 on the way, which would stop them all)."""
    path = Path(tempfile.mkdtemp(prefix="repogym-preflight-"))
    path.chmod(0o755)
    yield path
    for directory, dirs, _ in os.walk(path):
        for name in dirs:
            Path(directory, name).chmod(0o755)
    shutil.rmtree(path)


def program(path: Path, text: str = "\x7fELF") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_directory_without_search_for_others_stops_the_way(root: Path) -> None:
    python = program(root / "home" / "bin" / "python")
    assert obstacle(str(python), UID, EXECUTE) is None
    (root / "home").chmod(0o700)
    assert obstacle(str(python), UID, EXECUTE) == Obstacle(str(root / "home"), 0o700, "x")
    (root / "home").chmod(0o701)  # going through is all it takes, not listing
    assert obstacle(str(python), UID, EXECUTE) is None


def test_the_program_itself_must_be_executable_and_a_script_readable(root: Path) -> None:
    python = program(root / "python")
    python.chmod(0o750)
    assert obstacle(str(python), UID, EXECUTE) == Obstacle(str(python), 0o750, "x")
    python.chmod(0o711)
    assert obstacle(str(python), UID, EXECUTE) is None
    assert obstacle(str(python), UID, READ) == Obstacle(str(python), 0o711, "r")


def test_links_are_followed_to_where_they_lead(root: Path) -> None:
    real = program(root / "locked" / "python3.11")
    (root / "bin").mkdir()
    (root / "bin" / "python").symlink_to(root / "locked" / "python3.11")
    (root / "bin" / "py").symlink_to("python")  # a relative link to the link
    (root / "locked").chmod(0o700)
    expected = Obstacle(str(root / "locked"), 0o700, "x")
    assert obstacle(str(root / "bin" / "py"), UID, EXECUTE) == expected
    (root / "locked").chmod(0o711)
    assert obstacle(str(root / "bin" / "py"), UID, EXECUTE) is None
    assert obstacle(str(real), UID, EXECUTE) is None


def test_a_missing_path_is_no_obstacle_of_ours(root: Path) -> None:
    assert obstacle(str(root / "nothing" / "python"), UID, EXECUTE) is None


def task(command: str, setup: str | None = None) -> str:
    lines = ["version: 1", "type: bugfix"]
    if setup:
        lines.append(f"setup: {json.dumps(setup)}")
    lines += ["tests:", f"  command: {json.dumps(command)}", "  fail_to_pass: [t.py::test_a]"]
    return "\n".join(lines) + "\n"


def test_the_program_pathfinds_first_must_be_the_one_the_sandbox_user_runs(root: Path) -> None:
    locked = program(root / "locked" / "bin" / "python")
    later = program(root / "open" / "bin" / "python")
    (root / "locked").chmod(0o700)
    path = f"{locked.parent}:{later.parent}"
    lines = problems(parse_task(task("python -m pytest {junit}")), path, {}, UID)
    assert lines == [
        f"tests.command: the sandbox user (uid {UID}) would run {later}, not {locked} that "
        f"PATH finds first: {root / 'locked'} is mode 0700; run `chmod o+x {root / 'locked'}`" + OFF
    ]
    alone = problems(parse_task(task("python -m pytest {junit}")), str(locked.parent), {}, UID)
    assert alone == [
        f"tests.command: the sandbox user (uid {UID}) cannot reach {locked}: {root / 'locked'} "
        f"is mode 0700; run `chmod o+x {root / 'locked'}`" + OFF
    ]


def test_one_line_for_the_commands_one_obstacle_stops(root: Path) -> None:
    locked = program(root / "locked" / "python")
    (root / "locked").chmod(0o700)
    loaded = parse_task(task("python -m pytest {junit}", setup="python -m pip install ."))
    [line] = problems(loaded, str(locked.parent), {}, UID)
    assert line.startswith(f"setup and tests.command: the sandbox user (uid {UID}) cannot reach")


def test_a_scripts_interpreter_must_be_reachable_too(root: Path) -> None:
    python = program(root / "locked" / "python")
    script = program(root / "bin" / "pytest", f"#!{python}\nimport pytest\n")
    (root / "locked").chmod(0o700)
    [line] = problems(parse_task(task("pytest {junit}")), str(script.parent), {}, UID)
    assert line == (
        f"tests.command: the sandbox user (uid {UID}) cannot reach {script} (its #! "
        f"interpreter {python}): {root / 'locked'} is mode 0700; run "
        f"`chmod o+x {root / 'locked'}`" + OFF
    )
    (root / "locked").chmod(0o711)
    script.chmod(0o711)  # runs, but the interpreter cannot read it
    [line] = problems(parse_task(task("pytest {junit}")), str(script.parent), {}, UID)
    assert line.endswith(f"{script} is mode 0711; run `chmod o+r {script}`" + OFF)


def test_what_is_not_looked_for(root: Path) -> None:
    locked = program(root / "locked" / "tool")
    (root / "locked").chmod(0o700)
    path = str(locked.parent)
    for command in (
        "./tool {junit}",
        "cd sub && tool {junit}",
        "$TOOL {junit}",
        "nosuchtool {junit}",
    ):
        assert problems(parse_task(task(command)), path, {}, UID) == [], command
    # Named by its absolute path, it is checked as it is.
    [line] = problems(parse_task(task(f"{locked} {{junit}}")), path, {}, UID)
    assert f"cannot reach {locked}: " in line


def test_the_directory_of_the_copies(root: Path) -> None:
    copies = root / "locked" / "copies"
    copies.mkdir(parents=True)
    (root / "locked").chmod(0o700)
    lines = problems(parse_task(task("true {junit}")), "/usr/bin", {str(copies): "the copies"}, UID)
    assert lines == [
        f"the sandbox user (uid {UID}) cannot reach {copies}, where the copies are made: "
        f"{root / 'locked'} is mode 0700; run `chmod o+x {root / 'locked'}`" + OFF
    ]


def test_a_task_that_runs_no_command_needs_no_way(root: Path) -> None:
    copies = root / "locked" / "copies"
    copies.mkdir(parents=True)
    (root / "locked").chmod(0o700)
    refactor = parse_task("version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n")
    assert problems(refactor, "/usr/bin", {str(copies): "the copies"}, UID) == []
