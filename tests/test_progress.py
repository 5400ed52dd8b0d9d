"""A grade tells whoever watches it what it does (issue 10's log): every grader started
and finished in order with its time, and every command the task runs, on a real grade."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import repogym
from repogym import progress
from repogym._demo import EXAMPLES, build_example_repo
from repogym.models import CommandResult, GradeComponent
from tests.support.perfmodes import perf_repo


@dataclass
class Recorder:
    events: list[tuple[str, str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def grader_started(self, name: str) -> None:
        self.events.append(("started", name))

    def grader_finished(self, component: GradeComponent, seconds: float) -> None:
        self.events.append(("finished", component.name))
        self.seconds.append(seconds)

    def command_started(self, command: str, cwd: Path) -> None:
        assert cwd.is_dir()
        self.events.append(("command", command))

    def command_finished(self, result: CommandResult) -> None:
        self.events.append(("done", result.command))


def test_a_grade_tells_its_graders_and_commands_in_order(tmp_path: Path) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    fixed = EXAMPLES / "bugfix" / "solution" / "src" / "slugify" / "core.py"
    (repo / "src" / "slugify" / "core.py").write_text(fixed.read_text())
    recorder = Recorder()
    grading = repogym.grade(repo, progress=recorder)
    names = [c.name for c in grading.result.components]
    graders = [(kind, name) for kind, name in recorder.events if kind in ("started", "finished")]
    assert graders == [(kind, name) for name in names for kind in ("started", "finished")]
    assert len(recorder.seconds) == len(names) and all(s >= 0 for s in recorder.seconds)
    commands = [(kind, cmd) for kind, cmd in recorder.events if kind in ("command", "done")]
    assert commands, "the tests grader runs the task's test command"
    # Each command is told started, then finished, before the next one starts; all inside
    # the tests grader.
    assert commands[0::2] == [("command", cmd) for _, cmd in commands[1::2]]
    first, last = recorder.events.index(commands[0]), recorder.events.index(commands[-1])
    assert recorder.events[first - 1] == ("started", "tests")
    assert recorder.events[last + 1] == ("finished", "tests")
    # Outside a grade nobody is told.
    assert progress.current() is None


def test_a_measured_benchmark_is_told_by_the_task_s_command(tmp_path: Path) -> None:
    # timing: cpu runs the benchmark inside a measurer (a Python script of its own, given
    # on the command line): the log names the task's command, not that script.
    settings = {"timing": "cpu", "runs": 1, "warmup": 0, "min_speedup": 2}
    repo = perf_repo(tmp_path / "repo", {"work": 1000}, {"work": 1000}, settings)
    recorder = Recorder()
    repogym.grade(repo.root, base="main", progress=recorder)
    perf = recorder.events[recorder.events.index(("started", "perf")) :]
    commands = {cmd for kind, cmd in perf if kind in ("command", "done")}
    assert commands == {"python bench.py"}, commands
