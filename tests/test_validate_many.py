"""``repogym validate --tasks`` (issue 23) end to end: real repositories, real pytest
runs, the command as a process; the same lines from one worker and from two, a bad line
as a task with an error, a resumed run, every usage error a line of its own; and
``validate_many`` from Python, a perf task's validation counted as one that runs alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym._demo import build_example_repo
from repogym.batch import Local, validate_many
from repogym.batch.lines import line_of
from repogym.batch.validations import ValidationJob
from repogym.sandbox.reaper import alive
from repogym.sandbox.scratch import RAM, TAGGED
from tests.support.batching import (
    assert_alone,
    comparable,
    lines_of,
    make_perf_repo,
    make_tasks,
    run_repogym,
)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tasks(tmp_path_factory.mktemp("tasks"))


def problems(line: dict[str, object]) -> list[str]:
    findings = line["findings"]
    assert isinstance(findings, list)
    return [f["text"] for f in findings if f["status"] == "problem"]


def test_one_worker_and_two_give_the_same_lines(tasks: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first = run_repogym("validate", "--tasks", tasks, "--output", one, "--jobs", "1")
    second = run_repogym("validate", "--tasks", tasks, "-o", two, "-j", "2")
    assert first.returncode == second.returncode == 1, second.stderr
    by_one, by_two = lines_of(one), lines_of(two)
    assert {i: comparable(line) for i, line in by_one.items()} == {
        i: comparable(line) for i, line in by_two.items()
    }
    assert {i: line["valid"] for i, line in by_two.items()} == {
        "ref": True,
        "patch": True,
        "fixed at the base": False,
        "typo": False,
        "no base": False,
        "no patch": False,
        "repeat alone": False,
        "8": False,
    }
    for valid in ("ref", "patch"):
        assert problems(by_two[valid]) == [] and "error" not in by_two[valid]
        assert set(by_two[valid]["timings"]) == {"started_at", "prepare", "validate", "total"}
        assert by_two[valid]["findings"][-1]["text"].startswith("the reference solution passes")
    assert problems(by_two["fixed at the base"])[0].startswith(
        "the empty submission scores 1.000, not 0"
    )
    assert problems(by_two["typo"]) == [
        "tests: tests/test_slugfy.py is named by a test id but exists neither at the base "
        "nor among the hidden tests; fix the id or commit the file"
    ]
    errors = {i: line["error"]["message"] for i, line in by_two.items() if "error" in line}
    assert errors == {
        "no base": "`base` 'no-such-ref' is no commit of the repository",
        "no patch": "`solution` no-such.patch: no such patch file, and no commit of that "
        "name; pass an existing patch file or a branch, tag or sha",
        "repeat alone": "line 7: `repeat`: 3 needs `solution`: name the reference solution "
        "to grade that many times",
        "8": errors["8"],
    }
    assert errors["8"].startswith("line 8: not JSON (")
    summary = second.stdout.splitlines()
    for row in (
        "tasks                   8",
        "valid                   2",
        "invalid                 2",
    ):
        assert row in summary
    assert "errors                  4" in summary
    assert "repogym validate: 8 tasks" in second.stderr.splitlines()


def test_all_valid_is_exit_0_and_a_run_resumes(tmp_path: Path) -> None:
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    tasks, output = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text(json.dumps({"repo": "bugfix", "base": "main", "id": "plain"}) + "\n")
    done = run_repogym("validate", "--tasks", tasks, "-o", output)
    assert done.returncode == 0, done.stdout + done.stderr
    more = {"repo": "bugfix", "base": "main", "solution": "submission", "repeat": 2}
    with tasks.open("a") as lines:
        lines.write(json.dumps({**more, "id": "repeated"}) + "\n")
    done = run_repogym("validate", "--tasks", tasks, "-o", output, "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "repogym validate: 2 tasks, 1 done before (--resume)" in done.stderr
    by_id = lines_of(output)
    assert set(by_id) == {"plain", "repeated"}
    assert by_id["repeated"]["valid"] is True
    assert "no test outcome changed over 2 runs" in [
        f["text"] for f in by_id["repeated"]["findings"]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tasks", "{tasks}", "-o", "{out}", "--base", "main", "-C", "."],
            "repogym validate: --tasks takes each task's repo, base, task, hidden, solution "
            "and repeat from its line: drop --base, -C",
        ),
        (
            ["--tasks", "{tasks}"],
            "repogym validate: --tasks needs --output RESULTS.jsonl, where each task's result "
            "goes as it ends",
        ),
        (
            ["--jobs", "2", "--resume"],
            "repogym validate: --jobs, --resume need --tasks TASKS.jsonl, a file of tasks to "
            "validate, one a line",
        ),
        (
            ["--tasks", "{tasks}", "-o", "{out}", "--jobs", "0"],
            "repogym validate: --jobs must be at least 1, not 0",
        ),
        (
            ["--tasks", "{tasks}", "-o", "{out}", "--jobs", "2", "--ray", "auto"],
            "repogym validate: --jobs and --ray do not go together: choose one",
        ),
        (
            ["--tasks", "{tmp}/none.jsonl", "-o", "{out}"],
            "{tmp}/none.jsonl: no such task file; write one task (a JSON object) a line",
        ),
        (
            ["--tasks", "{twice}", "-o", "{out}"],
            "{twice}: line 2: id 'a' is 1's too; give each task an id of its own",
        ),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    tasks, twice = tmp_path / "tasks.jsonl", tmp_path / "twice.jsonl"
    tasks.write_text(json.dumps({"repo": "r", "base": "main"}) + "\n")
    twice.write_text((json.dumps({"repo": "r", "base": "main", "id": "a"}) + "\n") * 2)
    names = {"tasks": tasks, "twice": twice, "out": tmp_path / "out.jsonl", "tmp": tmp_path}
    done = run_repogym("validate", *(arg.format(**names) for arg in args))
    assert done.returncode == 2
    assert done.stderr == f"repogym: error: {message.format(**names)}\n"
    assert not (tmp_path / "out.jsonl").exists()


def test_validate_many_from_python_and_a_perf_task_is_run_alone(tmp_path: Path) -> None:
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    build_example_repo("perf", tmp_path / "perf", solution=False)
    root = str(tmp_path)
    assert line_of(ValidationJob, {"repo": "perf", "base": "main"}, 1, root).perf is True
    assert line_of(ValidationJob, {"repo": "bugfix", "base": "main"}, 1, root).perf is False
    tasks = [
        {"repo": "bugfix", "base": "main", "id": "bugfix"},
        {"repo": "bugfix", "base": "submission"},
        ["not", "an", "object"],
    ]
    lines = {line["id"]: line for line in validate_many(tasks, executor=Local(2), root=root)}
    assert lines["bugfix"]["valid"] is True
    assert lines["2"]["valid"] is False and problems(lines["2"])
    assert lines["3"]["error"]["message"] == "line 3: a task is a JSON object, not a list"


def test_a_perf_task_is_validated_alone(tmp_path: Path) -> None:
    """Its benchmark, timed for the empty submission, never runs beside other work; and
    the trees its worker made (the benchmark's baseline, in /dev/shm) do not outlive the
    batch, although a worker ends without its exit handlers (they did, before)."""
    before = {entry.name for entry in Path(RAM).iterdir()}
    make_perf_repo(tmp_path / "perf")
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    lines = [{"repo": "bugfix", "base": "main", "id": f"b{n}"} for n in range(3)]
    lines.insert(1, {"repo": "perf", "base": "main", "id": "perf"})
    tasks, output = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_repogym("validate", "--tasks", tasks, "-o", output, "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = lines_of(output)
    assert "the empty submission scores 0" in by_id["perf"]["findings"][-1]["text"]
    spans = {
        i: (line["timings"]["started_at"], line["timings"]["started_at"] + line["timings"]["total"])
        for i, line in by_id.items()
    }
    assert_alone(spans, "perf")
    left = [
        name
        for name in {entry.name for entry in Path(RAM).iterdir()} - before
        if (tagged := TAGGED.match(name)) is not None and not alive(int(tagged[2]))
    ]
    assert left == [], left
