"""A job of the Actions runner, for end-to-end tests: a real origin (tests/action/gitrepo.py)
with its pull requests mirrored in the fake GitHub API, a workspace cloned as
actions/checkout clones it, and ``repogym-action`` run with the environment the runner
gives a container action: the GITHUB_* variables, every input of action.yml as
``INPUT_<NAME>`` (hyphens kept, defaults filled in), the file-command files. How it runs is
the job's ``runner`` (tests/action/runners.py): a process on this machine, or the image in
Docker as the Actions runner starts a Docker container action.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from tests.action import events
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Files, Origin, Pull, checkout_ref, git
from tests.action.logs import read_outputs
from tests.action.runners import Layout, OnStarted, Process, Runner

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Step:
    """What one run of the Action left."""

    exit_code: int
    log: str  # stdout and stderr, as the runner shows them
    outputs: dict[str, str]
    summary: str
    report: dict[str, Any] | None
    # The file under the run's _temp that actions/checkout v6 persisted the token in.
    credentials: Path | None = None


@dataclass
class Job:
    """The runner's side of the tests: ``root`` holds the origin, the workspaces and the
    runner's files; ``fake`` answers for GitHub."""

    root: Path
    fake: FakeGitHub
    runner: Runner = field(default_factory=lambda: Process())
    # How actions/checkout persists the token: in .git/config (v4, v5), or as v6 does in
    # a world-readable git-credentials-<uuid>.config under the run's _temp, which
    # .git/config includes for the workspace's git directory both as the host has it
    # and as a container action sees it (/github/workspace/.git -> /github/runner_temp/).
    checkout: Literal["v4", "v6"] = "v4"
    origin: Origin = field(init=False)
    runs: int = 0

    def __post_init__(self) -> None:
        self.origin = Origin(self.root / "origin.git")

    def open_pull(
        self,
        number: int,
        *,
        base: Files,
        head: Files,
        branch: str = "fix",
        head_repo: str | None = None,
    ) -> Pull:
        """A repository whose ``main`` is ``base`` and whose pull request ``number``
        adds one commit writing ``head``, on the origin and in the fake API."""
        self.origin.commit("main", base, message="base")
        self.origin.commit(branch, head, message="the change", start=self.origin.sha("main"))
        return self.mirror_pull(number, branch=branch, head_repo=head_repo)

    def mirror_pull(
        self, number: int, *, branch: str, base: str = "main", head_repo: str | None = None
    ) -> Pull:
        """Pull request ``number`` from the origin's ``branch`` into ``base``, opened on
        the origin and in the fake API, its files listed as GitHub lists them."""
        pull = self.origin.open_pull(number, head=branch, base=base)
        self.fake.add_pull(
            number,
            base_ref=pull.base_ref,
            base_sha=pull.base_sha,
            head_ref=pull.head_ref,
            head_sha=pull.head_sha,
            head_repo=head_repo,
        )
        self._list_files(pull)
        return pull

    def push(self, number: int, files: Files, *, branch: str = "fix") -> Pull:
        """A new commit on the pull request's branch, as a push would make it."""
        self.origin.commit(branch, files, message="another change")
        pull = self.origin.pull(number)
        self.fake.move_head(number, pull.head_sha)
        self._list_files(pull)
        return pull

    def retarget(self, number: int, base: str) -> Pull:
        """The pull request's base branch changed to ``base``, on the origin and in the API."""
        pull = self.origin.retarget(number, base)
        self.fake.retarget(number, base_ref=pull.base_ref, base_sha=pull.base_sha)
        self._list_files(pull)
        return pull

    def _list_files(self, pull: Pull) -> None:
        """The pull request's files in the API, as GitHub lists them: base...head (a
        name git would quote stays quoted: the fake only shows it)."""
        try:
            changed = git(
                self.origin.path, "diff", "--name-only", f"{pull.base_sha}...{pull.head_sha}"
            )
        except AssertionError:  # unrelated histories: no merge base
            changed = git(self.origin.path, "diff", "--name-only", pull.base_sha, pull.head_sha)
        self.fake.set_files(pull.number, changed.splitlines())

    def event(self, name: str, pull: Pull, **extra: Any) -> dict[str, Any]:
        return events.payload(
            name,
            repository=self.fake.repository,
            number=pull.number,
            base_ref=pull.base_ref,
            base_sha=pull.base_sha,
            head_ref=pull.head_ref,
            head_sha=pull.head_sha,
            **extra,
        )

    def run(
        self,
        event_name: str,
        payload: Mapping[str, Any],
        pull: Pull,
        inputs: Mapping[str, str] | None = None,
        artifact: Mapping[str, bytes] | None = None,
        *,
        before: Callable[[Layout], None] | None = None,
        on_started: OnStarted | None = None,
        checked_out: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Step:
        """``repogym-action`` on ``event_name`` with ``payload``, in a workspace of
        ``pull`` as actions/checkout makes it for that event, by ``self.runner``.

        ``before`` is called with the run's layout once the workspace and the event file
        are there, just before the program starts: what happens between the checkout and
        this step (the event file spoilt, a branch force-pushed). ``on_started`` is called
        with the program's process once it runs, while the run goes on (to signal it, as
        a cancelled job is). ``checked_out`` is what actions/checkout checks out, default
        the pull request's test merge (a ``pull_request_target`` job's is the base branch,
        ``refs/heads/main``). ``env`` adds variables of the runner's machine (the step's
        ``env:``), such as ``DOCKER_HOST``."""
        self.runs += 1
        layout = Layout(self.root / f"run-{self.runs}", remotes=(self.origin.path,))
        credentials = None
        if self.checkout == "v6":
            credentials = layout.temp / f"git-credentials-{uuid.uuid4()}.config"
        sha = checkout_ref(
            self.origin,
            checked_out or f"refs/pull/{pull.number}/merge",
            layout.workspace,
            credentials_file=credentials,
            token=self.fake.token,
        )
        if credentials is not None:  # and the include a container action's git follows
            credentials.chmod(0o644)
            gitdir = self.runner.path(layout, layout.workspace / ".git")
            include = f"includeIf.gitdir:{gitdir}.path"
            git(
                layout.workspace,
                "config",
                "--local",
                include,
                self.runner.path(layout, credentials),
            )
        for name, data in (artifact or {}).items():  # what a step before downloaded
            (layout.workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (layout.workspace / name).write_bytes(data)
        layout.event.write_text(json.dumps(payload))
        if before is not None:
            before(layout)

        def at(host: Path) -> str:
            return self.runner.path(layout, host)

        env = {
            "HOME": at(layout.home),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": at(layout.event),
            "GITHUB_REPOSITORY": self.fake.repository,
            "GITHUB_REPOSITORY_OWNER": self.fake.repository.split("/")[0],
            "GITHUB_RUN_ID": str(4000 + self.runs),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_RUN_NUMBER": str(self.runs),
            "GITHUB_WORKFLOW": "repogym",
            "GITHUB_JOB": "grade",
            "GITHUB_ACTION": "__org_repogym-action",
            "GITHUB_SHA": sha,
            "GITHUB_REF": f"refs/pull/{pull.number}/merge",
            "GITHUB_WORKSPACE": at(layout.workspace),
            "GITHUB_OUTPUT": at(layout.commands["output"]),
            "GITHUB_STEP_SUMMARY": at(layout.commands["summary"]),
            "GITHUB_ENV": at(layout.commands["env"]),
            "GITHUB_PATH": at(layout.commands["path"]),
            "GITHUB_STATE": at(layout.commands["state"]),
            "GITHUB_API_URL": self.fake.url,
            "GITHUB_SERVER_URL": self.fake.server_url,
            "RUNNER_TEMP": at(layout.temp),
            "RUNNER_OS": "Linux",
            **self.inputs(inputs or {}),
            **(env or {}),
        }
        if on_started is None:
            exit_code, log = self.runner.execute(layout, env)
        else:
            exit_code, log = self.runner.execute(layout, env, on_started=on_started)
        report_path = layout.temp / "repogym-report.json"
        return Step(
            exit_code=exit_code,
            log=log,
            outputs=read_outputs(layout.commands["output"].read_text()),
            summary=layout.commands["summary"].read_text(),
            report=json.loads(report_path.read_text()) if report_path.exists() else None,
            credentials=credentials,
        )

    def inputs(self, given: Mapping[str, str]) -> dict[str, str]:
        """Every input of action.yml as the runner passes it: INPUT_ and the name
        upper-cased, hyphens kept; the default when not given."""
        declared = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
        unknown = set(given) - set(declared)
        assert not unknown, f"not inputs of action.yml: {unknown}"
        values = {}
        for name, spec in declared.items():
            value = given.get(name, str(spec.get("default", "")))
            if value == "${{ github.token }}":
                value = self.fake.token
            values[f"INPUT_{name.upper()}"] = value
        return values
