"""The Action's inputs and the runner's environment, each parsed in one place.

The runner hands a container action its inputs as environment variables named
``INPUT_`` plus the input's name upper-cased, spaces turned into underscores and hyphens
kept (``INPUT_GITHUB-TOKEN``), with the defaults of ``action.yml`` already filled in. An
unset variable (a run outside the runner) takes the default of :data:`INPUTS`, the one
table that ``action.yml`` and the README's tables must agree with (tests/action).

Every bad input is reported at once, one line each, naming the input and what it takes,
before anything is graded. A boolean takes ``true`` or ``false``, also written ``True``,
``TRUE``, ``False`` or ``FALSE``: the spellings of YAML 1.2's core schema, which GitHub's
own toolkit (``getBooleanInput``) accepts, so a workflow that works with other actions
works with this one. The token never appears in a message.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from repogym.errors import UsageError
from repogym.tree.links import inside, link_on_the_way
from repogym_action.metadata import (
    FALSE_VALUES,
    INPUTS,
    OUTPUTS,
    TRUE_VALUES,
    CommentMode,
    Input,
    Mode,
    Output,
)

__all__ = [
    "INPUTS",
    "OUTPUTS",
    "CommentMode",
    "Input",
    "Mode",
    "Output",
    "RunContext",
    "Settings",
    "SettingsError",
    "parse_context",
    "parse_settings",
]

CHECK_NAME_MAX = 100
DEFAULT_REPORT_NAME = "repogym-report.json"


class SettingsError(UsageError):
    """The Action's inputs or the runner's environment cannot be used: one line per problem."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The Action's inputs, checked: one field per input of :data:`INPUTS`."""

    github_token: str = field(repr=False)  # kept out of logs and tracebacks
    task: str
    base: str | None
    comment: CommentMode
    check_run: bool
    check_name: str
    fail: bool
    hidden_tests: Path | None
    # A directory of the repository, read at the base (repogym_action.grade.read_templates).
    template: str | None
    report: Path | None
    pull_request: int | None
    mode: Mode = Mode.GRADE

    def report_path(self, temp: Path) -> Path:
        """Where the JSON report goes: the input ``report``, else a file in ``temp``
        (the runner's ``RUNNER_TEMP``, :attr:`RunContext.temp`)."""
        return self.report if self.report is not None else temp / DEFAULT_REPORT_NAME


_EXAMPLE_DIRECTORY = {"hidden-tests": ".hidden-tests", "template": ".github/repogym"}


def _show(value: str) -> str:
    """A value quoted for a one-line message, shortened when long."""
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:76] + "..."


