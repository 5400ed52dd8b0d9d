"""The Action's image (Dockerfile), built on the local bookworm base as the tests build it:
what is in it and what is not, its entry point and label, and how it behaves when the
runner's environment is missing or older (issue 11). The scenarios of a pull request run
through it in tests/action/test_end_to_end.py and tests/container/test_malicious_pr.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import repogym
from repogym._demo import EXAMPLES
from tests.action.fake_github import FakeGitHub
from tests.action.gitrepo import files_of
from tests.action.job import Job
from tests.action.runners import DockerAction


def run(image: str, script: str, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """``sh -c script`` in the image, past its entry point."""
    command = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "sh"]
    command += ["--user", user] if user else []
    return subprocess.run(
        [*command, image, "-c", script], capture_output=True, text=True, check=False, timeout=300
    )


def inspect(image: str) -> dict[str, object]:
    done = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, text=True, check=True
    )
    [found] = json.loads(done.stdout)
    return found  # type: ignore[no-any-return]


def test_the_entry_point_and_the_version_label(action_image: str) -> None:
    config = inspect(action_image)["Config"]
    assert isinstance(config, dict)
    assert config["Entrypoint"] == ["repogym-action"]
    assert config["Labels"]["org.opencontainers.image.version"] == repogym.__version__
    assert "/opt/repogym/bin" in next(v for v in config["Env"] if v.startswith("PATH="))


def test_what_the_image_holds(action_image: str) -> None:
    done = run(
        action_image,
        "set -e; git --version; command -v repogym; command -v repogym-action; "
        "python -c 'import repogym, pytest, github, jinja2, docker; print(repogym.__version__)'; "
        "id -u repogym; getent passwd repogym",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("git version ")
    assert lines[1:3] == ["/opt/repogym/bin/repogym", "/opt/repogym/bin/repogym-action"]
    assert lines[3] == repogym.__version__
    assert lines[4] == "10001"
    assert lines[5].endswith(":/nonexistent:/usr/sbin/nologin")


def test_templates_and_examples_are_inside_the_package(action_image: str) -> None:
    script = (
        "import importlib.resources as r\n"
        "print(sorted(p.name for p in r.files('repogym._templates').iterdir()"
        " if p.name.endswith('.md.j2')))\n"
        "print(sorted(p.name for p in r.files('repogym._examples').iterdir() if p.is_dir()"
        " and not p.name.startswith('_')))\n"
    )
    done = run(action_image, f'python -c "{script}"')
    assert done.returncode == 0, done.stderr
    templates, examples = done.stdout.splitlines()
    here = sorted(p.name for p in (Path(repogym.__file__).parents[1] / "templates").glob("*.md.j2"))
    assert templates == repr(here)
    assert all(name in examples for name in ("bugfix", "feature", "perf", "refactor"))


def test_no_compiler_no_pip_no_sources_in_the_final_image(action_image: str) -> None:
    done = run(
        action_image,
        "for c in gcc cc make pip pip3; do command -v $c || true; done; "
        "ls -d /src /opt/repogym/bin/pip* /root/.cache/pip 2>/dev/null || true; "
        "python -c 'import setuptools' 2>/dev/null && echo setuptools || true",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_the_demo_grades_inside_the_image_as_root_with_the_sandbox_user(
    action_image: str,
) -> None:
    command = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "repogym"]
    done = subprocess.run(
        [*command, action_image, "demo"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout.count("PASS ") >= 4, done.stdout  # every example's solution passes


def test_outside_a_job_one_line_per_missing_variable(action_image: str) -> None:
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", action_image],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 2
    log = done.stdout + done.stderr
    assert "Traceback" not in log
    errors = [line for line in log.splitlines() if line.startswith("::error::")]
    assert errors and len(errors) == len(log.splitlines())
    assert any("GITHUB_EVENT_NAME is not set" in line for line in errors)


def test_a_runner_that_does_not_map_runner_temp(tmp_path: Path, action_image: str) -> None:
    """Runners before the /github/runner_temp mount pass RUNNER_TEMP as the host's path,
    which the container does not have: the Action still grades (in a directory it makes)
    and a report set to a path in the workspace reaches the next steps."""
    base = files_of(EXAMPLES / "bugfix" / "repo")
    solution = files_of(EXAMPLES / "bugfix" / "solution")
    with FakeGitHub() as fake:
        job = Job(tmp_path, fake, DockerAction(action_image, map_runner_temp=False))
        pull = job.open_pull(3, base=base, head=solution)
        event = job.event("pull_request.opened", pull)
        step = job.run("pull_request", event, pull, {"report": "repogym-report.json"})
        assert fake.violations == []
    assert step.exit_code == 0, step.log
    assert step.outputs["report"] == "/github/workspace/repogym-report.json"
    report = json.loads((tmp_path / "run-1" / "workspace" / "repogym-report.json").read_text())
    assert report["passed"] is True and report["head"]["sha"] == pull.head_sha
    [run_] = fake.check_runs(pull.head_sha)
    assert run_["conclusion"] == "success"


@pytest.mark.parametrize("name", ["bugfix", "perf", "refactor", "feature"])
def test_the_image_and_the_process_give_the_same_grade(
    tmp_path: Path, action_image: str, name: str
) -> None:
    """One pull request graded both ways: the same verdict, score and components, and the
    same comment but for the run's own links."""
    from tests.action.runners import Process

    base = files_of(EXAMPLES / name / "repo")
    solution = files_of(EXAMPLES / name / "solution")
    grades = []
    for how, runner in (("process", Process()), ("container", DockerAction(action_image))):
        with FakeGitHub() as fake:
            job = Job(tmp_path / how, fake, runner)
            pull = job.open_pull(5, base=base, head=solution)
            step = job.run("pull_request", job.event("pull_request.opened", pull), pull)
            assert step.exit_code == 0, step.log
            assert step.report is not None
            [comment] = fake.comments(5)
            assert "repogym: passed" in comment["body"]
            # A benchmark's figures differ from run to run; everything else must not.
            grades.append(
                (
                    step.report["passed"],
                    [
                        (c["name"], c["passed"], None if c["name"] == "perf" else c["score"])
                        for c in step.report["components"]
                    ],
                )
            )
    assert grades[0] == grades[1]
