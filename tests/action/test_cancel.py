"""A cancelled job end to end: the runner signals ``repogym-action`` while the task's test
command runs (SIGINT, then SIGTERM; for the container, to the ``docker run`` CLI, which
passes it in). The run stops at once: the command is killed, the check run completed as
``cancelled`` with no verdict, no comment posted or changed, no outputs nor report, one
``::warning::`` line, no traceback, and 128 + the signal's number.

Nothing here waits on a clock: the test command says it started through a FIFO, and the
test signals once the FIFO reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from repogym_action.checks import _OpenCheck
from repogym_action.github import GitHub
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import Pull
from tests.action.job import Job, Step
from tests.action.runners import DockerAction, Layout, Runner
from tests.support.waiting import ready_to_read

MARKER = '<!-- repogym-action:comment check="repogym" '
# Only a backstop against a hang: a test waits on an event, never on a clock.
BASE_TEST = "def test_a():\n    assert False\n"


def task(mark: str, fifo: str) -> str:
    """A task whose test command says it started (a line to the FIFO at ``fifo``, as the
    program sees it), then blocks in a child with ``mark`` in its command line."""
    command = (
        f"python -c 'import time; time.sleep(3600)' {mark} & "
        f"echo started > {fifo}; wait $!; "
        "python -m pytest -p no:cacheprovider --junitxml={junit}"
    )
    return (
        "version: 1\ntype: bugfix\ntests:\n"
        f"  command: {json.dumps(command)}\n"
        "  fail_to_pass: [tests/test_a.py::test_a]\n"
        "  timeout: 3600\n"
    )


def running(mark: str) -> list[str]:
    """The command lines of every process on the machine with ``mark`` in it."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                line = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ")
                if mark.encode() in line:
                    found.append(line.decode(errors="replace"))
    return found


def cancelled(
    job: Job,
    signum: int,
    *,
    inputs: dict[str, str] | None = None,
    comment: str | None = None,
    then: int | None = None,
) -> tuple[Pull, Step, str]:
    """A pull request graded and cancelled by ``signum`` while its test command runs;
    the pull request, the run, and the mark of the command's processes. ``comment``: one
    the bot posted before on the pull request; ``then``: a second signal, sent right
    after the first."""
    mark = f"repogym-cancel-{uuid.uuid4().hex}"
    # Where the FIFO is, so that the sandbox user the command runs as reaches it: in the
    # container, RUNNER_TEMP's mount; on this machine, a directory all may go through
    # (pytest's tmp_path is root's alone). Either is shown to the command by the grader's
    # operator (REPOGYM_SEAL_SHOW: a FIFO there is written through the seal's read-only
    # mount, and Landlock, which confines the container's commands, lets it be opened).
    shared: Path | None = None
    if isinstance(job.runner, DockerAction):
        inside = f"{dict(DockerAction.MOUNTS)['temp']}/started"
    else:
        shared = Path(tempfile.mkdtemp(prefix="repogym-cancel-"))
        shared.chmod(0o755)
        inside = str(shared / "started")
    pull = job.open_pull(
        7,
        base={".repogym.yml": task(mark, inside), "tests/test_a.py": BASE_TEST},
        head={"src/a.py": "A = 1\n"},
    )
    if comment is not None:
        job.fake.add_comment(7, comment, login=job.fake.bot_login, type="Bot")
    fifo: list[int] = []

    def before(layout: Layout) -> None:
        path = (shared or layout.temp) / "started"
        os.mkfifo(path)
        path.chmod(0o666)  # for the sandbox user the command runs as
        # Open now, without blocking, so that the command's write never waits for a reader.
        fifo.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK))

    def on_started(process: subprocess.Popen[str]) -> None:
        ready_to_read(fifo[0], process, "the test command starting")
        assert running(mark), "the test command runs"
        process.send_signal(signum)
        if then is not None:
            process.send_signal(then)

    try:
        step = job.run(
            "pull_request",
            job.event("pull_request.opened", pull),
            pull,
            inputs,
            before=before,
            on_started=on_started,
            env={"REPOGYM_SEAL_SHOW": str(Path(inside).parent)},
        )
    finally:
        for fd in fifo:
            os.close(fd)
        if shared is not None:
            shutil.rmtree(shared)
    return pull, step, mark


