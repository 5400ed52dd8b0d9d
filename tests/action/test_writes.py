"""What root writes never follows the pull request's links (issue 19), end to end: the
pull request commits a symlink, and a path the Action writes (the `report` input's file,
the hidden tests in the run's copy) or reads and copies into the run (the `hidden-tests`
input) goes through it. Each scenario runs as a process and
in the image as the runner starts a container action (where the program is root).

The links point at the runner's home directory (``_temp/_github_home``, mounted at
``/github/home`` in the container), a directory outside the workspace that exists in both
layouts, so that a write that followed the link is seen from the host.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.action.gitrepo import Symlink
from tests.action.job import Job, Step
from tests.action.published import example
from tests.action.runners import DockerAction, Layout


@pytest.fixture
def job(any_job: Job) -> Job:
    """Each case both ways the runner may run the Action (tests/action/conftest.py)."""
    return any_job


def next_home(job: Job) -> tuple[str, Path]:
    """The runner's home directory of the job's next run: as the program sees it (what a
    link committed by the pull request names), and on the host."""
    host = job.root / f"run-{job.runs + 1}" / "_temp" / "_github_home"
    return ("/github/home" if isinstance(job.runner, DockerAction) else str(host)), host


def errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("::error")]


def test_the_report_input_through_a_link_to_git_is_refused(job: Job) -> None:
    """`report: out/config` with the pull request's `out -> .git`: root would write the
    report over .git/config, where the later steps' credentials are."""
    base, solution = example("bugfix")
    pull = job.open_pull(2, base=base, head={**solution, "out": Symlink(".git")})
    config: dict[str, str] = {}

    def keep(layout: object) -> None:
        config["before"] = (job.root / f"run-{job.runs}" / "workspace/.git/config").read_text()

    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, {"report": "out/config"}, before=keep)
    workspace = job.root / f"run-{job.runs}" / "workspace"
    assert (workspace / ".git/config").read_text() == config["before"]
    assert step.exit_code == 2, step.log
    assert errors(step.log) == [
        "::error::input `report`: 'out/config' goes through out, a symlink in the "
        "workspace (-> .git), which the pull request's checkout controls; give a path "
        "that no symlink in the workspace leads through, e.g. repogym-report.json"
    ]
    assert job.fake.requests == [] and step.outputs == {}


def test_the_report_input_through_a_link_out_of_the_workspace_is_refused(job: Job) -> None:
    """`report: out/report.json` with `out -> <a directory outside>`: root would create
    the file there."""
    seen, host = next_home(job)
    base, solution = example("bugfix")
    pull = job.open_pull(2, base=base, head={**solution, "out": Symlink(seen)})
    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, {"report": "out/report.json"})
    assert not (host / "report.json").exists()
    assert step.exit_code == 2, step.log
    [line] = errors(step.log)
    assert line.startswith("::error::input `report`: 'out/report.json' goes through out,")


def test_the_report_input_that_is_itself_a_link_is_refused(job: Job) -> None:
    seen, host = next_home(job)
    base, solution = example("bugfix")
    head = {**solution, "report.json": Symlink(f"{seen}/planted.json")}
    pull = job.open_pull(2, base=base, head=head)
    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, {"report": "report.json"})
    assert not (host / "planted.json").exists()
    assert step.exit_code == 2, step.log
    [line] = errors(step.log)
    assert "input `report`: 'report.json' is a symlink in the workspace (-> " in line


SECRET = "tests/hidden/test_secret.py::test_secret"


def with_hidden(
    base: dict[str, str | bytes | None], *, kept: bool
) -> dict[str, str | bytes | None]:
    """The bugfix example whose pass_to_pass names a hidden test at
    `tests/hidden/test_secret.py`; ``kept``: the base keeps it under `.repogym/hidden`
    (`tests.hidden`), else the `hidden-tests` input brings it."""
    text = base[".repogym.yml"]
    task = text.decode() if isinstance(text, bytes) else str(text)
    task = task.replace("  pass_to_pass:\n", f"  pass_to_pass:\n    - {SECRET}\n")
    if not kept:
        return {**base, ".repogym.yml": task}
    task = task.replace("  timeout: 120\n", "  timeout: 120\n  hidden: .repogym/hidden\n")
    return {**base, ".repogym.yml": task, ".repogym/hidden/tests/hidden/test_secret.py": HIDDEN}


HIDDEN = "def test_secret():\n    assert True\n"


@pytest.mark.parametrize("kept", [True, False], ids=["tests.hidden", "hidden-tests"])
def test_hidden_tests_are_not_copied_through_a_linked_directory(job: Job, kept: bool) -> None:
    """The pull request commits `tests/hidden -> <a directory outside>`; the hidden test
    goes to `tests/hidden/test_secret.py` of the run's copy, and must land there, in the
    copy (where it runs, and passes), not in the link's target."""
    seen, host = next_home(job)
    base, solution = example("bugfix")
    head = {**solution, "tests/hidden": Symlink(seen)}
    pull = job.open_pull(2, base=with_hidden(base, kept=kept), head=head)
    inputs = {} if kept else {"hidden-tests": ".hidden"}
    artifact = {} if kept else {".hidden/tests/hidden/test_secret.py": HIDDEN.encode()}
    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, inputs, artifact)
    assert not (host / "test_secret.py").exists()
    assert step.report is not None and "components" in step.report, step.log
    tests = next(c for c in step.report["components"] if c["name"] == "tests")
    assert tests["details"]["hidden"] == [SECRET]
    assert tests["details"]["pass_to_pass"][SECRET] == "passed", tests


# A name git can record and this file system cannot hold: one component over 255 bytes.
LONG = "src/" + "x" * 300 + ".py"


