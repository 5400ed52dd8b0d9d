"""Shared fixtures: real git repositories in temporary directories."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.packaging import InstalledWheel, build_wheel, install_wheel, source_copy
from tests.support.repo import Repo


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="write the golden files (tests/golden/) from what the code renders now",
    )


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> InstalledWheel:
    """A wheel built from this tree, installed in a fresh venv: the package as a user
    gets it from ``pip install .`` (tests/support/packaging.py). Built once per session."""
    root = tmp_path_factory.mktemp("wheel")
    source = source_copy(root / "source")
    wheel = build_wheel(source, root / "dist")
    return install_wheel(wheel, root / "venv")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """An empty repository on branch main."""
    return Repo(tmp_path / "repo")


@pytest.fixture(autouse=True)
def _sandbox_where_attacked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox user (root only) for the attacks of tests/security and the tests
    marked ``sandbox``; elsewhere commands run as the test process's user, so that the
    tests can watch them through files under their own 0700 temporary directories."""
    attacked = "security" in request.node.path.parts or request.node.get_closest_marker("sandbox")
    if attacked:
        monkeypatch.delenv("REPOGYM_SANDBOX", raising=False)
    else:
        monkeypatch.setenv("REPOGYM_SANDBOX", "off")


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    # The machine's own git config must not change what the tests see.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture(scope="session")
def action_image() -> str:
    """The Action's image built from this checkout on the local base (tests/support/docker.py);
    skips without a Docker engine, fails instead where REPOGYM_REQUIRE_DOCKER=1."""
    from tests.support import docker

    docker.engine_or_skip()
    return docker.build()


@pytest.fixture(scope="session")
def env_images() -> Iterator[tuple[str, ...]]:
    """The public images the environment examples' Dockerfiles start from (issue 20): the
    engine's own, or stand-ins built on the local base (tests/container/envimages.py) and
    removed again at the session's end. Skips without a Docker engine, fails instead where
    REPOGYM_REQUIRE_DOCKER=1."""
    from tests.support import docker

    docker.engine_or_skip()
    try:
        import docker as sdk

        from tests.container import envimages
    except ImportError as error:  # the Docker SDK for Python, `pip install docker`
        message = f"no Docker SDK for Python ({error}): `pip install docker`"
        if os.environ.get(docker.REQUIRE) == "1":
            pytest.fail(message + f" ({docker.REQUIRE}=1)")
        pytest.skip(message)
    client = sdk.from_env()
    try:
        try:
            tags = tuple(envimages.ensure(client))
        except envimages.StandInError as error:
            pytest.fail(str(error))
        yield tags
    finally:
        envimages.remove_added(client)
        client.close()


@pytest.fixture(scope="session")
def twenty(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[Path, Path]:
    """The 20 jobs every executor grades (tests/support/batching.py), and their output from one
    local worker, graded once per session for the other executors to be held to. The Node
    jobs need a Docker engine: without one (where it is not required) they are left out."""
    from tests.support.batching import run_batch, twenty_jobs

    try:
        request.getfixturevalue("env_images")
        node = True
    except pytest.skip.Exception:
        node = False
    jobs = twenty_jobs(tmp_path_factory.mktemp("twenty"), node=node)
    output = jobs.parent / "one-worker.jsonl"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REPOGYM_SANDBOX", "off")  # as the tests that compare with it run
        done = run_batch(jobs, "--output", output, "--jobs", "1")
    assert done.returncode == 1, done.stdout + done.stderr  # the jobs that cannot be graded
    return jobs, output
