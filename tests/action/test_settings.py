"""The Action's inputs and the runner's variables (issue 10, "action.yml and settings"):
every input read from its ``INPUT_<NAME>`` variable, every bad value one line naming the
input, the token never in a message."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repogym.errors import UsageError
from repogym_action.settings import (
    INPUTS,
    CommentMode,
    Mode,
    RunContext,
    Settings,
    SettingsError,
    parse_context,
    parse_settings,
)

TOKEN = "ghs_s3cr3tTokenValue"

# For each input, a valid value other than its default, and the field it must set.
OTHER_VALUES: dict[str, tuple[str, object]] = {
    "github-token": ("ghs_another", "ghs_another"),
    "task": ("tasks/grading.yml", "tasks/grading.yml"),
    "base": ("release/2.x", "release/2.x"),
    "comment": ("off", CommentMode.OFF),
    "check-run": ("false", False),
    "check-name": ("repogym (hidden)", "repogym (hidden)"),
    "fail": ("FALSE", False),
    "hidden-tests": ("private/hidden", Path("private/hidden")),
    "template": ("ci/templates", "ci/templates"),
    "report": ("out/report.json", Path("out/report.json")),
    "pull-request": ("42", 42),
    "mode": ("publish", "publish"),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for directory in ("private/hidden", "ci/templates", "out"):
        (tmp_path / directory).mkdir(parents=True)
    return tmp_path


def runner_env(**inputs: str) -> dict[str, str]:
    """The variables the runner sets: every input with its action.yml default filled in
    (the token expanded), then ``inputs`` (Python names: check_run for check-run)."""
    env = {spec.env: spec.default for spec in INPUTS.values()}
    env["INPUT_GITHUB-TOKEN"] = TOKEN
    for name, value in inputs.items():
        env[INPUTS[name.replace("_", "-")].env] = value
    return env


def field_of(name: str) -> str:
    return name.replace("-", "_")


def test_the_settings_have_one_field_per_input() -> None:
    assert [f.name for f in dataclasses.fields(Settings)] == [field_of(n) for n in INPUTS]
    assert set(OTHER_VALUES) == set(INPUTS)


def test_the_variable_names_keep_hyphens_and_upper_case() -> None:
    assert INPUTS["github-token"].env == "INPUT_GITHUB-TOKEN"
    assert INPUTS["pull-request"].env == "INPUT_PULL-REQUEST"


def test_the_defaults(workspace: Path) -> None:
    settings = parse_settings(runner_env(), workspace=workspace)
    assert settings == Settings(
        github_token=TOKEN,
        task=".repogym.yml",
        base=None,
        comment=CommentMode.UPDATE,
        check_run=True,
        check_name="repogym",
        fail=True,
        hidden_tests=None,
        template=None,
        report=None,
        pull_request=None,
        mode=Mode.GRADE,
    )
    assert settings.report_path(Path("/runner/temp")) == Path("/runner/temp/repogym-report.json")


def test_unset_variables_take_the_table_defaults(workspace: Path) -> None:
    only_token = {"INPUT_GITHUB-TOKEN": TOKEN}
    assert parse_settings(only_token, workspace=workspace) == parse_settings(
        runner_env(), workspace=workspace
    )


@pytest.mark.parametrize("name", list(INPUTS))
def test_each_input_is_read_from_its_variable(name: str, workspace: Path) -> None:
    value, expected = OTHER_VALUES[name]
    baseline = parse_settings(runner_env(), workspace=workspace)
    env = runner_env()
    env[INPUTS[name].env] = f"  {value}\n"  # the runner passes what the workflow wrote
    settings = parse_settings(env, workspace=workspace)
    if isinstance(expected, Path):
        expected = workspace / expected
    assert getattr(settings, field_of(name)) == expected != getattr(baseline, field_of(name))
    assert dataclasses.replace(settings, **{field_of(name): getattr(baseline, field_of(name))}) == (
        baseline
    )


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False)],
)
def test_booleans_take_the_spellings_of_githubs_toolkit(
    spelling: str, expected: bool, workspace: Path
) -> None:
    settings = parse_settings(runner_env(check_run=spelling, fail=spelling), workspace=workspace)
    assert (settings.check_run, settings.fail) == (expected, expected)


def bad_lines(env: dict[str, str], workspace: Path) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as caught:
        parse_settings(env, workspace=workspace)
    assert isinstance(caught.value, UsageError)
    return caught.value.lines


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("comment", "sometimes", "input `comment`: 'sometimes' is not one of update, new, off"),
        ("check-run", "yes", "input `check-run`: 'yes' is not a boolean; give true or false"),
        ("fail", "1", "input `fail`: '1' is not a boolean; give true or false"),
        ("fail", "tRUE", "input `fail`: 'tRUE' is not a boolean"),
        ("check-name", "", "input `check-name`: the value is empty"),
        ("check-name", "a\nb", "input `check-name`: 'a\\nb' has a line break"),
        ("check-name", "x" * 101, "is 101 characters; give 100 at most"),
        ("task", "", "input `task`: the value is empty"),
        ("task", "../outside.yml", "input `task`: '../outside.yml' is not a path inside"),
        ("task", "/etc/task.yml", "is not a path inside the repository"),
        ("base", "main branch", "input `base`: 'main branch' is not a ref name"),
        ("hidden-tests", "missing", "input `hidden-tests`: 'missing' is not a directory"),
        ("template", "../up", "input `template`: '../up' is not a directory inside the repo"),
        ("hidden-tests", "/", "input `hidden-tests`: '/' is not a directory inside the work"),
        ("hidden-tests", "..", "'..' is not a directory inside the workspace; give one"),
        ("template", "/usr/share", "'/usr/share' is not a directory inside the repository"),
        ("report", "out", "input `report`: 'out' is a directory; give a file path"),
        ("report", "nowhere/r.json", "input `report`: 'nowhere/r.json': its directory does"),
        ("pull-request", "#12", "input `pull-request`: '#12' is not a pull request number"),
        ("pull-request", "0", "input `pull-request`: '0' is not a pull request number"),
        ("pull-request", "١٢", "is not a pull request number"),  # digits, but not ASCII
    ],
)
def test_a_bad_value_is_one_line_naming_the_input(
    name: str, value: str, says: str, workspace: Path
) -> None:
    env = runner_env()
    env[INPUTS[name].env] = value
    (line,) = bad_lines(env, workspace)
    assert says in line
    assert line.startswith(f"input `{name}`: ")
    assert "\n" not in line


def test_every_bad_input_is_reported_at_once(workspace: Path) -> None:
    env = runner_env(comment="never", fail="no", check_run="maybe", pull_request="x")
    lines = bad_lines(env, workspace)
    assert [line.split(":")[0] for line in lines] == [
        "input `comment`",
        "input `check-run`",
        "input `fail`",
        "input `pull-request`",
    ]


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("", "the value is empty; give a token"),
        ("${{ github.token }}", "an expression the runner did not fill in"),
        (f"{TOKEN}\nsecond", "holds a space or a line break"),
    ],
)
def test_a_bad_token_is_reported_without_its_value(token: str, says: str, workspace: Path) -> None:
    env = runner_env()
    env["INPUT_GITHUB-TOKEN"] = token
    (line,) = bad_lines(env, workspace)
    assert line.startswith("input `github-token`: ") and says in line
    assert TOKEN not in line


def test_the_token_stays_out_of_the_settings_repr(workspace: Path) -> None:
    settings = parse_settings(runner_env(), workspace=workspace)
    assert TOKEN not in repr(settings) and TOKEN not in str(settings)
    assert settings.github_token == TOKEN


def test_a_long_value_is_shortened_in_its_message(workspace: Path) -> None:
    (line,) = bad_lines(runner_env(comment="z" * 5000), workspace)
    assert len(line) < 200


RUNNER = {
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_EVENT_PATH": "/github/workflow/event.json",
    "GITHUB_REPOSITORY": "octo-org/octo-repo",
    "GITHUB_API_URL": "https://ghe.example.invalid/api/v3/",
    "GITHUB_SERVER_URL": "https://ghe.example.invalid",
    "GITHUB_RUN_ID": "1658821493",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_WORKFLOW": "repogym",
    "GITHUB_JOB": "grade",
    "GITHUB_WORKSPACE": "/github/workspace",
    "GITHUB_OUTPUT": "/github/file_commands/set_output_1",
    "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary_1",
    "RUNNER_TEMP": "/github/runner_temp",
    "GITHUB_SHA": "ffac537e6cbbf934b08745a378932722df287a53",
}


def test_the_runners_variables() -> None:
    context = parse_context(RUNNER)
    assert context == RunContext(
        event_name="pull_request",
        event_path=Path("/github/workflow/event.json"),
        repository="octo-org/octo-repo",
        api_url="https://ghe.example.invalid/api/v3",
        server_url="https://ghe.example.invalid",
        run_id="1658821493",
        run_attempt="1",
        workflow="repogym",
        job="grade",
        workspace=Path("/github/workspace"),
        output_path=Path("/github/file_commands/set_output_1"),
        summary_path=Path("/github/file_commands/step_summary_1"),
        temp=Path("/github/runner_temp"),
        sha="ffac537e6cbbf934b08745a378932722df287a53",
        git_env={"RUNNER_TEMP": "/github/runner_temp"},  # of GIT_PASSED, the one RUNNER has
    )
    assert (
        context.run_url == "https://ghe.example.invalid/octo-org/octo-repo/actions/runs/1658821493"
    )


def test_a_rerun_links_its_attempt() -> None:
    context = parse_context({**RUNNER, "GITHUB_RUN_ATTEMPT": "3"})
    assert context.run_url.endswith("/actions/runs/1658821493/attempts/3")


def test_the_defaults_outside_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    context = parse_context(
        {"GITHUB_EVENT_NAME": "push", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "7"}
    )
    assert (context.api_url, context.server_url) == ("https://api.github.com", "https://github.com")
    assert context.workspace == tmp_path
    assert (context.event_path, context.output_path, context.summary_path, context.sha) == (
        None,
        None,
        None,
        None,
    )
    assert context.temp.is_dir()
    assert context.run_url == "https://github.com/o/r/actions/runs/7"


def test_missing_and_malformed_variables_are_one_line_each() -> None:
    env = {**RUNNER, "GITHUB_REPOSITORY": "no-slash", "GITHUB_API_URL": "ftp://x"}
    del env["GITHUB_EVENT_NAME"], env["GITHUB_RUN_ID"]
    with pytest.raises(SettingsError) as caught:
        parse_context(env)
    assert [line.split(" ")[0] for line in caught.value.lines] == [
        "GITHUB_EVENT_NAME",
        "GITHUB_REPOSITORY",
        "GITHUB_API_URL",
        "GITHUB_RUN_ID",
    ]
    assert "'no-slash' is not owner/name" in caught.value.lines[1]