def test_a_file_git_cannot_write_is_an_error_naming_it(job: Job) -> None:
    """On pull_request_target (the workspace is the base's; the head is checked out only
    in the Action's private clone) the pull request adds a file whose name has a
    component of 303 bytes, outside `allowed_files` and with a forbidden pattern in it.
    `git checkout` cannot write it, says so and exits 0: the gate must not pass a tree
    it never saw."""
    base, solution = example("bugfix")
    pull = job.open_pull(2, base=base, head={**solution, LONG: "breakpoint()\n"})
    event = job.event("pull_request.opened", pull)
    step = job.run(
        "pull_request_target", event, pull, {"comment": "off"}, checked_out="refs/heads/main"
    )
    assert step.exit_code == 2, step.log
    [line] = errors(step.log)
    assert line.startswith(f"::error::{LONG}: in the head commit, not in the work tree"), line
    assert "a name component of 303 bytes" in line
    assert step.report is not None and "error" in step.report
    [run] = [r for r in job.fake.check_runs(pull.head_sha) if r["name"] == "repogym"]
    assert run["conclusion"] == "failure"


# The pull request's code for the `hidden-tests` attacks: slugify() raises what it finds
# in `canary.txt` at the top of the run's copy, so a test that runs it fails with the
# file's text in its message, which the report, the comment and the check run quote.
THIEF = '''\
"""URL slugs from titles, and a thief."""

import re
import unicodedata
from pathlib import Path

_TREE = Path(__file__).resolve().parents[2]


def slugify(title: str) -> str:
    try:
        stolen = (_TREE / "canary.txt").read_text().strip()
    except OSError:
        stolen = None
    if stolen:
        raise RuntimeError(stolen)
    decomposed = unicodedata.normalize("NFKD", title)
    ascii_only = decomposed.encode("ascii", "ignore").decode()
    return "-".join(re.findall(r"[a-z0-9]+", ascii_only.lower()))
'''


def plant_canary(job: Job, under: str) -> tuple[str, str, Callable[[Layout], None]]:
    """A canary file only root reads (mode 0600, in a directory of mode 0700) at
    ``under``/canary.txt in the runner's home of the next run (the container sees it
    owned by the runner's uid, as the runner's files are: not the sandbox's either):
    what the pull request's link names, the canary, and what plants it (``before``)."""
    seen, host = next_home(job)
    canary = "canary-" + uuid.uuid4().hex
    secret = host / "secret"

    def plant(layout: Layout) -> None:
        (secret / under).mkdir(parents=True, exist_ok=True)
        (secret / under / "canary.txt").write_text(canary + "\n")
        (secret / under / "canary.txt").chmod(0o600)
        secret.chmod(0o700)

    return f"{seen}/secret", canary, plant


def everything_written(job: Job, step: Step) -> str:
    """The log, the job summary, the outputs, the report and every request the Action
    sent GitHub, as one text to look for a canary in."""
    sent = [json.dumps(r.body) for r in job.fake.requests]
    report = json.dumps(step.report)
    return "\n".join([step.log, step.summary, json.dumps(step.outputs), report, *sent])


# The links are under `.cfg/`, which pytest does not collect (`.*`): a link at the top of
# the copy that the sandbox user cannot stat (the test's temporary directory is root's
# alone) would stop pytest's collection, and the attack would not get to read.
@pytest.mark.parametrize(
    ("given", "under", "refused"),
    [
        (".cfg/hidden", "", "is a symlink in the workspace"),
        (".cfg/hidden/tests", "tests", "goes through .cfg/hidden, a symlink in the workspace"),
    ],
    ids=["the-directory", "a-parent"],
)
def test_the_hidden_tests_input_through_a_link_is_refused(
    job: Job, given: str, under: str, refused: str
) -> None:
    """The pull request commits `.cfg/hidden -> <a directory only root reads>` and the
    workflow passes `hidden-tests: given`: root would read that directory as the hidden tests and
    copy it into the run's copy, where the pull request's code reads the canary and
    quotes it in a failing test's message."""
    target, canary, plant = plant_canary(job, under)
    base, solution = example("bugfix")
    head = {**solution, "src/slugify/core.py": THIEF, ".cfg/hidden": Symlink(target)}
    pull = job.open_pull(2, base=base, head=head)
    event = job.event("pull_request.opened", pull)
    step = job.run("pull_request", event, pull, {"hidden-tests": given}, before=plant)
    assert canary not in everything_written(job, step)
    assert step.exit_code == 2, step.log
    [line] = errors(step.log)
    assert line.startswith(f"::error::input `hidden-tests`: {given!r} {refused} (-> {target}"), line
    assert job.fake.requests == [] and step.outputs == {}


def test_a_hidden_test_that_is_a_link_is_refused(job: Job) -> None:
    """`hidden-tests: .hidden`, a directory an earlier step filled; the pull request
    commits `.hidden/canary.txt -> <a file only root reads>` in it. A hidden test is a
    file of the directory: a link is not copied, as a link or through it."""
    target, canary, plant = plant_canary(job, "")
    base, solution = example("bugfix")
    head = {
        **solution,
        "src/slugify/core.py": THIEF,
        ".hidden/canary.txt": Symlink(f"{target}/canary.txt"),
    }
    pull = job.open_pull(2, base=with_hidden(base, kept=False), head=head)
    artifact = {".hidden/tests/hidden/test_secret.py": HIDDEN.encode()}
    event = job.event("pull_request.opened", pull)
    step = job.run(
        "pull_request",
        event,
        pull,
        {"hidden-tests": ".hidden"},
        artifact,
        before=plant,
    )
    assert canary not in everything_written(job, step)
    assert step.exit_code == 2, step.log
    [line] = errors(step.log)
    assert "hidden tests: canary.txt in " in line and "is a symlink (-> " in line, line