def assert_cancelled(job: Job, step: Step, pull: Pull, mark: str, signum: int) -> None:
    name = signal.Signals(signum).name
    assert step.exit_code == 128 + signum, step.log
    assert "Traceback" not in step.log, step.log
    # The command and its children were killed before the program exited.
    assert running(mark) == []
    warnings = [line for line in step.log.splitlines() if "cancelled" in line]
    assert warnings == [
        f"::warning::repogym-action: cancelled ({name}); the check run is completed as cancelled"
    ], step.log
    # No verdict anywhere: no outputs, no report, no job summary.
    assert step.outputs == {} and step.report is None and step.summary == ""
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "cancelled")
    assert run["output"]["title"] == "repogym: cancelled"
    assert f"cancelled ({name})" in run["output"]["summary"]
    assert "no verdict" in run["output"]["summary"]
    # The one request after the signal: the PATCH that completes it.
    patches = [r for r in job.fake.requests if r.method == "PATCH"]
    assert [(r.body["status"], r.body["conclusion"]) for r in patches] == [
        ("completed", "cancelled")
    ]
    assert not [r for r in job.fake.requests if r.path.endswith("/comments")]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_grading_completes_the_check_run_as_cancelled(job: Job, signum: int) -> None:
    pull, step, mark = cancelled(job, signum)
    assert_cancelled(job, step, pull, mark, signum)
    assert job.fake.comments(7) == []
    # The grade had begun: its group is ended before the warning, which is not folded.
    lines = step.log.splitlines()
    assert "::group::repogym: tests" in lines
    assert lines[-1].startswith("::warning::") and lines[-2] == "::endgroup::", step.log


def test_a_cancelled_run_leaves_the_last_comment_as_it_was(job: Job) -> None:
    earlier = MARKER + 'run="4000-1-grade" -->\nrepogym: passed'
    pull, step, mark = cancelled(job, signal.SIGTERM, comment=earlier)
    assert_cancelled(job, step, pull, mark, signal.SIGTERM)
    [kept] = job.fake.comments(7)
    assert kept["body"] == earlier and kept["updated_at"] == kept["created_at"]


def test_a_second_signal_does_not_cut_the_clean_up_short(job: Job) -> None:
    # The runner's SIGINT then SIGTERM, back to back: the second lands while the first
    # is being handled, or just before, and is ignored.
    pull, step, mark = cancelled(job, signal.SIGINT, then=signal.SIGTERM)
    assert_cancelled(job, step, pull, mark, signal.SIGINT)
    assert job.fake.comments(7) == []


def test_without_a_check_run_it_only_stops(job: Job) -> None:
    _, step, mark = cancelled(job, signal.SIGTERM, inputs={"check-run": "false"})
    assert step.exit_code == 143, step.log
    assert "Traceback" not in step.log
    assert running(mark) == []
    warnings = [line for line in step.log.splitlines() if "cancelled" in line]
    assert warnings == [
        "::warning::repogym-action: cancelled (SIGTERM); nothing more is posted or written"
    ]
    assert job.fake.check_runs() == [] and job.fake.comments(7) == []
    assert job.fake.requests == []  # the event names the pull request: nothing to ask
    assert step.outputs == {} and step.report is None


def test_the_container_passes_sigterm_in(tmp_path: Path, action_image: str) -> None:
    runner: Runner = DockerAction(action_image)
    with FakeGitHub() as fake:
        job = Job(tmp_path, fake, runner)
        pull, step, mark = cancelled(job, signal.SIGTERM)
        assert_cancelled(job, step, pull, mark, signal.SIGTERM)
        assert job.fake.comments(7) == []
        assert fake.violations == []


def test_a_check_run_whose_post_had_no_answer_is_looked_for(job: Job) -> None:
    # The signal came while the POST that makes the check run was on the wire: GitHub
    # made it, the client never heard. The cancel finds it by external_id and completes it.
    sha = job.origin.commit("main", {"a": "1"}, message="base")
    github = GitHub(
        api_url=job.fake.url,
        token=job.fake.token,
        repository=job.fake.repository,
        seconds_between_writes=0,
    )
    other = GitHub(api_url=job.fake.url, token=job.fake.token, repository=job.fake.repository)
    try:
        other.checks.start_check(
            name="repogym", head_sha=sha, external_id="9-1-grade", details_url=job.fake.server_url
        )
        # What start_check records before its POST.
        github.checks._open.append(
            _OpenCheck(name="repogym", head_sha=sha, external_id="9-1-grade")
        )
        assert github.checks.cancel_checks(title="t", summary="s") == (1, [])
        assert github.checks.cancel_checks(title="t", summary="s") == (0, [])  # none left open
    finally:
        github.close()
        other.close()
    [run] = job.fake.check_runs(sha)
    assert (run["status"], run["conclusion"]) == ("completed", "cancelled")
