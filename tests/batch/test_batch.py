"""``repogym batch`` (issue 23) end to end: real repositories, real pytest runs, the
command as a process; the same reports from one worker and from two, a bad line or patch
as a job with an error, a resume after the batch is killed, a worker killed mid-job."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import repogym
from repogym._demo import build_example_repo
from repogym.batch import Local
from repogym.batch.jobs import Job
from repogym.batch.lines import line_of
from tests.support.batching import (
    assert_alone,
    blocking_jobs,
    comparable,
    fifo_path,
    git,
    interrupted,
    kill_the_worker_of_the_slow_job,
    lines_of,
    make_perf_repo,
    one_test_repo,
    readers,
    release,
    run_batch,
    run_repogym,
    status,
)
from tests.support.waiting import BACKSTOP


@pytest.fixture
def fifo() -> Iterator[Path]:
    yield from fifo_path()


ERRORS = {
    "patch that does not apply": "`patch` {root}/stale.patch: it does not apply at the base "
    "(error: patch failed: src/slugify/core.py:1)",
    "missing patch": "`patch` {root}/no-such.patch: no such file",
    "no commit": "`ref` 'no-such-ref' is no commit of the repository",
    "no submission": "line {line}: `the job`: give the submission as exactly one of "
    "`patch`, `ref` or `tree` (none given)",
    "two submissions": "line {line}: `the job`: give the submission as exactly one of "
    "`patch`, `ref` or `tree` (`patch`, `ref` given)",
    "unknown key": "line {line}: `branch`: Extra inputs are not permitted",
    "{line}": "line {line}: not JSON (Expecting value: line 1 column 1 (char 0)); write one object",
}


def test_one_worker_and_two_give_the_same_reports(
    twenty: tuple[Path, Path], tmp_path: Path
) -> None:
    jobs, one = twenty
    two = tmp_path / "two.jsonl"
    second = run_batch(jobs, "--output", two, "--jobs", "2", check=True)
    assert second.returncode == 1  # the jobs that cannot be graded
    by_one, by_two = lines_of(one), lines_of(two)
    assert len(by_one) == (20 if "node ref" in by_one else 18)
    assert {i: comparable(line) for i, line in by_one.items()} == {
        i: comparable(line) for i, line in by_two.items()
    }
    passing = {"bugfix ref", "bugfix patch", "bugfix tree", "feature ref", "feature hidden dir"}
    passing |= {"refactor tree"} | ({"node ref"} & set(by_one))
    assert {i for i, line in by_two.items() if line.get("passed")} == passing
    for job in passing:
        assert by_two[job]["score"] == 1 and set(by_two[job]["timings"]) == {
            "started_at", "prepare", "grade", "total",
        }  # fmt: skip
    for job in ("bugfix empty", "bugfix wrong fix", "feature empty", "refactor empty"):
        assert by_two[job]["passed"] is False and by_two[job]["score"] == 0, by_two[job]
    tests = next(c for c in by_two["timeout"]["components"] if c["name"] == "tests")
    assert tests["score"] == 0 and "timed out after 1 s" in " ".join(tests["messages"])
    lines = jobs.read_text().splitlines()
    number = {json.loads(t).get("id"): n for n, t in enumerate(lines, 1) if t.startswith("{")}
    number["{line}"] = len(lines)  # the line that is not JSON: its id is its number
    for job, message in ERRORS.items():
        line = by_two[job.format(line=number[job])]
        expected = message.format(root=jobs.parent, line=number[job])
        assert line["error"]["message"].startswith(expected), line
    summary = second.stdout.splitlines()
    assert f"passed {len(passing):>18}" in summary and f"errors {len(ERRORS):>18}" in summary


def test_an_output_with_lines_needs_resume(twenty: tuple[Path, Path], tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "ref"}\n')
    done = run_batch(twenty[0], "--output", output)
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
        [test] = [pid for pid in readers(fifo) if pid != os.getpid()]
        reader = os.pidfd_open(test)
        assert set(lines_of(output)) == {"quick"}  # written whole as it ended
        batch.kill()
        batch.wait()
        os.close(held)  # the killed batch's test, if it outlived the batch, reads the end
        select.select([reader], [], [], BACKSTOP)  # and is gone before the next may read
        os.close(reader)
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
    batch, err = interrupted(["batch", str(jobs), "-o", str(output), "-j", workers], fifo)
    assert batch.returncode == 130, err
    assert "repogym: interrupted by SIGINT" in err
    if workers == "1":
        assert set(lines_of(output)) == {"quick"}
    else:  # the quick job ran beside the slow one, and may have ended first
        assert set(lines_of(output)) <= {"quick"}


def test_ctrl_c_stops_a_batch_whose_other_worker_is_idle(tmp_path: Path, fifo: Path) -> None:
    """One job, two workers: the other waits for work on the pool's queue, where a
    SIGTERM must not leave the queue locked for the busy one (the batch would hang)."""
    jobs = blocking_jobs(tmp_path, fifo)
    jobs.write_text(jobs.read_text().splitlines()[0] + "\n")  # the slow job alone
    batch, err = interrupted(["batch", str(jobs), "-o", str(tmp_path / "o"), "-j", "2"], fifo)
    assert batch.returncode == 130, err
    assert lines_of(tmp_path / "o") == {}


def test_a_worker_stopped_alone_has_its_job_tried_again(tmp_path: Path, fifo: Path) -> None:
    """A SIGTERM to one worker (not to the batch) ends its job's grade as a Ctrl-C
    would: that job is tried once more, and the batch goes on."""
    jobs = blocking_jobs(tmp_path, fifo)
    output = tmp_path / "out.jsonl"

    def forked_by_its_forkserver(pid: int, batch: int) -> bool:
        return status(status(pid, "PPid:"), "PPid:") == batch

    code, said = kill_the_worker_of_the_slow_job(
        ["-j", "2"], jobs, output, fifo, forked_by_its_forkserver, signal.SIGTERM
    )
    assert code == 0, said
    by_id = lines_of(output)
    assert by_id["slow"]["passed"] is True and by_id["slow"]["retried"] is True


CRASHER = """\
version: 1
type: bugfix
tests:
  command: kill -9 $PPID; python -c 'pass' {junit}
  fail_to_pass: [tests/test_x.py::test_x]
