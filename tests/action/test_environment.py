"""A task that names its environment (issue 20), graded by the Action end to end, as a
process and as the image the runner starts (``any_job``): the grader reaches the engine
(in the container, through the socket the runner mounts, as root), the task's commands
run in containers of the task's image and never see the engine; and what keeps the
environment from being had (no engine, a Dockerfile that does not build, an image that
cannot be pulled) is one ``::error::`` line and a check run completed ``failure`` with
that line, exit 2, before any grading."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import docker
import pytest
import yaml

from repogym._demo import EXAMPLES
from repogym.report.render import md
from repogym_action.annotations import one_line
from tests.action.gitrepo import Files, files_of
from tests.action.job import Job, Step
from tests.action.published import assert_published
from tests.support import docker as test_docker
from tests.support.envimage import python_image

PROBE = "tests/test_engine_out_of_reach.py::test_the_commands_run_in_the_image_without_the_engine"
# In the base, so that a submission cannot change it, and among the tests that must pass:
# the grade passes only if the commands ran in the task's image (Debian's pytest, not the
# one this test runs with) and saw neither the engine's socket nor its address.
PROBE_FILE = """\
import os

import pytest


def test_the_commands_run_in_the_image_without_the_engine():
    assert pytest.__file__.startswith("/usr/lib/python3/dist-packages/"), pytest.__file__
    assert os.getuid() == 10001
    for path in ("/var/run/docker.sock", "/run/docker.sock"):
        assert not os.path.exists(path), path
    assert "DOCKER_HOST" not in os.environ
"""


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    test_docker.engine_or_skip()
    yield python_image()


def task_with(environment: dict[str, object] | None) -> tuple[dict[str, Any], Files]:
    """The bugfix example with ``environment`` and the probe in the base; its solution."""
    base: dict[str, Any] = files_of(EXAMPLES / "bugfix" / "repo")
    task = yaml.safe_load(base[".repogym.yml"])
    if environment is not None:
        task["environment"] = environment
    task["tests"]["pass_to_pass"].append(PROBE)
    base[".repogym.yml"] = yaml.safe_dump(task, sort_keys=False)
    base[PROBE.split("::")[0]] = PROBE_FILE
    return base, files_of(EXAMPLES / "bugfix" / "solution")


def errors(step: Step) -> list[str]:
    return [line for line in step.log.splitlines() if line.startswith("::error::")]


def assert_not_graded(
    job: Job, step: Step, number: int, *words: str, code: int = 2
) -> dict[str, object]:
    """Exit ``code`` before any grading, one ``::error::`` line with ``words``, and the
    check run completed ``failure`` with that line; the comment says there is no grade.
    The check run's output."""
    assert step.exit_code == code, step.log
    [line] = errors(step)
    assert all(word in line for word in words), line
    assert "::group::repogym: tests" not in step.log and "Traceback" not in step.log
    assert step.report is not None and step.report["error"]["kind"] == "environment"
    message = step.report["error"]["message"]
    assert line == f"::error::{message}"
    [run] = job.fake.check_runs(step.report["head"]["sha"])
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    output = run["output"]
    assert isinstance(output, dict)
    assert output["title"] == one_line(f"ERROR {message}", 255)
    for shown in (output["summary"], step.summary):
        assert f"**The task's environment cannot be had:** {md(message)}\n" in shown
    [comment] = job.fake.comments(number)
    assert "could not grade this change" in comment["body"]
    assert "repogym: passed" not in comment["body"]
    assert "repogym: not passed" not in comment["body"]
    return output


