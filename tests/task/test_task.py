from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from repogym.errors import TaskError
from repogym.models import Role
from repogym.task import load_task, parse_task

FULL = b"""\
version: 1
type: bugfix
setup: pip install -e .
tests:
  command: pytest -q -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: [tests/test_parse.py::test_unicode]
  pass_to_pass: [tests/test_parse.py::test_ascii]
  hidden: .repogym/hidden
  timeout: 900
  partial_credit: true
  require_all_pass_to_pass: false
perf:
  command: python bench.py
  timing: wall
  runs: 5
  noise_floor: 1.15
  min_speedup: 4
constraints:
  protected: [tests/**, .github/**]
  allowed_files: [src/**]
  max_files_changed: 10
  max_lines_changed: 400
  forbidden_patterns: ['breakpoint\\(']
  required_patterns: ['def parse_unicode']
  paths: [src/**/*.py]
  max_function_length: 60
  max_cyclomatic_complexity: 12
grading:
  weights: {tests: 0.8, perf: 0.2}
  pass_threshold: 1.0
  graders: ['tools.graders:NoTodoGrader']
"""


def errors(text: str) -> list[str]:
    with pytest.raises(TaskError) as caught:
        parse_task(text.encode())
    return list(caught.value.lines)


def test_the_design_example_loads_with_every_value() -> None:
    task = parse_task(FULL)
    assert task.type == "bugfix"
    assert task.tests is not None and task.perf is not None
    assert task.tests.fail_to_pass == ("tests/test_parse.py::test_unicode",)
    assert task.tests.hidden == ".repogym/hidden"
    assert task.perf.min_speedup == 4.0 and task.perf.warmup == 1
    assert task.constraints.forbidden_patterns == ("breakpoint\\(",)
    assert task.grading.weights == {"tests": 0.8, "perf": 0.2}
    assert task.grading.graders[0].grader == "tools.graders:NoTodoGrader"
    assert task.grading.graders[0].role is Role.OBJECTIVE
    assert task.sha256 == hashlib.sha256(FULL).hexdigest()
    assert task.builtin_roles() == {
        "constraints": Role.GATE,
        "tests": Role.OBJECTIVE,
        "quality": Role.GATE,
        "perf": Role.OBJECTIVE,
    }


def test_defaults_are_documented_values() -> None:
    task = parse_task(
        b"version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass: [a.py::t]\n"
    )
    assert task.tests is not None
    assert task.tests.partial_credit is True
    assert task.tests.require_all_pass_to_pass is False
    assert task.tests.timeout == 900
    assert task.grading.pass_threshold == 0.0
    assert task.grading.weights == {}


def test_roles_follow_the_spec() -> None:
    regression_only = parse_task(
        b"version: 1\ntype: refactor\ntests:\n  command: t {junit}\n  pass_to_pass: [a.py::t]\n"
        b"constraints:\n  max_function_length: 10\n"
    )
    assert regression_only.builtin_roles() == {
        "constraints": Role.GATE,
        "tests": Role.GATE,
        "quality": Role.OBJECTIVE,
    }
    feature = parse_task(
        b"version: 1\ntype: feature\ntests:\n  command: t {junit}\n  fail_to_pass: [a.py::t]\n"
        b"constraints:\n  max_cyclomatic_complexity: 3\n"
    )
    assert feature.builtin_roles()["quality"] is Role.GATE
    custom = parse_task(
        b"version: 1\ntype: feature\ngrading:\n  graders: [{grader: 'm:G', role: gate}, 'm:H']\n"
    )
    assert [g.role for g in custom.grading.graders] == [Role.GATE, Role.OBJECTIVE]


def test_unknown_key_is_named_with_a_suggestion_and_line() -> None:
    lines = errors("version: 1\ntype: perf\nperf:\n  command: x\n  min_spedup: 4\n")
    assert ".repogym.yml:5: unknown key `perf.min_spedup`; did you mean `min_speedup`?" in lines


def test_unknown_top_level_key() -> None:
    assert errors("version: 1\ntype: bugfix\ntest:\n  command: x\n")[0] == (
        ".repogym.yml:3: unknown key `test`; did you mean `tests`?"
    )