"""


def test_only_the_job_whose_worker_dies_twice_is_an_error(tmp_path: Path) -> None:
    """A job that kills its worker takes the pool's other workers with it: the jobs that
    were running are tried again one at a time, so the one beside it is graded, and the
    one that kills its worker again is the only error."""
    one_test_repo(tmp_path / "crasher", CRASHER)
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    jobs = [
        {"repo": "bugfix", "base": "main", "ref": "submission", "id": "beside"},
        {"repo": "crasher", "base": "main", "ref": "main", "id": "crasher"},
    ] + [{"repo": "bugfix", "base": "main", "ref": "main", "id": f"after {n}"} for n in range(3)]
    lines = {
        line["id"]: line for line in repogym.grade_many(jobs, executor=Local(2), root=tmp_path)
    }
    assert lines["crasher"]["error"]["message"] == (
        "the worker running this job died twice (killed, or out of memory)"
    )
    assert lines["beside"]["passed"] is True, lines["beside"]
    assert all(lines[f"after {n}"]["passed"] is False for n in range(3))
    assert all("error" not in line for i, line in lines.items() if i != "crasher")


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


def test_the_jobs_of_one_base_share_its_runs_in_a_worker(tmp_path: Path) -> None:
    """Each job grades in a clone of its own, yet the base's runs of the tests (two, for
    ``pass_to_pass: baseline``) are made once by the worker that grades its jobs, not once
    per job: the trees and runs of a base are keyed by its commit, not by the clone."""
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    log = tmp_path / "runs" / "log"
    log.parent.mkdir()
    log.parent.chmod(0o777)  # the sandbox user's commands append to it
    task = (tmp_path / "bugfix/.repogym.yml").read_text()
    task = task.replace("command: python", f"command: echo run >> {log}; python")
    start, end = task.index("  pass_to_pass:"), task.index("  timeout:")
    (tmp_path / "task.yml").write_text(task[:start] + "  pass_to_pass: baseline\n" + task[end:])
    jobs = [
        {"repo": "bugfix", "base": "main", "ref": ref, "task": "task.yml", "id": f"{ref}-{n}"}
        for n, ref in enumerate(["submission", "main", "submission"])
    ]
    graded = repogym.grade_many(jobs, executor=Local(1), root=tmp_path)
    lines = {line["id"]: line for line in graded}
    passed = [lines[i]["passed"] for i in ("submission-0", "main-1", "submission-2")]
    assert passed == [True, False, True], lines
    assert lines["submission-2"]["components"][1]["details"]["baseline"]["runs"] == 2
    # The base's two runs, then one run of each job's submission, and two more of the
    # unchanged job's failing targets alone (run again: issue 47).
    assert log.read_text().count("run\n") == 2 + len(jobs) + 2


def _three_jobs(root: Path) -> Path:
    build_example_repo("bugfix", root / "bugfix", solution=True)
    jobs = root / "jobs.jsonl"
    jobs.write_text(
        json.dumps({"repo": "bugfix", "base": "main", "ref": "submission"})
        + "\n"
        + json.dumps({"repo": "bugfix", "base": "main", "ref": "main"})
        + "\nnot json\n"
    )
    return jobs


COUNTS = r"\d/3 done \(\d passed, \d failed, \d errors\), [0-2] running(, ETA \d+s)?"
END = "3/3 done (1 passed, 1 failed, 1 errors), 0 running"


def test_progress_is_plain_lines_in_a_log(tmp_path: Path) -> None:
    done = run_batch(_three_jobs(tmp_path), "-o", tmp_path / "out.jsonl", "-j", "2")
    first, *middle, last = done.stderr.splitlines()
    assert first == "repogym batch: 3 jobs"
    assert all(re.fullmatch(f"repogym batch: {COUNTS}", line) for line in middle), middle
    assert last == f"repogym batch: {END}"


def test_progress_is_a_live_bar_on_a_terminal(tmp_path: Path) -> None:
    jobs = _three_jobs(tmp_path)
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "repogym", "batch", str(jobs), "-o", str(tmp_path / "o")]
    with subprocess.Popen(
        [*command, "-j", "2"], stdout=subprocess.PIPE, stderr=follower, text=True
    ) as batch:
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the other end closed: the batch has ended
                break
            if not chunk:
                break
            said += chunk
        batch.communicate(timeout=BACKSTOP)
    os.close(leader)
    text = said.decode().replace("\r\n", "\n")
    start, *bars = text.split("\r")
    assert start == "repogym batch: 3 jobs\n"
    assert all(re.fullmatch(rf"\[[#.]{{30}}\] {COUNTS}\n?", bar) for bar in bars), bars
    assert bars[-1] == f"[{'#' * 30}] {END}\n"


GRADER = """\
from repogym.graders import Grader
from repogym.models import GradeComponent


