"""What the batch tests share (issue 23): a job file over the bugfix example, a tasks
file for ``repogym validate --tasks``, the command run as a process and its output read,
a job whose test waits on a FIFO, and the processes that hold one."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from repogym._demo import build_example_repo
from tests.support.repo import IDENTITY
from tests.support.shell import repogym_command
from tests.support.waiting import BACKSTOP

# What differs between two grades of one job: when and how long, and where it ran.
VARYING = ("timings", "duration", "seconds", "output_tail", "command")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **IDENTITY}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


HANG_TASK = """\
version: 1
type: bugfix
tests:
  command: python -c "import signal; signal.pause()" {junit}
  fail_to_pass: [tests/test_x.py::test_x]
  timeout: 1
"""


def one_test_repo(repo: Path, task: str) -> Path:
    """A repository at ``repo`` whose base (``main``) has ``task`` and one test that
    passes, ``tests/test_x.py::test_x``: a task whose command is the point."""
    (repo / "tests").mkdir(parents=True)
    (repo / ".repogym.yml").write_text(task)
    (repo / "tests/test_x.py").write_text("def test_x():\n    pass\n")
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "base")
    return repo


def twenty_jobs(root: Path, *, node: bool = True) -> Path:
    """The same 20 jobs for every executor (issue 23): the bugfix example's solution as
    a ref, a patch and a tree, an empty patch and a wrong fix; the feature example
    with its hidden tests (in the repository, and from a directory of the job's); the
    refactor example; a test command that times out; the Node example, whose commands
    run in its image (``node``: the engine has the image); and seven jobs that cannot be
    graded (a patch that does not apply, one that is not there, a ref that is no commit,
    no submission, two submissions, a key no job has, a line that is not JSON)."""
    repos = {
        name: build_example_repo(name, root / name) for name in ("bugfix", "feature", "refactor")
    }
    (root / "fix.patch").write_text(git(repos["bugfix"], "diff", "main", "submission"))
    (root / "wrong.patch").write_text(
        git(repos["bugfix"], "diff", "main", "submission").replace("unicodedata", "unicodedatum")
    )
    (root / "stale.patch").write_text(
        (root / "fix.patch").read_text().replace("import ", "import  ", 1)
    )
    (root / "empty.patch").write_text("")
    (root / "feature.patch").write_text(git(repos["feature"], "diff", "main", "submission"))
    shutil.copytree(repos["feature"] / ".repogym/hidden", root / "hidden")
    git(
        repos["refactor"],
        "worktree",
        "add",
        "--quiet",
        "--detach",
        str(root / "refactored"),
        "submission",
    )
    git(repos["bugfix"], "worktree", "add", "--quiet", "--detach", str(root / "tree"), "submission")
    one_test_repo(root / "hang", HANG_TASK)
    bugfix = {"repo": "bugfix", "base": "main"}
    feature = {"repo": "feature", "base": "main"}
    lines: list[dict[str, Any]] = [
        {**bugfix, "ref": "submission", "id": "bugfix ref"},
        {**bugfix, "patch": "fix.patch", "id": "bugfix patch"},
        {**bugfix, "tree": "tree", "id": "bugfix tree"},
        {**bugfix, "patch": "empty.patch", "id": "bugfix empty"},  # an agent that did nothing
        {**bugfix, "patch": "wrong.patch", "id": "bugfix wrong fix"},
        {**feature, "ref": "submission", "id": "feature ref"},
        {**feature, "patch": "feature.patch", "hidden": "hidden", "id": "feature hidden dir"},
        {**feature, "ref": "main", "id": "feature empty"},
        {"repo": "refactor", "base": "main", "tree": "refactored", "id": "refactor tree"},
        {"repo": "refactor", "base": "main", "ref": "main", "id": "refactor empty"},
        {"repo": "hang", "base": "main", "ref": "main", "id": "timeout"},
        {**bugfix, "patch": "stale.patch", "id": "patch that does not apply"},
        {**bugfix, "patch": "no-such.patch", "id": "missing patch"},
        {**bugfix, "ref": "no-such-ref", "id": "no commit"},
        {**bugfix, "id": "no submission"},
        {**bugfix, "ref": "main", "patch": "fix.patch", "id": "two submissions"},
        {**bugfix, "ref": "main", "branch": "main", "id": "unknown key"},
    ]
    if node:
        build_example_repo("node", root / "node")
        lines[5:5] = [
            {"repo": "node", "base": "main", "ref": "submission", "id": "node ref"},
            {"repo": "node", "base": "main", "ref": "main", "id": "node empty"},
        ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + "not json\n"
    (root / "jobs.jsonl").write_text(text)
    return root / "jobs.jsonl"


PERF_TASK = """\
version: 1
type: perf
perf:
  command: python -c "sum(range(10**6))"
  runs: 2
  warmup: 0
  noise_floor: 1.5  # two pairs of a 0.1 s run: the empty submission must score 0
  min_speedup: 2
"""


def make_perf_repo(repo: Path) -> Path:
    """A repository whose task times a quick benchmark, on ``main``."""
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / ".repogym.yml").write_text(PERF_TASK)
    (repo / "work.py").write_text("pass\n")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "base")
    return repo


def assert_alone(spans: dict[str, tuple[float, float]], alone: str) -> None:
    """``alone``'s span (start, end, seconds since the epoch) overlaps no other."""
    start, end = spans.pop(alone)
    slack = 0.002  # the timings are rounded to the millisecond
    for other, (begins, ends) in spans.items():
        assert ends <= start + slack or begins >= end - slack, f"{other} ran beside {alone}"


def make_tasks(root: Path) -> Path:
    """A tasks file over the bugfix example: the task with its solution as a ref and as a
    patch (valid), the task at a base where its targets already pass and a task file
    whose id names no file (invalid), and four lines that cannot be validated."""
    repo = build_example_repo("bugfix", root / "bugfix", solution=True)
    (root / "fix.patch").write_text(git(repo, "diff", "main", "submission"))
    task = (repo / ".repogym.yml").read_text()
    typo = task.replace("test_slugify.py::test_ascii", "test_slugfy.py::test_ascii")
    (root / "typo.yml").write_text(typo)
    lines = [
        {"repo": "bugfix", "base": "main", "solution": "submission", "id": "ref"},
        {"repo": "bugfix", "base": "main", "solution": "fix.patch", "id": "patch"},
        {"repo": "bugfix", "base": "submission", "id": "fixed at the base"},
        {"repo": "bugfix", "base": "main", "task": "typo.yml", "id": "typo"},
        {"repo": "bugfix", "base": "no-such-ref", "id": "no base"},
        {"repo": "bugfix", "base": "main", "solution": "no-such.patch", "id": "no patch"},
        {"repo": "bugfix", "base": "main", "repeat": 3, "id": "repeat alone"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + "not json\n"
    (root / "tasks.jsonl").write_text(text)
    return root / "tasks.jsonl"


def run_repogym(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``repogym ARGS...`` as a process (``env``: variables on top of ours)."""
    return subprocess.run(
        [sys.executable, "-m", "repogym", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=BACKSTOP,
        env={**os.environ, **(env or {})},
    )


def interrupted(args: list[str], fifo: Path) -> tuple[subprocess.Popen[str], str]:
    """Run ``repogym ARGS`` (a batch whose slow job's test reads ``fifo``) as a shell
    would; once that test runs, SIGINT the batch; the batch, ended, and its stderr. The
    test's other end is checked closed first: it did not outlive the batch."""
    batch = subprocess.Popen(
        repogym_command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        held = os.open(fifo, os.O_WRONLY)  # the slow job's test is running
        batch.send_signal(signal.SIGINT)
        _, err = batch.communicate(timeout=BACKSTOP)
        assert [pid for pid in readers(fifo) if pid != os.getpid()] == []
        os.close(held)
    finally:
        if batch.poll() is None:
            batch.kill()
    return batch, err


def run_batch(
    *args: str | Path, check: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = run_repogym("batch", *args, env=env)
    assert not check or done.returncode in (0, 1), done.stdout + done.stderr
    return done


def lines_of(output: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(text) for text in output.read_text().splitlines()]
    by_id = {line["id"]: line for line in lines}
    assert len(by_id) == len(lines), "an id twice"
    return by_id


def comparable(line: dict[str, Any]) -> Any:
    """A line without what differs from one grade of a job to another."""
    if isinstance(line, dict):
        return {k: comparable(v) for k, v in line.items() if k not in VARYING}
    if isinstance(line, list):
        return [comparable(v) for v in line]
    return line


def bugfix_that_waits(dest: Path, fifo: Path) -> Path:
    """examples/bugfix at ``dest`` with its solution, the base with one more test, which
    reads ``fifo`` until its other end is opened and closed: a grade whose tests run
    until the test that made it says so."""
    repo = build_example_repo("bugfix", dest, solution=True)
    git(repo, "checkout", "--quiet", "main")
    wait = f"\n\ndef test_waits():\n    with open({str(fifo)!r}) as f:\n        f.read()\n"
    test = repo / "tests/test_slugify.py"
    test.write_text(test.read_text() + wait)
    git(repo, "commit", "--quiet", "-am", "a test that waits")
    git(repo, "checkout", "--quiet", "submission")
    git(repo, "rebase", "--quiet", "main")
    return repo


def blocking_jobs(root: Path, fifo: Path) -> Path:
    """Two jobs: the first's test waits until the test opens ``fifo``'s other end, the
    second (the empty submission of another repository) is quick."""
    bugfix_that_waits(root / "slow", fifo)
    build_example_repo("bugfix", root / "plain", solution=False)
    jobs = root / "jobs.jsonl"
    jobs.write_text(
        json.dumps({"repo": "slow", "base": "main", "ref": "submission", "id": "slow"})
        + "\n"
        + json.dumps({"repo": "plain", "base": "main", "ref": "submission", "id": "quick"})
        + "\n"
    )
    return jobs


def fifo_path() -> Iterator[Path]:
    """A FIFO the sandbox user's tests can open: a job's test reads it, so that the test
    knows by opening its other end that the job is running."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-batch-fifo-"))
    holder.chmod(0o711)
    path = holder / "running"
    os.mkfifo(path, 0o666)
    path.chmod(0o666)
    yield path
    shutil.rmtree(holder, ignore_errors=True)


def release(fifo: Path) -> threading.Thread:
    """Let the next test that reads ``fifo`` end: open the other end, then close it."""

    def open_and_close() -> None:
        os.close(os.open(fifo, os.O_WRONLY))

    thread = threading.Thread(target=open_and_close, daemon=True)
    thread.start()
    return thread


def readers(fifo: Path) -> list[int]:
    """The processes that have ``fifo`` open."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = [str(fd.readlink()) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if str(fifo) in links:
            found.append(int(proc.name))
    return found


def status(pid: int, key: str) -> int:
    """A number of ``/proc/PID/status`` (the first, for ``Uid:``: the real uid)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith(key)))


def kill_the_worker_of_the_slow_job(
    options: list[str],
    jobs: Path,
    output: Path,
    fifo: Path,
    is_worker: Callable[[int, int], bool],
    sent: signal.Signals = signal.SIGKILL,
) -> tuple[int, str]:
    """Run the batch of :func:`blocking_jobs` with ``options``; once the slow job's test
    runs, SIGKILL the process up from it that grades it (``is_worker(pid, batch's pid)``),
    let the first try's test end, then the second's; the batch's exit code and output.
    ``sent`` is the signal (SIGTERM: the worker alone is stopped, not the batch)."""
    command = [sys.executable, "-m", "repogym", "batch", str(jobs), "-o", str(output), *options]
    batch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        held = os.open(fifo, os.O_WRONLY)  # the slow job's test is running
        [test] = [pid for pid in readers(fifo) if pid != os.getpid()]
        worker = test
        while not is_worker(worker, batch.pid):
            worker = status(worker, "PPid:")
        os.kill(worker, sent)
        reader = os.pidfd_open(test)
        os.close(held)  # the first try's test reads the end, and exits
        select.select([reader], [], [], BACKSTOP)
        os.close(reader)
        release(fifo)  # then the second try's test may run
        out, err = batch.communicate(timeout=BACKSTOP)
    finally:
        if batch.poll() is None:
            batch.kill()
    return batch.returncode, out + err