class _Reader:
    """Reads the inputs from ``env`` and collects one line per bad one."""

    def __init__(self, env: Mapping[str, str], workspace: Path) -> None:
        self.env = env
        self.workspace = workspace
        self.errors: list[str] = []
        self.failed: set[str] = set()

    def raw(self, name: str) -> str:
        spec = INPUTS[name]
        return self.env.get(spec.env, spec.default).strip()

    def bad(self, name: str, what: str) -> None:
        self.errors.append(f"input `{name}`: {what}")
        self.failed.add(name)

    def token(self) -> str:
        value = self.raw("github-token")
        if not value:
            self.bad("github-token", "the value is empty; give a token, e.g. ${{ github.token }}")
        elif value.startswith("${{"):
            self.bad("github-token", "is an expression the runner did not fill in; give a token")
        elif any(c.isspace() for c in value):
            self.bad("github-token", "holds a space or a line break; give the token alone")
        return value

    def one_line(self, name: str, *, required: bool, max_length: int | None = None) -> str:
        value = self.raw(name)
        if required and not value:
            self.bad(name, f"the value is empty; give one (default {INPUTS[name].default!r})")
        elif "\n" in value or "\r" in value:
            self.bad(name, f"{_show(value)} has a line break; give one line")
        elif max_length is not None and len(value) > max_length:
            self.bad(name, f"{_show(value)} is {len(value)} characters; give {max_length} at most")
        return value

    def boolean(self, name: str) -> bool:
        value = self.raw(name)
        if value in TRUE_VALUES or value in FALSE_VALUES:
            return value in TRUE_VALUES
        self.bad(name, f"{_show(value)} is not a boolean; give true or false")
        return INPUTS[name].default == "true"

    def choice(self, name: str) -> str:
        value = self.raw(name)
        choices = INPUTS[name].choices
        if value not in choices:
            self.bad(name, f"{_show(value)} is not one of {', '.join(choices)}")
            return INPUTS[name].default
        return value

    def comment(self) -> CommentMode:
        value = self.raw("comment")
        try:
            return CommentMode(value)
        except ValueError:
            choices = ", ".join(INPUTS["comment"].choices)
            self.bad("comment", f"{_show(value)} is not one of {choices}")
            return CommentMode(INPUTS["comment"].default)

    def task(self) -> str:
        value = self.one_line("task", required=True)
        path = Path(value)
        if value and (path.is_absolute() or ".." in path.parts):
            self.bad(
                "task",
                f"{_show(value)} is not a path inside the repository; give one "
                "relative to its top, e.g. .repogym.yml",
            )
        return value

    def template(self) -> str | None:
        """A directory of the repository, read at the base commit once it is fetched
        (issue 19), so only its spelling is checked here; in publish mode, a directory
        of the workspace, which must be there."""
        value = self.one_line("template", required=False)
        if not value or "template" in self.failed:
            return None
        path = Path(value)
        if path.is_absolute() or ".." in path.parts:
            self.bad(
                "template",
                f"{_show(value)} is not a directory inside the repository; give one relative "
                f"to its top, e.g. {_EXAMPLE_DIRECTORY['template']}",
            )
            return None
        if self.raw("mode") == "publish" and not (self.workspace / value).is_dir():
            self.bad(
                "template",
                f"{_show(value)} is not a directory (relative to the workspace "
                f"{self.workspace}); check the templates out in a step before this one",
            )
        return path.as_posix()

    def base(self) -> str | None:
        value = self.raw("base")
        if any(c.isspace() for c in value):
            self.bad("base", f"{_show(value)} is not a ref name; give a branch, tag or sha")
        return value or None

    def directory(self, name: str) -> Path | None:
        value = self.one_line(name, required=False)
        if not value or name in self.failed:
            return None
        path = self.workspace / value
        # Inside the workspace, as documented: `/` or `..` would read the runner's whole
        # disk as hidden tests or templates.
        if Path(value).is_absolute() or ".." in Path(value).parts:
            self.bad(
                name,
                f"{_show(value)} is not a directory inside the workspace; give one relative "
                f"to it, e.g. {_EXAMPLE_DIRECTORY[name]}",
            )
        elif name == "hidden-tests" and (
            linked := workspace_link(path, self.workspace, _HIDDEN_FIX)
        ):
            # Root reads it and copies what it holds into the run's copy, where the pull
            # request's code reads it: `.hidden-tests -> /root` of the pull request's
            # checkout would hand it root's files (issue 19).
            self.bad(name, f"{_show(value)} {linked}")
        elif not path.is_dir():
            self.bad(
                name,
                f"{_show(value)} is not a directory (relative to the workspace "
                f"{self.workspace}); give a directory that an earlier step made",
            )
        return path

    def report(self) -> Path | None:
        value = self.one_line("report", required=False)
        if not value or "report" in self.failed:
            return None
        path = self.workspace / value
        if path.is_dir():
            self.bad(
                "report",
                f"{_show(value)} is a directory; give a file path, e.g. {DEFAULT_REPORT_NAME}",
            )
        elif not path.parent.is_dir():
            self.bad(
                "report",
                f"{_show(value)}: its directory does not exist (relative to the workspace "
                f"{self.workspace}); give a file in an existing directory",
            )
        elif self.raw("mode") != "publish":  # publish reads it, refusing any link itself
            problem = workspace_link(path, self.workspace)
            if problem is not None:
                self.bad("report", f"{_show(value)} {problem}")
        return path

    def pull_request(self) -> int | None:
        value = self.raw("pull-request")
        if not value:
            return None
        if value.isascii() and value.isdigit() and int(value) > 0:
            return int(value)
        self.bad(
            "pull-request", f"{_show(value)} is not a pull request number; give one such as 12"
        )
        return None


_REPORT_FIX = (
    f"give a path that no symlink in the workspace leads through, e.g. {DEFAULT_REPORT_NAME}"
)
_HIDDEN_FIX = "give the directory an earlier step put the hidden tests in, with no link on its way"


def workspace_link(path: Path, workspace: Path, fix: str = _REPORT_FIX) -> str | None:
    """Why root must not write (or read) ``path``: a symlink in ``workspace`` lies on its
    way (or is it), and the workspace is the pull request's checkout, whose links it
    commits (issue 19: `report: out/config` with `out -> .git` overwrote the later steps'
    credentials; `hidden-tests: .hidden` with `.hidden -> /root` copied root's files into
    the run's copy); None when no link of the workspace redirects it. Links outside it
    are the user's. ``fix`` ends the message: what to give instead."""
    tree = Path(os.path.realpath(workspace))
    found = link_on_the_way(str(path), tree)
    if found is None:
        return None
    owner = "which the pull request's checkout controls"
    if found.last:
        return f"is a symlink in the workspace (-> {found.target}), {owner}; {fix}"
    shown = os.path.relpath(found.link, tree) if inside(found.link, tree) else str(found.link)
    return f"goes through {shown}, a symlink in the workspace (-> {found.target}), {owner}; {fix}"