class Mine(Grader):
    name = "mine"

    def grade(self, workspace):
        return GradeComponent(name=self.name, score={score}, passed=True, messages=["{name}"])
"""


def test_each_job_is_graded_by_its_own_rubrics_custom_grader(tmp_path: Path) -> None:
    """Two tasks with a custom grader of one module name (``tools.graders``): a worker
    that imported the first's must not grade the second with it."""
    for name, score in (("one", 1.0), ("two", 0.0)):
        repo = build_example_repo("bugfix", tmp_path / name, solution=False)
        (repo / "tools").mkdir()
        (repo / "tools/__init__.py").write_text("")
        (repo / "tools/graders.py").write_text(GRADER.format(score=score, name=name))
        task = repo / ".repogym.yml"
        task.write_text(task.read_text() + "grading:\n  graders: ['tools.graders:Mine']\n")
        git(repo, "add", "--all")
        git(repo, "commit", "--quiet", "-m", "a custom grader")
    jobs = [
        {"repo": name, "base": "submission", "ref": "submission", "id": name}
        for name in ("one", "two")
    ]
    lines = {
        line["id"]: line for line in repogym.grade_many(jobs, executor=Local(1), root=tmp_path)
    }
    for name, score in (("one", 1.0), ("two", 0.0)):
        [mine] = [c for c in lines[name]["components"] if c["name"] == "mine"]
        assert (mine["score"], mine["messages"]) == (score, [name]), lines[name]


