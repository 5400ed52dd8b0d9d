"""The examples whose commands run in containers (``environment:``, issue 20) work in the
images their Dockerfiles build: run as a task's commands run there (uid 10001, a read-only
root file system, a tmpfs ``/tmp`` as ``HOME`` and ``TMPDIR``, no network, the tree in a
volume), each example's tests fail its ``fail_to_pass`` ids at the base and pass them with
the reference solution, and pass its ``pass_to_pass`` ids at both.

This checks the examples and their Dockerfiles, not the engine: the containers are made
here with the Docker SDK. The Dockerfiles start from public images, which the session's
``env_images`` fixture provides as stand-ins where the engine has none
(tests/container/envimages.py).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from repogym._demo import EXAMPLES
from repogym.junit import Outcome, iter_cases
from repogym.junit.testids import collect

# The Docker SDK for Python (`pip install docker`); the `env_images` fixture fails without
# it where REPOGYM_REQUIRE_DOCKER=1.
docker = pytest.importorskip("docker")
from tests.container import envimages  # noqa: E402  (it imports the SDK)

NAMES = ("go", "node")
UID = 10001
WORK = "/work"  # the volume: the tree in tree/, the JUnit report in out/
REPORT = f"{WORK}/out/junit.xml"
# Go runs its test binaries from TMPDIR: the tmpfs must allow exec (Docker's default is
# noexec, and `go test` then fails with "fork/exec /tmp/go-build.../x.test: permission denied").
TMPFS = {"/tmp": "rw,exec,nosuid,nodev,size=1g"}
# One tag per checkout, as tests/support/docker.py: two checkouts tested at once never share one.
SUFFIX = hashlib.sha256(str(Path(__file__).resolve().parents[2]).encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    name: str
    task: dict[str, Any]  # the task file as YAML reads it (the engine's schema may not know
    # `environment:` yet)
    image: str

    @property
    def ids(self) -> tuple[list[str], list[str]]:
        tests = self.task["tests"]
        return list(tests.get("fail_to_pass", ())), list(tests.get("pass_to_pass", ()))


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    exit_code: int
    output: str
    outcomes: dict[str, Outcome]


@pytest.fixture(scope="module")
def client(env_images: tuple[str, ...]) -> Iterator[Any]:
    made = docker.from_env()
    yield made
    made.close()


@pytest.fixture(scope="module")
def examples(client: Any) -> Iterator[dict[str, Example]]:
    """Each example's image, built from its tree with the network off, as a task's is."""
    built: dict[str, Example] = {}
    try:
        for name in NAMES:
            tree = EXAMPLES / name / "repo"
            task = yaml.safe_load((tree / ".repogym.yml").read_text())
            tag = f"repogym-env-example-{name}:test-{SUFFIX}"
            try:
                client.images.build(
                    path=str(tree),
                    dockerfile=task["environment"]["dockerfile"],
                    tag=tag,
                    network_mode="none",
                    rm=True,
                    forcerm=True,
                )
            except docker.errors.BuildError as error:
                pytest.fail(
                    f"examples/{name}: building its image failed: {error.msg}\n"
                    + envimages.build_tail(error.build_log)
                )
            built[name] = Example(name=name, task=task, image=tag)
        yield built
    finally:
        for example in built.values():
            client.images.remove(example.image, force=True)


def tree_of(name: str, solved: bool, dest: Path) -> Path:
    """The example's base tree, with its reference solution written over it if ``solved``."""
    shutil.copytree(EXAMPLES / name / "repo", dest)
    if solved:
        shutil.copytree(EXAMPLES / name / "solution", dest, dirs_exist_ok=True)
    return dest


def archive(tree: Path) -> bytes:
    """``tree`` as ``tree/`` beside an empty ``out/``, every entry owned by the uid the
    commands run as, so that they can write where the engine lets them."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = UID
        info.uname = info.gname = ""
        return info

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        tar.add(tree, arcname="tree", filter=owned)
        out = owned(tarfile.TarInfo("out"))
        out.type, out.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(out)
    return data.getvalue()


def run_tests(client: Any, example: Example, tree: Path, scratch: Path) -> Run:
    """The example's test command in a container of its image, on ``tree``."""
    command = example.task["tests"]["command"].replace("{junit}", REPORT)
    volume = client.volumes.create()
    try:
        container = client.containers.create(
            example.image,
            ["sh", "-c", command],
            user=f"{UID}:{UID}",
            read_only=True,
            tmpfs=TMPFS,
            network_mode="none",
            working_dir=f"{WORK}/tree",
            environment={"HOME": "/tmp", "TMPDIR": "/tmp", **example.task.get("env", {})},
            volumes={volume.name: {"bind": WORK, "mode": "rw"}},
        )
        try:
            assert container.put_archive(WORK, archive(tree))
            container.start()
            exit_code = container.wait(timeout=example.task["tests"]["timeout"])["StatusCode"]
            output = container.logs().decode(errors="replace")
            report = scratch / "junit.xml"
            stream, _ = container.get_archive(REPORT)
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                member = tar.extractfile("junit.xml")
                assert member is not None, output
                report.write_bytes(member.read())
        finally:
            container.remove(force=True)
    finally:
        volume.remove(force=True)
    fail_to_pass, pass_to_pass = example.ids
    results = collect(iter_cases(report), tree=tree, known_ids=fail_to_pass + pass_to_pass)
    return Run(
        exit_code=exit_code,
        output=output,
        outcomes={key: result.outcome for key, result in results.items()},
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_targets_fail_at_the_base_and_the_regressions_pass(
    name: str, client: Any, examples: dict[str, Example], tmp_path: Path
) -> None:
    example = examples[name]
    run = run_tests(client, example, tree_of(name, False, tmp_path / "tree"), tmp_path)
    fail_to_pass, pass_to_pass = example.ids
    assert run.exit_code == 1, run.output  # tests failed, as every runner here says it
    assert {i: run.outcomes.get(i) for i in fail_to_pass} == dict.fromkeys(
        fail_to_pass, Outcome.FAILED
    ), run.output
    assert {i: run.outcomes.get(i) for i in pass_to_pass} == dict.fromkeys(
        pass_to_pass, Outcome.PASSED
    ), run.output


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_passes_every_test(
    name: str, client: Any, examples: dict[str, Example], tmp_path: Path
) -> None:
    example = examples[name]
    run = run_tests(client, example, tree_of(name, True, tmp_path / "tree"), tmp_path)
    fail_to_pass, pass_to_pass = example.ids
    assert run.exit_code == 0, run.output
    assert {i: run.outcomes.get(i) for i in fail_to_pass + pass_to_pass} == dict.fromkeys(
        fail_to_pass + pass_to_pass, Outcome.PASSED
    ), run.output
    # Every test of the report passes, not only the task's: no test was left out of them.
    assert set(run.outcomes.values()) == {Outcome.PASSED}, run.outcomes
