"""Hostile and mistaken task files: each is refused with one line naming file, line, key,
value and fix, never a traceback or a hang."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from repogym.errors import TaskError
from repogym.task import load_task, parse_task
from repogym.task._values import TASK_MAX_TIMEOUT
from tests.support.repo import Repo

HEAD = "version: 1\ntype: bugfix\n"
TESTS = HEAD + "tests:\n  command: t {junit}\n  fail_to_pass: [a.py::t]\n"  # key on line 3
PERF = "version: 1\ntype: perf\nperf:\n  command: python bench.py\n  min_speedup: 4\n"
SECONDS = "must be a number of seconds greater than 0 and at most 86400 (one day)"


def file_errors(tmp_path: Path, text: str | bytes) -> list[str]:
    """The lines of the TaskError that loading ``text`` from a real file raises."""
    path = tmp_path / "task.yml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(TaskError) as caught:
        load_task(path)
    prefix = f"{path}:"
    assert all(line.startswith(prefix) for line in caught.value.lines), caught.value.lines
    return [line.removeprefix(prefix) for line in caught.value.lines]


def billion_laughs(levels: int) -> str:
    lines = [HEAD.strip(), "a0: &a0 [x,x,x,x,x,x,x,x,x,x]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines)


# Timeouts and other numbers: finite, and within the documented range.


@pytest.mark.parametrize("section", ["tests", "perf"])
@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (".inf", ".inf"),
        ("-.inf", "-.inf"),
        (".nan", ".nan"),
        ("1.0e+20", "1e+20"),
        ("86401", "86401"),
        ("0", "0"),
        ("1" + "0" * 400, "1" + "0" * 56 + "..."),
    ],
)
def test_timeouts_must_be_finite_and_at_most_a_day(
    tmp_path: Path, section: str, written: str, shown: str
) -> None:
    task = TESTS if section == "tests" else PERF
    assert file_errors(tmp_path, task + f"  timeout: {written}\n") == [
        f"6: `{section}.timeout` = {shown}: {SECONDS}"
    ]


def test_a_timeout_of_one_day_is_accepted() -> None:
    task = parse_task(TESTS + f"  timeout: {TASK_MAX_TIMEOUT}\n")
    assert task.tests is not None and task.tests.timeout == 86_400


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            PERF.replace("min_speedup: 4", "min_speedup: .inf"),
            "5: `perf.min_speedup` = .inf: must be a finite number greater than 1, e.g. `2.5`",
        ),
        (
            PERF + "  noise_floor: .inf\n",
            "6: `perf.noise_floor` = .inf: must be a finite number, at least 1",
        ),
        (
            PERF + "  noise_floor: .nan\n",
            "6: `perf.noise_floor` = .nan: must be a finite number, at least 1",
        ),
        (
            PERF + "grading:\n  pass_threshold: .nan\n",
            "7: `grading.pass_threshold` = .nan: must be a number from 0 to 1",
        ),
        (
            PERF + "grading:\n  pass_threshold: 2\n",
            "7: `grading.pass_threshold` = 2: must be a number from 0 to 1",
        ),
        (
            PERF + "grading:\n  weights:\n    perf: .inf\n",
            "8: `grading.weights.perf` = .inf: must be a finite number greater than 0; "
            "remove the grader's section to stop grading it",
        ),
        (
            PERF + "grading:\n  weights:\n    perf: .nan\n",
            "8: `grading.weights.perf` = .nan: must be a finite number greater than 0; "
            "remove the grader's section to stop grading it",
        ),
    ],
)
def test_other_numbers_must_be_finite(tmp_path: Path, text: str, expected: str) -> None:
    assert file_errors(tmp_path, text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            TESTS + "  timeout: 1e20\n",
            "6: `tests.timeout` = '1e20': should be a number; YAML 1.1 reads `1e20` as a "
            "string: write it as `1.0e+20`",
        ),
        (
            PERF.replace("min_speedup: 4", "min_speedup: 2.5E1"),
            "5: `perf.min_speedup` = '2.5E1': should be a number; YAML 1.1 reads `2.5E1` "
            "as a string: write it as `2.5e+1`",
        ),
        (
            PERF + "  runs: 1e3\n",
            "6: `perf.runs` = '1e3': should be a whole number; write it as `1000`",
        ),
        (
            PERF + "  warmup: 2.0\n",
            "6: `perf.warmup` = 2.0: should be a whole number; write it as `2`",
        ),
        (
            TESTS + "  timeout: '900'\n",
            "6: `tests.timeout` = '900': should be a number; remove the quotes around it",
        ),
    ],
)
def test_numbers_yaml_reads_as_something_else_say_how_to_write_them(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert file_errors(tmp_path, text) == [expected]


def test_the_cli_refuses_an_infinite_timeout_with_exit_2(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {"a.py": "x = 1\n"})
    task = tmp_path / "task.yml"
    task.write_text(TESTS + "  timeout: .inf\n")
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--task", str(task), "--base", "main"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"repogym: error: {task}:6: `tests.timeout` = .inf: {SECONDS}"
    ]


# YAML that only makes trouble in a task file.


@pytest.mark.parametrize("levels", [9, 40])
def test_nested_aliases_are_refused_at_once(tmp_path: Path, levels: int) -> None:
    text = billion_laughs(levels)
    started = time.monotonic()
    lines = file_errors(tmp_path, text)
    # Expanded, 40 levels would never end: a bound far above the real time proves it was
    # not, and holds on a busy machine (issue 8).
    assert time.monotonic() - started < 60
    assert lines == [
        "4: the YAML alias `*a0` is not allowed in a task file; write the value out in full"
    ]


def test_the_cli_refuses_the_billion_laughs_with_exit_2(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {"a.py": "x = 1\n"})
    task = tmp_path / "l.yml"
    task.write_text(billion_laughs(9))
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--task", str(task), "--base", "main"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"repogym: error: {task}:4: the YAML alias `*a0` is not allowed in a task file; "
        "write the value out in full"
    ]


def test_an_anchor_without_alias_is_harmless() -> None:
    task = parse_task(PERF + "setup: &s make\n")
    assert task.setup == "make"


def test_merge_keys_are_refused(tmp_path: Path) -> None:
    assert file_errors(tmp_path, HEAD + "<<: {setup: make}\n") == [
        "3: the key `<<` is read by YAML as a merge key, not a string: a key must be a string "
        "naming a setting; if you meant the string, quote it: `'<<':`"
    ]


def test_deep_nesting_is_refused_without_recursion_error(tmp_path: Path) -> None:
    assert file_errors(tmp_path, HEAD + "setup: " + "[" * 50_000 + "]" * 50_000 + "\n") == [
        "3: values are nested more than 16 levels deep; a task file needs at most 4: "
        "remove the extra brackets or indentation"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            HEAD + "1: 2\n",
            "3: the key `1` is read by YAML as a number, not a string: a key must be a string "
            "naming a setting; if you meant the string, quote it: `'1':`",
        ),
        (
            HEAD + "yes: 2\n",
            "3: the key `yes` is read by YAML as a boolean, not a string: a key must be a "
            "string naming a setting; if you meant the string, quote it: `'yes':`",
        ),
        (
            HEAD + "env:\n  1: a\n",
            "4: the key `1` in `env` is read by YAML as a number, not a string: a key must be a "
            "string naming an environment variable; if you meant the string, quote it: `'1':`",
        ),
        (
            HEAD + "[a]: 1\n",
            "3: a key is a list; a key must be a plain string naming a setting: write it as a "
            "word before the `:`",
        ),
    ],
)
def test_keys_must_be_strings(tmp_path: Path, text: str, expected: str) -> None:
    assert file_errors(tmp_path, text) == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            HEAD.encode() + b"setup: \xff\n",
            "3: not UTF-8 text (byte 0xff: invalid start byte); save the file as UTF-8",
        ),
        (
            HEAD.encode() + b"setup: a\x01\n",
            "3: the control character U+0001 is not allowed in YAML; remove it",
        ),
        (
            HEAD + "---\nsetup: make\n",
            "3: a task file is one YAML document; remove this `---` and what follows, or merge "
            "it into the first",
        ),
        (
            HEAD + "setup: 2024-13-45\n",
            "3: YAML reads `2024-13-45` as a date but cannot make one (month must be in "
            "1..12); fix it, or quote it if you meant a string",
        ),
        (
            HEAD + "setup: 1" + "0" * 5000 + "\n",
            "3: YAML reads `1000000000000000000000000000000000000...` as a number but cannot "
            "make one (Exceeds the limit (4300 digits) for integer string conversion); fix "
            "it, or quote it if you meant a string",
        ),
    ],
)
def test_unreadable_values_are_one_line(tmp_path: Path, text: str | bytes, expected: str) -> None:
    assert file_errors(tmp_path, text) == [expected]


# Messages that name the right value and say what to write.

GRADER_RULE = (
    "a custom grader is `module:Class`, e.g. `tools.graders:NoTodoGrader`: a dotted module "
    "path, a colon and a class name, each name of letters, digits and `_`, not starting with "
    "a digit"
)


@pytest.mark.parametrize("name", ["tools.graders.NoTodo", "a..b:C", "1a:B", "a:B:C", "a:B-2"])
def test_a_bad_custom_grader_name_says_what_a_name_may_hold(tmp_path: Path, name: str) -> None:
    text = PERF + f"grading:\n  graders:\n    - grader: '{name}'\n      role: gate\n"
    assert file_errors(tmp_path, text) == [
        f"8: `grading.graders.0.grader` = {name!r}: {GRADER_RULE}"
    ]


def test_errors_in_grading_graders_have_lines(tmp_path: Path) -> None:
    text = PERF + "grading:\n  graders:\n    - m:G\n    - 3\n    - grader: m:H\n      role: judge\n"
    assert file_errors(tmp_path, text) == [
        "9: `grading.graders.1` = 3: a custom grader is `module:Class`, or a mapping such as "
        "`{grader: module:Class, role: gate}`",
        "11: `grading.graders.2.role` = 'judge': role must be `objective` or `gate`",
    ]


def test_custom_graders_know_their_line() -> None:
    task = parse_task(PERF + "grading:\n  graders:\n    - m:G\n\n    - {grader: 'm:H'}\n")
    assert [grader.line for grader in task.grading.graders] == [8, 10]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            HEAD + "tests:\n  command:\n",
            "4: `tests.command` has no value: give it a string, or remove the key",
        ),
        (
            HEAD + "setup: true\n",
            "3: `setup` = true: should be a string (quote it in YAML)",
        ),
        (
            "version: 1\ntype: perf\nperf:\n  command: x\n",
            "3: `perf.min_speedup` is required; add `min_speedup:` under `perf` (see docs/task.md)",
        ),
        (
            HEAD + "env: {1A: x}\n",
            "3: `env`: '1A' is not an environment variable name: use letters, digits and `_`, "
            "not starting with a digit",
        ),
    ],
)
def test_messages_show_the_value_as_written_and_a_fix(
    tmp_path: Path, text: str, expected: str
) -> None:
    lines = file_errors(tmp_path, text)
    assert lines == [expected]


def test_a_missing_type_lists_the_types() -> None:
    with pytest.raises(TaskError) as caught:
        parse_task("version: 1\nsetup: make\n")
    assert caught.value.lines == (
        ".repogym.yml: `type` is required; add `type:` with one of `bugfix`, `feature`, "
        "`perf`, `refactor`",
    )


def test_a_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "task.yml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TaskError) as caught:
        load_task(path)
    assert caught.value.lines == (
        f"{path}: the task file must be a mapping of keys such as `version: 1` and "
        "`type: bugfix`, one per line, not a list",
    )


# The Python API.


def test_load_task_takes_a_str_or_a_path_like(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "task.yml"
    path.write_text(PERF)

    class PathLike:
        def __fspath__(self) -> str:
            return str(path)

    monkeypatch.chdir(tmp_path)
    assert load_task("task.yml").source == "task.yml"
    assert load_task(str(path)).source == str(path)
    assert load_task(PathLike()).sha256 == load_task(path).sha256
    with pytest.raises(TaskError) as caught:
        load_task("missing.yml")
    assert caught.value.lines == (
        "missing.yml: cannot read the task file: No such file or directory; check the path "
        "and its permissions",
    )


@pytest.mark.parametrize("value", [None, 3, bytearray(b"version: 1\n"), Path("task.yml")])
def test_parse_task_says_what_it_takes(value: object) -> None:
    with pytest.raises(TypeError) as caught:
        parse_task(value)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "parse_task() takes the task file's contents as str or bytes, not "
        f"{type(value).__name__}; use load_task() for a path"
    )