def test_a_resume_cuts_off_the_line_a_kill_cut(tmp_path: Path) -> None:
    """The killed run's last line, cut short, is no line: the resume drops it and runs
    its job again, and every line of the output is whole."""
    jobs = _three_jobs(tmp_path)
    output = tmp_path / "out.jsonl"
    earlier = '{"id": "1", "passed": true}\n'
    output.write_text(earlier + '{"id": "2", "passed": tr')
    done = run_batch(jobs, "--output", output, "--resume", "-j", "1", check=True)
    assert "repogym batch: 3 jobs, 1 done before (--resume)" in done.stderr
    text = output.read_text()
    assert text.startswith(earlier) and text.endswith("\n")
    assert [json.loads(line)["id"] for line in text.splitlines()] == ["1", "2", "3"]


def test_a_jobs_repository_by_path_or_url_and_any_name_of_its_commits(tmp_path: Path) -> None:
    """A local repository's own names resolve (``HEAD``, a pull request's ref); a URL is
    fetched with the full refs a job names, and its task is read where the batch starts,
    so that a job without ``perf`` is not taken for one and run alone; a URL that cannot
    be fetched is an error naming it, not the job's private clone."""
    repo = build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    git(repo, "update-ref", "refs/pull/1/head", "submission")
    url = (tmp_path / "bugfix").as_uri()
    jobs = [
        {"repo": "bugfix", "base": "main", "ref": "HEAD", "id": "head"},
        {"repo": "bugfix", "base": "main", "ref": "refs/pull/1/head", "id": "pull"},
        {"repo": url, "base": "main", "ref": "refs/pull/1/head", "id": "url"},
        {"repo": "file:///no/such/repo", "base": "main", "ref": "main", "id": "gone"},
    ]
    assert [line_of(Job, job, 1, str(tmp_path)).perf for job in jobs[2:]] == [False, True]
    graded = repogym.grade_many(jobs, executor=Local(1), root=tmp_path)
    lines = {line["id"]: line for line in graded}
    assert all(lines[i]["passed"] is True for i in ("head", "pull", "url")), lines
    message = lines["gone"]["error"]["message"]
    assert message.startswith("`repo` file:///no/such/repo: git fetch failed: "), message
    assert "repogym-job-" not in message