def test_min_speedup_must_exceed_noise_floor() -> None:
    (line,) = errors("version: 1\ntype: perf\nperf:\n  command: x\n  min_speedup: 1.1\n")
    assert line.startswith(".repogym.yml:3: `perf`:")
    assert "`min_speedup` (1.1) must be greater than `noise_floor` (1.15)" in line


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (
            "  runs: fast\n",
            ".repogym.yml:6: `perf.runs` = 'fast': should be a whole number of pairs (1 to "
            "1000) or `auto`",
        ),
        ("  runs: auto\n  max_runs: 3\n", ".repogym.yml:7: `perf.max_runs` = 3: should be"),
        (
            "  max_seconds: 60\n",
            ".repogym.yml:3: `perf`: `max_seconds` caps `runs: auto` only: set `runs: auto`, "
            "or remove `max_seconds`",
        ),
        (
            "  measure: peak_memory\n  timing: cpu\n",
            ".repogym.yml:3: `perf`: `timing` has no meaning with `measure: peak_memory`",
        ),
        (
            "  timing: cycles\n",
            ".repogym.yml:6: `perf.timing` = 'cycles': should be 'wall', 'reported', 'cpu' or "
            "'instructions'",
        ),
    ],
)
def test_perf_modes_and_auto_runs_are_checked(lines: str, said: str) -> None:
    (line,) = errors(f"version: 1\ntype: perf\nperf:\n  command: x\n  min_speedup: 2\n{lines}")
    assert line.startswith(said), line


def test_perf_modes_and_auto_runs_load() -> None:
    task = parse_task(
        "version: 1\ntype: perf\nperf:\n  command: x\n  min_speedup: 2\n  runs: auto\n"
        "  max_runs: 12\n  max_seconds: 90\n  measure: peak_memory\n"
    )
    assert task.perf is not None
    assert (task.perf.runs, task.perf.max_runs, task.perf.max_seconds) == ("auto", 12, 90)
    assert task.perf.auto and task.perf.first_runs == 5 and task.perf.wrapped == "peak_memory"


def test_bad_regex_is_caught_at_load() -> None:
    (line,) = errors(
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n"
        "  forbidden_patterns: ['ok', 'print(']\n"
    )
    assert line.startswith(".repogym.yml:5: `constraints.forbidden_patterns`")
    assert "regex 'print(' does not compile" in line


def test_bad_glob_is_caught_at_load() -> None:
    (line,) = errors(
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n  paths: ['../x']\n"
    )
    assert "glob '../x' must be a relative POSIX path" in line


def test_invalid_gitignore_glob() -> None:
    (line,) = errors(
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n  protected: ['!']\n"
    )
    assert "not a valid gitignore-style pattern" in line


def test_wrong_types_say_what_is_expected() -> None:
    lines = errors(
        "version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass: a.py::t\n"
        "  partial_credit: maybe\n  timeout: -3\n"
    )
    assert lines == [
        ".repogym.yml:5: `tests.fail_to_pass` = 'a.py::t': should be a list of test ids, e.g. "
        "`[a, b]`, or `added` (the tests the pull request adds, which must fail without its "
        "change)",
        ".repogym.yml:6: `tests.partial_credit` = 'maybe': should be `true` or `false`",
        ".repogym.yml:7: `tests.timeout` = -3: must be a number of seconds greater than 0 "
        "and at most 86400 (one day)",
    ]


def test_type_must_be_known() -> None:
    assert errors("version: 1\ntype: bugfx\n") == [
        ".repogym.yml:2: `type` = 'bugfx': should be 'bugfix', 'feature', 'perf' or 'refactor'"
    ]


def test_version_is_required() -> None:
    assert errors("type: bugfix\n")[0] == ".repogym.yml: `version` is required; add `version: 1`"


def test_yaml_syntax_error_names_the_line() -> None:
    (line,) = errors("version: 1\ntype: bugfix\ntests: [\n")
    assert line.startswith(".repogym.yml:4: not valid YAML:")


def test_duplicate_keys_are_errors() -> None:
    assert errors("version: 1\ntype: bugfix\ntype: perf\n") == [
        ".repogym.yml:3: key `type` appears twice; keep one"
    ]


def test_not_a_mapping() -> None:
    (line,) = errors("- a\n- b\n")
    assert "must be a mapping" in line


def test_a_task_without_objective_is_rejected() -> None:
    (line,) = errors(
        "version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  pass_to_pass: [a.py::t]\n"
    )
    assert "the task has no objective" in line


def test_tests_need_the_junit_placeholder_and_ids() -> None:
    lines = errors("version: 1\ntype: bugfix\ntests:\n  command: pytest\n")
    assert any("must contain {junit}" in line for line in lines)
    lines = errors("version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n")
    assert any("declare `fail_to_pass` or `pass_to_pass`" in line for line in lines)


def test_an_id_in_both_lists_is_rejected() -> None:
    (line,) = errors(
        "version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n"
        "  fail_to_pass: [a.py::t]\n  pass_to_pass: [a.py::t]\n"
    )
    assert "in both fail_to_pass and pass_to_pass" in line