def parse_settings(env: Mapping[str, str], *, workspace: Path) -> Settings:
    """The inputs in ``env`` (``INPUT_*``), checked; paths are relative to ``workspace``.

    Raises :class:`SettingsError` with one line per bad input.
    """
    read = _Reader(env, workspace)
    settings = Settings(
        github_token=read.token(),
        task=read.task(),
        base=read.base(),
        comment=read.comment(),
        check_run=read.boolean("check-run"),
        check_name=read.one_line("check-name", required=True, max_length=CHECK_NAME_MAX),
        fail=read.boolean("fail"),
        hidden_tests=read.directory("hidden-tests"),
        template=read.template(),
        report=read.report(),
        pull_request=read.pull_request(),
        mode=Mode(read.choice("mode")),
    )
    if read.errors:
        raise SettingsError(*read.errors)
    return settings


# What the environment may pass on to git: finding the network (proxies, CA files) and
# the credentials actions/checkout left (an ssh key under RUNNER_TEMP, an agent).
GIT_PASSED = (
    "PATH", "HOME", "TMPDIR", "RUNNER_TEMP", "SSH_AUTH_SOCK",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """What the runner says about the job: the ``GITHUB_*`` and ``RUNNER_*`` variables."""

    event_name: str
    event_path: Path | None
    repository: str  # owner/name
    api_url: str
    server_url: str
    run_id: str
    run_attempt: str
    workflow: str
    job: str
    workspace: Path
    output_path: Path | None
    summary_path: Path | None
    temp: Path
    sha: str | None
    git_env: Mapping[str, str]  # what git gets of the runner's environment: GIT_PASSED

    @property
    def run_url(self) -> str:
        """The web page of this workflow run (of this attempt, when it is a re-run)."""
        url = f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        return url + (f"/attempts/{self.run_attempt}" if int(self.run_attempt) > 1 else "")


def _url(env: Mapping[str, str], name: str, default: str, errors: list[str]) -> str:
    value = env.get(name, "").strip() or default
    if not value.startswith(("https://", "http://")):
        errors.append(f"{name} {_show(value)} is not an http(s) address; unset it or give one")
    return value.rstrip("/")


def _number(env: Mapping[str, str], name: str, default: str, errors: list[str]) -> str:
    value = env.get(name, "").strip() or default
    if not (value.isascii() and value.isdigit()):
        what = "is not set" if not value else f"{_show(value)} is not a number"
        errors.append(f"{name} {what}: repogym-action runs in a GitHub Actions job, which sets it")
    return value


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "")
    return Path(value) if value else None


def parse_context(env: Mapping[str, str]) -> RunContext:
    """The job as the runner describes it in ``env``.

    Raises :class:`SettingsError` with one line per variable that is missing or malformed
    (``GITHUB_EVENT_NAME``, ``GITHUB_REPOSITORY``, ``GITHUB_RUN_ID`` are required).
    """
    errors: list[str] = []
    event_name = env.get("GITHUB_EVENT_NAME", "").strip()
    if not event_name:
        errors.append(
            "GITHUB_EVENT_NAME is not set: repogym-action runs in a GitHub Actions job, "
            "which sets it"
        )
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        what = "is not set" if not repository else f"{_show(repository)} is not owner/name"
        errors.append(f"GITHUB_REPOSITORY {what}: repogym-action runs in a GitHub Actions job")
    context = RunContext(
        event_name=event_name,
        event_path=_path(env, "GITHUB_EVENT_PATH"),
        repository=repository,
        api_url=_url(env, "GITHUB_API_URL", "https://api.github.com", errors),
        server_url=_url(env, "GITHUB_SERVER_URL", "https://github.com", errors),
        run_id=_number(env, "GITHUB_RUN_ID", "", errors),
        run_attempt=_number(env, "GITHUB_RUN_ATTEMPT", "1", errors),
        workflow=env.get("GITHUB_WORKFLOW", ""),
        job=env.get("GITHUB_JOB", ""),
        workspace=_path(env, "GITHUB_WORKSPACE") or Path.cwd(),
        output_path=_path(env, "GITHUB_OUTPUT"),
        summary_path=_path(env, "GITHUB_STEP_SUMMARY"),
        temp=_path(env, "RUNNER_TEMP") or Path(tempfile.gettempdir()),
        sha=env.get("GITHUB_SHA", "").strip() or None,
        git_env={name: env[name] for name in GIT_PASSED if name in env},
    )
    if errors:
        raise SettingsError(*errors)
    return context
