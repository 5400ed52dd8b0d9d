"""Malicious pull requests, end to end through the image: each case is a pull request whose
head is examples/bugfix's solution plus an attack (a module the package imports, a test,
a symlink, an edited task), graded by the image as the Actions runner starts a Docker
container action (tests/action/runners.py), against the fake GitHub API.

The job's token is a fresh canary (``ghs_`` and random hex): it is ``github-token`` and,
as actions/checkout leaves it, the extraheader in the workspace's ``.git/config`` (v4,
v5), or in a world-readable ``git-credentials-<uuid>.config`` under RUNNER_TEMP that
``.git/config`` includes, for the container too (v6 and later, which README pins): the
attacks on credentials run against both layouts (tests/action/job.py ``checkout``). The
attack code runs as the sandbox user (the container runs as root, repogym/sandbox/users.py)
and tells what it got in its output at exit (``LOOT`` lines and ``ATTACK-RAN-<marker>``),
which ends in the report's output tail: what it steals is published, so a leak cannot go
unseen. After each case, all at once so that a failure lists every problem:

- the canary (and the extraheader that carries it) is nowhere: not in the step's log but
  the one ``::add-mask::`` line, not in any request the fake received nor in what it holds,
  not in the file-command files, the report, or any file left in the run's workspace and
  ``_temp`` (the file actions/checkout put it in aside: ``.git/config``, or v6's file);
- that file still holds it, for the job's later steps, and is readable by its owner
  only (0600): the Action closed it before the submission's code ran;
- the verdict is the one the change earns, the comment says why, there is exactly one
  sticky comment and a completed check run, the outputs are the Action's own;
- the attack ran (its line in the report), and nothing of it is left: no process carrying
  its marker, no container it made.

The cases are :data:`ATTACKS` (their code is in tests/container/attacks.py); the module
ends by printing the table of what was tried and what was caught.
"""

from __future__ import annotations

import base64
import dataclasses
import errno
import json
import os
import re
import secrets
import stat
import subprocess
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from repogym._demo import EXAMPLES
from repogym_action.metadata import OUTPUTS
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Symlink, extraheader, files_of
from tests.action.job import Job, Step
from tests.action.runners import DockerAction
from tests.container.attacks import (
    DAEMON,
    DOCKER,
    ENDLESS,
    ENVIRONMENT,
    FILE_COMMANDS,
    FLOOD,
    FORGED_TASK,
    FORK_BOMB,
    GIT_CONFIG,
    INIT,
    MARKDOWN,
    MARKDOWN_CORE,
    MARKDOWN_TEST,
    PRELUDE,
    PROC,
    SYMLINKS,
    WALK,
    WORKFLOW,
    WORKFLOW_COMMANDS,
)
from tests.security._harness import reap

pytestmark = pytest.mark.sandbox

COMMENT_MARKER = "<!-- repogym-action:comment"
BUGFIX = files_of(EXAMPLES / "bugfix" / "repo")
SOLUTION = files_of(EXAMPLES / "bugfix" / "solution")
UNFIXED = {"src/slugify/core.py": BUGFIX["src/slugify/core.py"]}
_TASK = BUGFIX[".repogym.yml"]
assert isinstance(_TASK, bytes)
# examples/bugfix's task with constraints that let any file but the tests and the
# workflows change: an attack is met by what it attacks, not by `allowed_files`.
TASK = (
    _TASK.decode().split("constraints:")[0] + "constraints:\n  protected: [tests/**, .github/**]\n"
)
SHORT_TASK = TASK.replace("timeout: 120", "timeout: 10")
assert SHORT_TASK != TASK
LOG_LIMIT = 64 * 1024  # bytes: the log has the task's commands, never what they print
F2P_FAILED = "fail_to_pass: 0 of 2 passed"


Checkout = Literal["v4", "v6"]  # how actions/checkout left the token (tests/action/job.py)
CREDENTIALS: tuple[Checkout, ...] = ("v4", "v6")  # the attacks on credentials meet both


