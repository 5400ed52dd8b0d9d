"""``repogym batch`` (issue 23) end to end: real repositories, real pytest runs, the
command as a process; the same reports from one worker and from two, a bad line or patch
as a job with an error, a resume after the batch is killed, a worker killed mid-job."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import repogym
from repogym._demo import build_example_repo
from repogym.batch import Local
from tests.batching import (
    assert_alone,
    blocking_jobs,
    comparable,
    fifo_path,
    kill_the_worker_of_the_slow_job,
    lines_of,
    make_jobs,
    make_perf_repo,
    readers,
    release,
    run_batch,
    status,
)
from tests.waiting import BACKSTOP


@pytest.fixture
def fifo() -> Iterator[Path]:
    yield from fifo_path()


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_jobs(tmp_path_factory.mktemp("batch"))


def test_one_worker_and_two_give_the_same_reports(batch: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    first = run_batch(batch, "--output", one, "--jobs", "1", check=True)
    second = run_batch(batch, "--output", two, "--jobs", "2", check=True)
    assert first.returncode == second.returncode == 1  # the three bad jobs
    by_one, by_two = lines_of(one), lines_of(two)
    assert set(by_one) == {"ref", "patch", "tree", "empty", "missing patch", "no submission", "7"}
    assert {i: comparable(line) for i, line in by_one.items()} == {
        i: comparable(line) for i, line in by_two.items()
    }
    for job in ("ref", "patch", "tree"):
        assert by_two[job]["passed"] is True, by_two[job]
        assert set(by_two[job]["timings"]) == {"started_at", "prepare", "grade", "total"}
    assert by_two["empty"]["passed"] is False and by_two["empty"]["score"] == 0
    assert by_two["missing patch"]["error"]["message"].endswith("no-such.patch: no such file")
    assert by_two["no submission"]["error"]["message"] == (
        "line 6: `the job`: give the submission as exactly one of `patch`, `ref` or `tree` "
        "(none given)"
    )
    assert by_two["7"]["error"]["message"].startswith("line 7: not JSON")
    summary = second.stdout.splitlines()
    assert "passed                  3" in summary and "errors                  3" in summary


def test_an_output_with_lines_needs_resume(batch: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "ref"}\n')
    done = run_batch(batch, "--output", output)
    assert done.returncode == 2
    assert done.stderr == (
        f"repogym: error: --output {output} already holds lines: pass --resume to take that "
        "batch up, or name a new file\n"
    )


def test_a_killed_batch_resumes_where_it_stopped(tmp_path: Path, fifo: Path) -> None:
    jobs = blocking_jobs(tmp_path, fifo)
    lines = jobs.read_text().splitlines()
    jobs.write_text("\n".join(reversed(lines)) + "\n")  # the quick job first
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "repogym", "batch", str(jobs), "-o", str(output), "-j", "1"]
    batch = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        held = os.open(fifo, os.O_WRONLY)  # the slow job's test is running
        assert set(lines_of(output)) == {"quick"}  # written whole as it ended
        batch.kill()
        batch.wait()
        os.close(held)
    finally:
        if batch.poll() is None:
            batch.kill()
    release(fifo)
    done = run_batch(jobs, "--output", output, "--resume", check=True)
    assert "repogym batch: 2 jobs, 1 done before (--resume)" in done.stderr
    by_id = lines_of(output)
    assert set(by_id) == {"quick", "slow"}
    assert by_id["slow"]["passed"] is True and "retried" not in by_id["slow"]


def test_a_worker_killed_mid_job_is_retried_once(tmp_path: Path, fifo: Path) -> None:
    jobs = blocking_jobs(tmp_path, fifo)
    output = tmp_path / "out.jsonl"

    def forked_by_its_forkserver(pid: int, batch: int) -> bool:
        return status(status(pid, "PPid:"), "PPid:") == batch

    code, said = kill_the_worker_of_the_slow_job(
        ["-j", "2"], jobs, output, fifo, forked_by_its_forkserver
    )
    assert code == 0, said
    by_id = lines_of(output)
    assert by_id["slow"]["passed"] is True and by_id["slow"]["retried"] is True
    # Running beside it when the worker died, or done before: its verdict is its own.
    assert by_id["quick"]["passed"] is False and by_id["quick"]["score"] == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_stops_the_batch_and_keeps_what_finished(
    tmp_path: Path, fifo: Path, workers: str
) -> None:
    jobs = blocking_jobs(tmp_path, fifo)
    lines = jobs.read_text().splitlines()
    jobs.write_text("\n".join(reversed(lines)) + "\n")  # the quick job first
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "repogym", "batch", str(jobs), "-o", str(output)]
    batch = subprocess.Popen(
        [*command, "-j", workers], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        held = os.open(fifo, os.O_WRONLY)  # the slow job's test is running
        batch.send_signal(signal.SIGINT)
        _, err = batch.communicate(timeout=BACKSTOP)
        # Its other end still open here: the slow job's test did not outlive the batch.
        assert [pid for pid in readers(fifo) if pid != os.getpid()] == []
        os.close(held)
    finally:
        if batch.poll() is None:
            batch.kill()
    assert batch.returncode == 130, err
    assert "repogym: interrupted by SIGINT" in err
    if workers == "1":
        assert set(lines_of(output)) == {"quick"}
    else:  # the quick job ran beside the slow one, and may have ended first
        assert set(lines_of(output)) <= {"quick"}


def test_a_perf_job_runs_alone(tmp_path: Path) -> None:
    """A job that times a benchmark never runs beside another: its time is its own."""
    make_perf_repo(tmp_path / "perf")
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    jobs = [
        {"repo": "bugfix", "base": "main", "ref": "submission", "id": f"b{n}"} for n in range(3)
    ]
    jobs.insert(1, {"repo": "perf", "base": "main", "ref": "main", "id": "perf"})
    file = tmp_path / "jobs.jsonl"
    file.write_text("".join(json.dumps(job) + "\n" for job in jobs))
    run_batch(file, "--output", tmp_path / "out.jsonl", "--jobs", "2", check=True)
    spans = {
        i: (line["timings"]["started_at"], line["timings"]["started_at"] + line["timings"]["total"])
        for i, line in lines_of(tmp_path / "out.jsonl").items()
    }
    assert "error" not in lines_of(tmp_path / "out.jsonl")["perf"]
    assert_alone(spans, "perf")


def test_grade_many_yields_each_line_and_has_an_async_form(tmp_path: Path) -> None:
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    jobs = [
        {"repo": "bugfix", "base": "main", "ref": "submission", "id": "solution"},
        {"repo": "bugfix", "base": "main", "ref": "main", "id": "empty"},
        {"repo": "bugfix", "base": "main", "ref": "no-such-ref"},
    ]
    lines = {line["id"]: line for line in repogym.grade_many(jobs, root=tmp_path)}
    assert lines["solution"]["passed"] is True and lines["empty"]["passed"] is False
    assert lines["3"]["error"]["message"] == "`ref` 'no-such-ref' is no commit of the repository"

    async def collect() -> dict[str, Any]:
        executor = Local(workers=2)
        found = {}
        async for line in repogym.grade_many_async(jobs, executor=executor, root=tmp_path):
            found[line["id"]] = line
        return found

    assert {i: comparable(line) for i, line in asyncio.run(collect()).items()} == {
        i: comparable(line) for i, line in lines.items()
    }
