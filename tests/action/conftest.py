"""The two jobs the Action's end-to-end tests run in: ``job``, the program as a process
(what most cases need), and ``any_job``, each case twice, as a process and as the image
the Actions runner starts for a container action (tests/action/runners.py), which must
give the same results. The fake GitHub must have seen no request GitHub would refuse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action.fake_github import FakeGitHub
from tests.action.job import Job
from tests.action.runners import DockerAction, Process, Runner


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake, Process())
        assert fake.violations == []


@pytest.fixture(params=["process", "container"])
def any_job(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Job]:
    runner: Runner = Process()
    if request.param == "container":
        runner = DockerAction(request.getfixturevalue("action_image"))
    with FakeGitHub() as fake:
        yield Job(tmp_path, fake, runner)
        assert fake.violations == []