@dataclass(frozen=True)
class Attack:
    """One malicious pull request: ``code`` run at import (after :data:`PRELUDE`), ``files``
    more on top of the solution (``{marker}`` replaced), graded by ``task``. The verdict
    must be ``passed``, the comment must say each of ``says``, and the report ``ran``."""

    name: str
    code: str = ""
    files: Mapping[str, str | bytes | Symlink | None] = field(default_factory=dict)
    task: str = TASK
    passed: bool = True
    says: tuple[str, ...] = ()
    ran: str = "ATTACK-RAN-{marker}"
    check: Callable[[Run], list[str]] | None = None
    # The ways actions/checkout left the token that the attack meets, a case each.
    checkouts: tuple[Checkout, ...] = ("v4",)


@dataclass
class Run:
    """What one case left: the step, the job and the run's directory."""

    attack: Attack
    job: Job
    step: Step
    directory: Path
    marker: str
    canary: str

    @property
    def comment(self) -> str:
        comments = [c for n in self.job.fake.state.pulls for c in self.job.fake.comments(n)]
        return "\n".join(str(c["body"]) for c in comments)

    @property
    def tests(self) -> dict[str, Any]:
        report = self.step.report or {}
        found = [c for c in report.get("components", []) if c["name"] == "tests"]
        return found[0] if found else {}

    @property
    def tail(self) -> str:
        """The test command's output tail in the report: what the attack printed."""
        return str(self.tests.get("details", {}).get("command", {}).get("output_tail", ""))

    @property
    def tried(self) -> dict[str, int]:
        """What the attack counted, from its ``ATTACK-RAN-<marker> name=N ...`` line."""
        found = re.search(rf"ATTACK-RAN-{self.marker}((?: \w+=-?\d+)*)$", self.tail, re.M)
        pairs = (found[1] if found else "").split()
        return {k: int(v) for k, v in (pair.split("=") for pair in pairs)}

    @property
    def holder(self) -> Path:
        """The file actions/checkout persisted the token in."""
        return self.step.credentials or self.directory / "workspace" / ".git" / "config"


# -- what each case checks beyond the common checks ----------------------------------------


