"""The Action's log while it grades: a group per grader, its commands with their timings,
and "still running" lines while a command runs, from a real grade."""

from __future__ import annotations

import io
import queue
import threading
from pathlib import Path

import repogym
from repogym._demo import build_example_repo
from repogym.progress import reporting
from repogym.run.host import Runner
from repogym_action.commands import Commands
from repogym_action.log import LogProgress
from tests.action.logs import run_log


class Lines(Commands):
    """The log's lines, one per item, and each handed to ``put``."""

    def __init__(self, put: object = None) -> None:
        self.stream = io.StringIO()
        super().__init__(self.stream)
        self._put = put

    def _write(self, text: str) -> None:
        super()._write(text)
        if callable(self._put):
            self._put(text.removesuffix("\n"))

    @property
    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()


def test_a_grade_logs_a_group_per_grader_with_its_commands(tmp_path: Path) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    out = Lines()
    progress = LogProgress(out)
    grading = repogym.grade(repo, progress=progress)
    lines = out.lines
    names = [c.name for c in grading.result.components]
    assert [line for line in lines if line.startswith("::group::")] == [
        f"::group::repogym: {name}" for name in names
    ]
    assert lines.count("::endgroup::") == len(names)
    start = lines.index("::group::repogym: tests")
    tests = lines[start : lines.index("::endgroup::", start)]
    assert tests[1].startswith("$ python -m pytest")
    assert tests[2].startswith("  exit code ")
    assert tests[-1].startswith("tests: ") and tests[-1].endswith(" s")
    assert {name for name, _, _ in run_log(out.stream.getvalue())} == {"group", "endgroup"}


def test_a_name_or_command_that_looks_like_a_command_runs_none() -> None:
    """A custom grader's name and a task's command are the base's, yet no command either
    (issue 19): the progress writes through Commands, which makes every text inert."""
    out = Lines()
    progress = LogProgress(out)
    progress.grader_started("x ##[set-output name=passed;]true")
    progress.command_started("echo '\n::add-mask::x' ##[warning]y", Path())
    progress.close()
    assert run_log(out.stream.getvalue()) == [
        ("group", {}, "repogym: x ##\u200b[set-output name=passed;]true"),
        ("endgroup", {}, ""),
    ]


def test_a_long_command_is_said_to_be_still_running(tmp_path: Path) -> None:
    said: queue.Queue[str] = queue.Queue()
    progress = LogProgress(Lines(said.put), every=0.01)
    release = tmp_path / "release"
    # The command waits for the test to have seen a progress line, then ends.
    command = f"while [ ! -e {release} ]; do :; done"

    def run() -> None:
        with reporting(progress):
            Runner(sandbox=False).run(command, tmp_path, timeout=60)

    thread = threading.Thread(target=run)
    thread.start()
    assert said.get(timeout=30) == f"$ {command}"
    line = said.get(timeout=30)
    assert line.startswith("  still running after ") and line.endswith(f"s: {command}")
    release.touch()
    thread.join(timeout=60)
    while not line.startswith("  exit code"):
        line = said.get(timeout=30)
    assert line.startswith("  exit code 0 after ")
    progress.close()