def test_a_pull_request_graded_in_the_tasks_image(any_job: Job, image: str) -> None:
    job = any_job
    base, solution = task_with({"image": image})
    pull = job.open_pull(4, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert_published(job, step, passed=True, head=pull.head_sha)
    [comment] = job.fake.comments(4)
    assert "repogym: passed" in comment["body"]
    assert step.report is not None
    environment = step.report["environment"]
    engine = docker.from_env()
    assert environment["source"] == "image" and environment["image"] == image
    assert environment["id"] == engine.images.get(image).id
    assert environment["how"] == "local" and environment["network"] == "none"
    # Named without a digest: graded, with a warning that says what it resolved to.
    [warning] = [w for w in step.log.splitlines() if w.startswith("::warning::")]
    assert "names no digest" in warning and environment["id"] in warning
    assert environment["warnings"] == [warning.removeprefix("::warning::")]


def test_the_probe_fails_where_the_commands_see_the_engine(job: Job) -> None:
    """The probe of the other tests is not vacuous: without `environment`, the commands
    run on this machine, whose pytest it is not, and the grade fails on it."""
    base, solution = task_with(None)
    pull = job.open_pull(6, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    assert step.exit_code == 1, step.log
    assert step.report is not None and step.report["environment"] is None
    [tests] = [c for c in step.report["components"] if c["name"] == "tests"]
    assert tests["passed"] is False


def test_no_engine_at_docker_host(any_job: Job, image: str) -> None:
    job = any_job
    base, solution = task_with({"image": image})
    pull = job.open_pull(8, base=base, head=solution)
    where = "unix:///nonexistent/docker.sock"
    step = job.run(
        "pull_request", job.event("pull_request.opened", pull), pull, env={"DOCKER_HOST": where}
    )
    output = assert_not_graded(job, step, 8, f"no Docker engine at {where}", "set DOCKER_HOST")
    assert "nonexistent/docker.sock" in output["summary"]


def test_a_dockerfile_that_does_not_build(any_job: Job, image: str) -> None:
    job = any_job
    base, solution = task_with({"dockerfile": "env/Dockerfile"})
    base["env/Dockerfile"] = f"FROM {image}\nRUN echo 'the build got this far' && false\n"
    pull = job.open_pull(10, base=base, head=solution)
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    output = assert_not_graded(
        job, step, 10, "`environment.dockerfile` env/Dockerfile", "does not build", "base branch"
    )
    # The build log's tail: in the report, the log, the check run and the job summary.
    assert step.report is not None
    tail = step.report["error"]["log_tail"]
    assert "the build got this far" in tail and "RUN echo" in tail
    assert "::group::repogym: the build log's last lines" in step.log
    assert "\nthe build got this far\n" in step.log
    for shown in (output["summary"], output["text"], step.summary):
        assert "```text\n" in shown and "the build got this far" in shown


def test_an_image_that_cannot_be_pulled_fails_fast(any_job: Job) -> None:
    """This machine reaches no registry: the pull fails at once (the engine's lookup of
    the registry fails), and the run says so rather than waiting on it. The network's
    failure is not the task's: exit 3 (issue 44; before, exit 2 and "check the name")."""
    job = any_job
    base, solution = task_with({"image": "repogym-no-such-image:1"})
    pull = job.open_pull(12, base=base, head=solution)
    started = time.monotonic()
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    seconds = time.monotonic() - started
    assert_not_graded(
        job,
        step,
        12,
        "`environment.image` 'repogym-no-such-image:1' cannot be pulled",
        "the engine could not reach the network (no such host): not the task's to fix",
        code=3,
    )
    assert seconds < 120, f"{seconds:.0f} s to fail a pull"


def test_the_node_example_graded_in_its_dockerfiles_image(
    any_job: Job, env_images: tuple[str, ...]
) -> None:
    """The demo's Node task, whose Dockerfile (read at the base) builds the image its
    commands run in: graded end to end, passed, with its image built or found again."""
    job = any_job
    base = files_of(EXAMPLES / "node" / "repo")
    pull = job.open_pull(8, base=base, head=files_of(EXAMPLES / "node" / "solution"))
    started = time.monotonic()
    step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
    seconds = time.monotonic() - started
    assert step.exit_code == 0, step.log
    assert step.outputs["summary"].startswith("PASS 1.000 ")
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "success")
    [comment] = job.fake.comments(8)
    assert "repogym: passed" in comment["body"]
    assert "\n$ node --test" in step.log  # the task's command, in its group of the log
    assert step.report is not None
    environment = step.report["environment"]
    assert environment["source"] == "dockerfile"
    assert environment["image"] == ".repogym/Dockerfile"
    assert environment["how"] in ("built", "reused")
    print(f"node example graded by the Action ({type(job.runner).__name__}): {seconds:.1f} s")


def test_a_cancelled_job_removes_the_command_s_container(any_job: Job, image: str) -> None:
    """The runner's SIGTERM while the task's command runs in its container: the run
    stops at once, the check run is completed as cancelled, and the container is gone
    (removed by the grader's own clean-up, not left to a later grade's sweep)."""
    job = any_job
    mark = f"repogym-cancel-{os.urandom(6).hex()}"
    base, solution = task_with({"image": image})
    task = yaml.safe_load(base[".repogym.yml"])
    task["tests"]["command"] = f"sleep 3600 # {mark}\n" + task["tests"]["command"]
    task["tests"]["timeout"] = 3600
    base[".repogym.yml"] = yaml.safe_dump(task, sort_keys=False)
    pull = job.open_pull(9, base=base, head=solution)
    engine = docker.from_env()
    # The engine's start events say when the command's container runs: no clock.
    events = engine.events(decode=True, filters={"event": "start", "type": "container"})

    def mine() -> list[str]:
        found = engine.api.containers(all=True, filters={"label": "repogym"})
        return [c["Id"] for c in found if mark in c["Command"]]

    def on_started(process: Any) -> None:
        for event in events:
            started = engine.api.inspect_container(event["id"])
            if mark in " ".join(started["Config"]["Cmd"] or []):
                break
        events.close()
        process.send_signal(signal.SIGTERM)

    step = job.run(
        "pull_request", job.event("pull_request.opened", pull), pull, on_started=on_started
    )
    assert step.exit_code == 128 + signal.SIGTERM, step.log
    assert "Traceback" not in step.log
    [run] = job.fake.check_runs(pull.head_sha)
    assert (run["status"], run["conclusion"]) == ("completed", "cancelled")
    assert mine() == []