# Names of real tests (issue 8): a Node router's, a path library's, a Windows one's.
REAL_NAMES = (
    "does not map // when ignoreTrailingSlash is true",
    "/ matches root",
    "./relative",
    "C:\\x",
    "..",
    "resolves ../up.js from a.js",
)


def test_an_id_is_a_name_and_only_a_file_is_a_path() -> None:
    items = "".join(f"    - '{name}'\n" for name in REAL_NAMES)
    task = parse_task(
        "version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass:\n"
        f"{items}    - tests/test_a.py::test_b\n    - example.com/calc::TestDivide/by_zero\n"
    )
    assert task.tests is not None
    assert task.tests.fail_to_pass[: len(REAL_NAMES)] == REAL_NAMES
    # Only the file is protected and put back before the run: names are no paths.
    assert task.tests.test_files() == ("tests/test_a.py",)
    assert set(task.protected_files()) == {".repogym.yml", "tests/test_a.py"}


@pytest.mark.parametrize(
    "test_id",
    # The last is a whole file, an id without `::`.
    ["./tests/a.py::t", "/abs/a.py::t", "tests//a.py::t", "../a.py::t", "C:\\a.py::t", "./a.js"],
)
def test_the_file_of_an_id_is_checked_at_the_line_of_its_item(test_id: str) -> None:
    lines = errors(
        "version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass:\n"
        f"    - tests/ok.py::t\n    - '{test_id}'\n  pass_to_pass: [tests/ok.py::u]\n"
    )
    assert len(lines) == 1
    assert lines[0].startswith(".repogym.yml:7: `tests.fail_to_pass.1` = ")
    assert "must be a relative POSIX path from the repository root" in lines[0]


def test_an_id_file_with_a_control_character_is_refused() -> None:
    (line,) = errors(
        'version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass: ["a\\tb.py::t"]\n'
    )
    assert line.startswith(".repogym.yml:5: `tests.fail_to_pass.0` = 'a\\tb.py::t': the file")
    assert "holds a control character" in line


def test_a_control_character_in_a_name_loads() -> None:
    # Flagged by `repogym validate`, which says how to write it; a real name may hold one.
    task = parse_task(
        'version: 1\ntype: bugfix\ntests:\n  command: t {junit}\n  fail_to_pass: ["a.py::t[\\t]"]\n'
    )
    assert task.tests is not None and task.tests.fail_to_pass == ("a.py::t[\t]",)


def test_weights_apply_to_objectives_of_this_task_only() -> None:
    lines = errors(
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n"
        "grading:\n  weights:\n    constraints: 1\n    tests: 1\n    qualty: 2\n"
    )
    assert lines == [
        ".repogym.yml:7: `grading.weights.constraints`: constraints is a gate in this task "
        "and carries no weight; remove the entry",
        ".repogym.yml:8: `grading.weights.tests`: this task does not run the tests grader; "
        "remove the entry or add its section",
        ".repogym.yml:9: `grading.weights.qualty`: no grader is called 'qualty' "
        "(graders: constraints, quality); did you mean `quality`?",
    ]


def test_weights_must_be_positive() -> None:
    assert errors(
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 9\n"
        "grading:\n  weights: {quality: 0}\n"
    ) == [
        ".repogym.yml:6: `grading.weights.quality` = 0: must be a finite number greater than 0; "
        "remove the grader's section to stop grading it"
    ]


def test_custom_grader_reference_is_checked() -> None:
    (line,) = errors("version: 1\ntype: bugfix\ngrading:\n  graders: [tools.graders.NoTodo]\n")
    assert line.startswith(".repogym.yml:4: `grading.graders.0.grader`")


def test_load_task_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "task.yml"
    path.write_text("version: 1\ntype: nope\n")
    with pytest.raises(TaskError) as caught:
        load_task(path)
    assert str(caught.value).startswith(f"{path}:2: `type`")
    with pytest.raises(TaskError, match="cannot read the task file"):
        load_task(tmp_path / "missing.yml")


def test_a_rerun_command_that_clears_the_environment_is_the_tasks_error() -> None:
    # Issue 47's red team: the check read only `tests.command`, and a rerun command of
    # `env -i ... pytest` ran pytest without the grader's guard on every rerun.
    text = (
        "version: 1\ntype: bugfix\ntests:\n  command: python -m pytest --junitxml={junit}\n"
        "  fail_to_pass: [a::b]\n"
        "  rerun_command: env -i python -m pytest --junitxml={junit} {ids}\n"
    )
    with pytest.raises(TaskError, match=r"`tests\.rerun_command`: starts the test runner with"):
        parse_task(text)