def test_a_cancelled_async_consumer_ends_with_its_cancellation(tmp_path: Path) -> None:
    """A training loop that cancels its consumer mid-batch gets its CancelledError (the
    generator is closed in the thread it runs in, not beside a step in flight)."""
    build_example_repo("bugfix", tmp_path / "bugfix", solution=True)
    jobs = [{"repo": "bugfix", "base": "main", "ref": "submission", "id": f"{n}"} for n in range(4)]

    async def consume(first: asyncio.Event) -> None:
        async for _ in repogym.grade_many_async(jobs, executor=Local(2), root=tmp_path):
            first.set()

    async def cancel_after_the_first_line() -> None:
        first = asyncio.Event()
        consumer = asyncio.create_task(consume(first))
        await first.wait()
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer

    asyncio.run(cancel_after_the_first_line())


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the commands run as sandbox users as root only")
def test_the_workers_of_a_machine_share_a_bases_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where every command runs as a sandbox user, the base's runs of the tests are made
    once on the machine: the first worker that needs them makes them, the other reads
    them (4 jobs of one base on two workers: the base's two runs, then one a job)."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-node-runs-"))
    try:
        holder.chmod(0o755)
        build_example_repo("bugfix", holder / "bugfix", solution=True)
        # Each test command says it ran through a FIFO: a sealed command sees nothing of
        # the machine but what the operator shows it, read-only, which does not stop a
        # writer of a FIFO (issue 43).
        log = holder / "runs" / "log"
        log.parent.mkdir()
        os.mkfifo(log)
        log.chmod(0o666)  # each job's commands run as a sandbox user of its own
        monkeypatch.setenv("REPOGYM_SEAL_SHOW", str(log.parent))
        said = _Collected(log)
        task = (holder / "bugfix/.repogym.yml").read_text()
        task = task.replace("command: python", f"command: echo run >> {log}; python")
        start, end = task.index("  pass_to_pass:"), task.index("  timeout:")
        (holder / "task.yml").write_text(task[:start] + "  pass_to_pass: baseline\n" + task[end:])
        jobs = holder / "jobs.jsonl"
        lines = [
            {"repo": "bugfix", "base": "main", "ref": "submission", "task": "task.yml"}
            for _ in range(4)
        ]
        jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
        done = run_batch(jobs, "--output", holder / "out.jsonl", "--jobs", "2", check=True)
        assert done.returncode == 0, done.stderr
        assert all(line["passed"] for line in lines_of(holder / "out.jsonl").values())
        assert said.text().count("run\n") == 2 + len(lines)
    finally:
        shutil.rmtree(holder, ignore_errors=True)


class _Collected:
    """Everything written to the FIFO at ``path`` while it is open here: a reader, and a
    writer of ours so that no writer's close ends the reading."""

    def __init__(self, path: Path) -> None:
        self._read = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._hold = os.open(path, os.O_WRONLY)
        os.set_blocking(self._read, True)
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        while chunk := os.read(self._read, 65536):
            self._chunks.append(chunk)

    def text(self) -> str:
        """What was written, once every writer but ours is gone (we close ours)."""
        os.close(self._hold)
        self._thread.join(BACKSTOP)  # a backstop: the last writer's close ends the read
        assert not self._thread.is_alive(), "a writer of the FIFO outlived its command"
        os.close(self._read)
        return b"".join(self._chunks).decode()


def test_the_summary_says_what_the_exit_code_says(tmp_path: Path) -> None:
    """issue 45: a batch whose jobs failed exits 0, which nothing said. The summary ends
    with the exit code and why; --fail-on-fail makes a failed job exit 1. The output goes
    into directories made where missing, as --json's and --markdown's do."""
    build_example_repo("bugfix", tmp_path / "bugfix")
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        "".join(
            json.dumps({"repo": "bugfix", "base": "main", "ref": ref, "id": ref}) + "\n"
            for ref in ("submission", "main")
        )
    )
    output = tmp_path / "new" / "reports.jsonl"
    done = run_batch(jobs, "--output", output, "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {i: line["passed"] for i, line in lines_of(output).items()} == {
        "submission": True,
        "main": False,
    }
    assert done.stdout.splitlines()[-1] == (
        "exit 0: every job has its report; 1 job failed, which is exit 1 only with --fail-on-fail"
    )
    again = run_batch(jobs, "--output", tmp_path / "strict" / "r.jsonl", "--fail-on-fail")
    assert again.returncode == 1, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == "exit 1: 1 job failed (--fail-on-fail)"
    assert "--fail-on-fail some job failed; 2 a usage error" in " ".join(
        run_repogym("batch", "--help").stdout.split()
    )
