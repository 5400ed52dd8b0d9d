"""``repogym batch --ray``, ``grade_many(executor=Ray())`` and ``validate_many(executor=
Ray())`` (issue 23) on real Ray: an in-process ``ray.init`` and a head started with ``ray
start``, both bound to 127.0.0.1 (nothing may leave this machine); the same reports (and
validations) as one local worker; a Ray worker killed mid-job, its job retried once and
said so."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import repogym
from repogym.batch import Local, Ray
from tests.support.batching import (
    blocking_jobs,
    comparable,
    fifo_path,
    kill_the_worker_of_the_slow_job,
    lines_of,
    make_tasks,
    run_batch,
)
from tests.support.waiting import BACKSTOP

ray = pytest.importorskip("ray", reason="pip install -e '.[dev]' installs Ray")
# Ray's own modules warn of their own deprecations on import; they are not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
LOOPBACK = "127.0.0.1"


@pytest.fixture
def fifo() -> Iterator[Path]:
    yield from fifo_path()


@contextlib.contextmanager
def local_ray() -> Iterator[None]:
    """A Ray of 2 CPUs in this process, bound to 127.0.0.1 (Ray would pick the machine's
    other address), shut down after."""
    ray.init(num_cpus=2, _node_ip_address=LOOPBACK, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _jobs(file: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in file.read_text().splitlines() if line.startswith("{")]


def test_grade_many_on_ray_in_process_gives_the_local_reports(twenty: tuple[Path, Path]) -> None:
    file, one_worker = twenty
    # The line that is not JSON is no job of grade_many's.
    local = {i: comparable(line) for i, line in lines_of(one_worker).items() if not i.isdigit()}
    with local_ray():
        graded = repogym.grade_many(_jobs(file), executor=Ray(), root=file.parent)
        on_ray = {line["id"]: comparable(line) for line in graded}
    assert on_ray == local


def test_validate_many_on_ray_in_process_gives_the_local_lines(tmp_path: Path) -> None:
    tasks = _jobs(make_tasks(tmp_path))
    local = {
        line["id"]: line
        for line in repogym.batch.validate_many(tasks, executor=Local(1), root=tmp_path)
    }
    with local_ray():
        on_ray = {
            line["id"]: line
            for line in repogym.batch.validate_many(tasks, executor=Ray(), root=tmp_path)
        }
    assert {i for i, line in on_ray.items() if line["valid"]} == {"ref", "patch"}
    assert {i: comparable(v) for i, v in on_ray.items()} == {
        i: comparable(v) for i, v in local.items()
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def head() -> Iterator[dict[str, str]]:
    """A Ray head on this machine, started as a user starts one, bound to 127.0.0.1, for
    the module's tests (stopping one takes long); the environment that finds it (``--ray
    auto``). Its workers run the commands as the test process's user, as the tests that
    compare with them do."""
    env = {**os.environ, "RAY_ADDRESS": "", "REPOGYM_SANDBOX": "off"}
    env.pop("RAY_ADDRESS")
    port = _free_port()
    start = [
        "ray", "start", "--head", "--node-ip-address", LOOPBACK, "--port", str(port),
        "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
    ]  # fmt: skip
    done = subprocess.run(start, env=env, capture_output=True, text=True, timeout=BACKSTOP)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield env
    finally:
        subprocess.run(["ray", "stop", "--force"], env=env, capture_output=True, timeout=BACKSTOP)


def test_batch_on_a_ray_head_gives_the_local_reports(
    twenty: tuple[Path, Path], tmp_path: Path, head: dict[str, str]
) -> None:
    file, one_worker = twenty
    remote = tmp_path / "ray.jsonl"
    done = run_batch(file, "--output", remote, "--ray", "auto", check=True)
    assert done.returncode == 1, done.stderr  # the jobs that cannot be graded
    assert {i: comparable(v) for i, v in lines_of(remote).items()} == {
        i: comparable(v) for i, v in lines_of(one_worker).items()
    }


def test_a_ray_worker_killed_mid_job_is_retried_once(
    tmp_path: Path, head: dict[str, str], fifo: Path
) -> None:
    jobs = blocking_jobs(tmp_path, fifo)
    output = tmp_path / "out.jsonl"

    def a_ray_worker(pid: int, batch: int) -> bool:
        return Path(f"/proc/{pid}/comm").read_text().startswith("ray::")

    code, said = kill_the_worker_of_the_slow_job(
        ["--ray", "auto"], jobs, output, fifo, a_ray_worker
    )
    assert code == 0, said
    by_id = lines_of(output)
    assert by_id["slow"]["passed"] is True and by_id["slow"]["retried"] is True
    assert by_id["quick"]["passed"] is False