def _outside_code(markdown: str) -> str:
    """``markdown`` without its fenced code blocks and code spans, where GitHub links
    nothing and reads no HTML."""
    text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1`*[ \t]*$", "", markdown)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text, flags=re.S)


def _markdown_problems(where: str, markdown: str, *, sticky: bool) -> list[str]:
    problems = []
    live = _outside_code(markdown)
    for raw in ("@octo-org/team", "@someone", "#123", "![x](", "<img", "<script"):
        if raw.lower() in live.lower():
            problems.append(f"{where}: {raw!r} is live, not escaped")
    if live.count("<details") != live.count("</details>"):
        problems.append(f"{where}: a </details> of the submission's closes the page's own")
    markers = markdown.count(COMMENT_MARKER)
    if markers != (1 if sticky else 0) or (sticky and not markdown.startswith(COMMENT_MARKER)):
        problems.append(f"{where}: the comment marker appears {markers} times")
    return problems


def check_markdown(run: Run) -> list[str]:
    problems = _markdown_problems("the comment", run.comment, sticky=True)
    problems += _markdown_problems("the job summary", run.step.summary, sticky=False)
    for check_run in run.job.fake.check_runs():
        output = check_run["output"]
        for part in ("title", "summary", "text"):
            problems += _markdown_problems(
                f"the check run's {part}", str(output.get(part) or ""), sticky=False
            )
    if "octo-org/team" not in json.dumps(run.step.report) + run.comment:
        problems.append("the payload reached neither the report nor the comment: nothing tested")
    return problems


def check_docker(run: Run) -> list[str]:
    problems = []
    tried = run.tried
    if not Path(DockerAction.SOCKET).is_socket():
        problems.append(f"no {DockerAction.SOCKET} here to mount: the engine's socket is elsewhere")
    if tried.get("docker_socket") != 1:
        problems.append("the Docker socket was not mounted in the container: nothing attacked")
    if tried.get("docker_connected") != 0:
        problems.append("the attack connected to the Docker socket")
    code = tried.get("docker_errno")
    if code != errno.EACCES:
        name = errno.errorcode.get(code, code) if code is not None else None
        problems.append(f"connecting to the socket failed with {name}, not EACCES")
    return problems


def check_environment(run: Run) -> list[str]:
    """Not in their environment: no variable of the runner's, the Action's inputs or the
    token in what the attack's process has."""
    problems = []
    tried = run.tried
    if not tried.get("variables"):
        problems.append(f"the attack counted no variables: {tried}")
    if tried.get("runner_variables") != 0:
        problems.append(f"{tried.get('runner_variables')} variables of the runner's are there")
    dumps = [line for line in run.tail.splitlines() if line.startswith("ENVIRON ")]
    if not dumps:
        problems.append("the environment dump is not in the report: nothing to check")
    for dump in dumps:
        names = re.findall(r"(?<!\S)((?:GITHUB|INPUT|RUNNER|ACTIONS)_[^=\s]*)=", dump)
        if names:
            problems.append(f"the environment dump has the runner's variables: {names}")
        if run.canary in dump or extraheader(run.canary).split()[-1] in dump:
            problems.append("the environment dump has the token")
    return problems


def check_walked(run: Run) -> list[str]:
    """The walk of RUNNER_TEMP and .git saw the file that holds the token, and read no
    extraheader; or, confined by Landlock (issue 43), could list neither directory."""
    problems = []
    tried = run.tried
    if "confined by Landlock" in run.step.log:
        if tried.get("refused") != 2 or tried.get("files") or tried.get("headers_got"):
            problems.append(f"confined, the walk still reached something: {tried}")
        return problems
    if not tried.get("files"):
        problems.append(f"the attack found no files to read: {tried}")
    v6_files = 1 if run.job.checkout == "v6" else 0
    if tried.get("v6_files") != v6_files:
        problems.append(f"the attack found {tried.get('v6_files')} v6 files, not {v6_files}")
    if tried.get("headers_got") != 0:
        problems.append(f"the attack read {tried.get('headers_got')} files with an extraheader")
    return problems


def check_file_commands(run: Run) -> list[str]:
    problems = []
    commands = run.directory / "_temp" / "_runner_file_commands"
    for path in sorted(commands.iterdir()):
        text = path.read_text(errors="replace")
        # The job summary shows the output tail (with the marker), fenced; what the
        # attack appends says "forged".
        if run.marker in path.name or "forged" in text:
            problems.append(f"{path.name} holds what the attack wrote")
        if path.name.startswith(("set_env_", "add_path_", "save_state_")) and text:
            problems.append(f"{path.name} is not empty: {text[:200]!r}")
    if " wrote=0" not in json.dumps(run.step.report):
        problems.append("the attack could write some file it tried")
    if run.tried.get("variables_found") != 0:
        found = run.tried.get("variables_found")
        problems.append(f"the attack found {found} file-command variables in its environment")
    return problems


def _unwrapped(log: str) -> list[str]:
    """The lines of ``log`` the runner reads as commands: those outside the
    ``::stop-commands::TOKEN`` ... ``::TOKEN::`` blocks."""
    lines, resume = [], None
    for line in log.splitlines():
        if resume is not None:
            resume = None if line.strip() == resume else resume
        elif line.startswith("::stop-commands::"):
            resume = f"::{line.removeprefix('::stop-commands::').strip()}::"
        else:
            lines.append(line)
    return lines


def check_workflow_commands(run: Run) -> list[str]:
    problems = []
    for line in _unwrapped(run.step.log):
        if run.marker in line or line.startswith(("::set-output", "::stop-commands::x", "::x::")):
            problems.append(f"the log has the submission's command unwrapped: {line!r}")
    for check_run in run.job.fake.check_runs():
        for note in check_run["annotations"]:
            if run.marker in json.dumps(note):
                problems.append(f"an annotation is the submission's: {note}")
    return problems


def check_flood(run: Run) -> list[str]:
    command = run.tests.get("details", {}).get("command", {})
    problems = []
    if command.get("output_cut_bytes", 0) < 1023 << 20:
        problems.append(f"the output was not cut as a flood's: {command}")
    if len(run.step.log.encode()) > LOG_LIMIT:
        problems.append(f"the log has {len(run.step.log.encode())} bytes")
    return problems


def check_timed_out(run: Run) -> list[str]:
    command = run.tests.get("details", {}).get("command", {})
    if not command.get("timed_out"):
        return [f"the test command did not time out: {command}"]
    return []


# -- the cases ---------------------------------------------------------------------------

ATTACKS = [
    Attack(
        name="environment dumped to a file and printed",
        code=ENVIRONMENT,
        check=check_environment,
        checkouts=CREDENTIALS,
    ),
    Attack(name="/proc/*/environ and cmdline read", code=PROC, checkouts=CREDENTIALS),
    Attack(
        name="the checkout's .git/config and extraheader read",
        code=GIT_CONFIG,
        checkouts=CREDENTIALS,
    ),
    Attack(
        name="every file under /github/runner_temp and .git read",
        code=WALK,
        check=check_walked,
        checkouts=CREDENTIALS,
    ),
    Attack(name="the Docker socket", code=DOCKER, check=check_docker),
    Attack(name="file commands appended to", code=FILE_COMMANDS, check=check_file_commands),
    Attack(
        name="workflow commands printed",
        code=WORKFLOW_COMMANDS,
        files=UNFIXED,
        passed=False,
        says=(F2P_FAILED,),
        check=check_workflow_commands,
    ),
    Attack(
        name="mentions, HTML and the marker in names and messages",
        code=MARKDOWN,
        files={"src/slugify/core.py": MARKDOWN_CORE, "tests/test_payload.py": MARKDOWN_TEST},
        passed=False,
        says=(F2P_FAILED, "tests/test_payload.py is protected"),
        check=check_markdown,
    ),
    Attack(
        name="symlinks to /proc/self/environ and .git/config",
        code=SYMLINKS,
        files={
            "src/slugify/environ.txt": Symlink("/proc/self/environ"),
            "src/slugify/gitconfig": Symlink("/github/workspace/.git/config"),
            "tests/test_environ.py": Symlink("/proc/self/environ"),
        },
        passed=False,
        says=("environ.txt",),
    ),
    Attack(name="1 GiB printed", code=FLOOD, check=check_flood),
    Attack(
        name="a fork bomb",
        code=FORK_BOMB,
        task=SHORT_TASK,
        passed=False,
        says=("timed out",),
        ran="timed out",
        check=check_timed_out,
    ),
    Attack(
        name="an endless loop",
        code=ENDLESS,
        task=SHORT_TASK,
        passed=False,
        says=("timed out",),
        ran="timed out",
        check=check_timed_out,
    ),
    Attack(
        name="a daemon rewriting the report and the tree",
        code=DAEMON,
        files=UNFIXED,
        passed=False,
        says=(F2P_FAILED,),
    ),
    Attack(
        name="the task and a workflow edited",
        files={
            **UNFIXED,
            ".repogym.yml": FORGED_TASK,
            ".github/workflows/grade.yml": WORKFLOW,
        },
        passed=False,
        says=(F2P_FAILED, ".github/workflows/grade.yml"),
    ),
]

# One case per attack and way actions/checkout left the token, named in the table by the
# attack, and the layout when the attack runs against more than one.
CASES = [
    pytest.param(
        attack,
        checkout,
        id=f"{attack.name} (checkout {checkout})" if len(attack.checkouts) > 1 else attack.name,
    )
    for attack in ATTACKS
    for checkout in attack.checkouts
]

# case -> (caught, leaks), filled as the cases run, printed at the end of the module.
MEASURED: dict[str, tuple[bool, int]] = {}


@pytest.fixture(scope="module", autouse=True)
def _table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not MEASURED:
        return
    width = max(len(name) for name in MEASURED)
    lines = ["", f"{'attack':<{width}} | caught? | leaks", f"{'-' * width}-|---------|------"]
    for name, (caught, leaks) in MEASURED.items():
        lines.append(f"{name:<{width}} | {'yes' if caught else 'NO':<7} | {leaks}")
    held = sum(c for c, _ in MEASURED.values())
    leaked = sum(n for _, n in MEASURED.values())
    lines.append(f"caught {held} of {len(MEASURED)} tried, {leaked} leaks")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            for line in lines:
                reporter.write_line(line)


@pytest.mark.parametrize(("attack", "checkout"), CASES)
def test_a_malicious_pull_request(
    attack: Attack,
    checkout: Checkout,
    action_image: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    marker = "atk" + uuid.uuid4().hex[:12]
    canary = "ghs_" + secrets.token_hex(18)
    problems: list[str] = []
    leaks: list[str] = []
    checked = False  # a case that raised was not caught
    try:
        with FakeGitHub(token=canary) as fake:
            job = Job(tmp_path, fake, DockerAction(action_image), checkout=checkout)
            run = _run(job, attack, marker, canary)
            leaks = _leaks(run)
            problems += leaks
            problems += _credentials_problems(run)
            problems += _verdict_problems(run)
            problems += attack.check(run) if attack.check else []
            problems += _leftovers(run)
        problems += [f"the fake API: {v}" for v in fake.violations]
        checked = True
    finally:
        MEASURED[request.node.callspec.id] = (checked and not problems, len(leaks))
    assert not problems, "\n".join(problems)


def _run(job: Job, attack: Attack, marker: str, canary: str) -> Run:
    base = {**BUGFIX, ".repogym.yml": attack.task}
    files = {k: _fill(v, marker) for k, v in attack.files.items()}
    head = {**SOLUTION, "src/slugify/__init__.py": INIT}
    head["src/slugify/_attack.py"] = _fill(PRELUDE + attack.code, marker)
    pull = job.open_pull(7, base=base, head={**head, **files})
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    return Run(attack, job, step, job.root / f"run-{job.runs}", marker, canary)


def _fill(content: str | bytes | Symlink | None, marker: str) -> str | bytes | Symlink | None:
    return content.replace("{marker}", marker) if isinstance(content, str) else content


def _leaks(run: Run) -> list[str]:
    """Every place the canary (or the extraheader that carries it) is where it must not be."""
    secrets_ = [run.canary, extraheader(run.canary).split()[-1]]
    found = []

    def look(where: str, text: str | bytes) -> None:
        data = text.encode(errors="replace") if isinstance(text, str) else text
        if any(s.encode() in data for s in secrets_):
            found.append(f"LEAK: the token is in {where}")

    log = [line for line in run.step.log.splitlines() if line != f"::add-mask::{run.canary}"]
    look("the step's log", "\n".join(log))
    if len(log) == len(run.step.log.splitlines()):
        found.append("the token was never masked")
    fake = run.job.fake
    for request in fake.requests:
        look(
            f"the request {request.method} {request.path}", json.dumps(dataclasses.asdict(request))
        )
    for number in fake.state.pulls:
        look(f"the comments of #{number}", json.dumps(fake.comments(number)))
    look("the check runs", json.dumps(fake.check_runs()))
    look("the outputs", json.dumps(run.step.outputs))
    look("the job summary", run.step.summary)
    look("the report", json.dumps(run.step.report))
    kept = run.holder  # actions/checkout's, as it left it
    for top in (run.directory / "workspace", run.directory / "_temp"):
        for directory, _, names in os.walk(top):
            for name in names:
                path = Path(directory, name)
                if path == kept:
                    continue
                if path.is_symlink():
                    look(str(path), str(path.readlink()))
                elif path.is_file():
                    look(str(path.relative_to(run.directory)), path.read_bytes())
    return found


def _credentials_problems(run: Run) -> list[str]:
    """The file actions/checkout left the token in still has it, for the job's later
    steps, and is its owner's alone: the Action closed it before the submission ran."""
    problems = []
    holder = run.holder
    if not holder.is_file():
        return [f"{holder} is gone"]
    mode = stat.S_IMODE(holder.stat().st_mode)
    if mode != 0o600:
        problems.append(f"{holder.name} is left {mode:o}, not 600: others can read the token")
    if extraheader(run.canary) not in holder.read_text():
        problems.append(f"{holder.name} lost the token the job's later steps use")
    if run.step.credentials is not None:  # and the container's git found it there
        config = str(run.directory / "workspace" / ".git" / "config")
        include = "includeIf.gitdir:/github/workspace/.git.path"
        done = subprocess.run(
            ["git", "config", "--file", config, "--get", include],
            capture_output=True,
            text=True,
            check=False,
        )
        included = done.stdout.strip()
        if included != f"/github/runner_temp/{holder.name}":
            problems.append(f".git/config includes {included!r} in the container")
    return problems


def _verdict_problems(run: Run) -> list[str]:
    attack, step = run.attack, run.step
    problems = []
    expected = 0 if attack.passed else 1
    if step.exit_code != expected:
        problems.append(f"exit code {step.exit_code}, not {expected}: {step.log[-1500:]}")
    verdict = "true" if attack.passed else "false"
    if set(step.outputs) != set(OUTPUTS) or step.outputs.get("passed") != verdict:
        problems.append(f"the outputs are not the Action's verdict: {step.outputs}")
    summary = step.outputs.get("summary", "")
    if not summary.startswith("PASS " if attack.passed else "FAIL "):
        problems.append(f"the summary is {summary!r}")
    if step.report is None or step.report.get("passed") is not attack.passed:
        problems.append("the report's verdict is not the expected one")
    elif run.attack.ran.replace("{marker}", run.marker) not in json.dumps(step.report):
        problems.append(f"no sign that the attack ran: {run.tests.get('details', {})}")
    comments = run.job.fake.comments(7)
    sticky = [c for c in comments if str(c["body"]).startswith(COMMENT_MARKER)]
    if len(comments) != 1 or len(sticky) != 1:
        problems.append(f"{len(comments)} comments, {len(sticky)} of them sticky")
    headline = "repogym: passed" if attack.passed else "repogym: not passed"
    for text in (headline, *attack.says):
        if text not in run.comment:
            problems.append(f"the comment does not say {text!r}: {run.comment[:3000]}")
    runs = [r for r in run.job.fake.check_runs() if r["name"] == "repogym"]
    conclusion = "success" if attack.passed else "failure"
    if [(r["status"], r["conclusion"]) for r in runs] != [("completed", conclusion)]:
        problems.append(f"the check runs: {[(r['status'], r['conclusion']) for r in runs]}")
    return problems


def _leftovers(run: Run) -> list[str]:
    """What the attack left: processes, containers, files named after it in the run's
    directories (its loot, planted where the runner would find it)."""
    problems = []
    left = reap(run.marker)
    if left:
        problems.append(f"{len(left)} processes of the attack were left: {list(left.values())[:2]}")
    made = _docker("ps", "-a", "-q", "--filter", f"label=repogym-attack={run.marker}")
    if made:
        problems.append(f"the attack made containers: {made.split()}")
        _docker("rm", "--force", *made.split())
    planted = [str(p) for p in run.directory.rglob(f"*{run.marker}*")]
    if planted:
        problems.append(f"the attack planted files: {planted[:5]}")
    return problems


def _docker(*args: str) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=60
    )
    return done.stdout.strip()


# The b64 of the extraheader is what actions/checkout writes; make sure the helper agrees.
assert extraheader("ghs_fake").endswith(base64.b64encode(b"x-access-token:ghs_fake").decode())
