"""A benchmark that does a known amount of work, for the perf grader's modes (issue 24):
``cpu``, ``instructions`` and ``peak_memory``, on the host and in an environment.

``bench.json`` of each side says what its run does: ``work`` iterations of a Python loop,
split over ``workers`` forked processes (which ``hide`` from the reaped children's
accounting by ignoring SIGCHLD), or done by an ``orphan`` (a grandchild that its
parent leaves behind, reporting back through a pipe) or by a worker its parent ``killed``
once it reported; a ``daemon`` left sleeping; ``megabytes`` allocated and touched (in
the benchmark or, with ``"memory_in": "worker"``, in a forked child), and a
``sleep`` of that many seconds (idling, which only the wall clock sees); with
``seconds``, a list, the ``{"seconds": x}`` each run reports in turn (``timing:
reported``; the task's ``env`` names the ``PERF_LOG`` that counts the runs); with
``pad``, it reports the length of ``REPOGYM_PERF_PAD`` (plus one) as its seconds; with
``peek``, it exits 3 if it can list the descriptors or open the memory of process 1;
with ``remember``, a run that finds the ``.answer`` an earlier run left in its tree does
no work; with ``search``, it looks for one key in a set of that many strings, spinning at
each it passes: work that the hash seed decides (``report_place``: the key's place, plus
one, as its seconds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repogym import grade
from repogym.models import GradeComponent
from tests.support.repo import Repo

BENCH = """\
import json, os, signal, sys, time
from pathlib import Path

config = json.loads(Path("bench.json").read_text())


def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def in_child(job):
    pid = os.fork()
    if pid == 0:
        job()
        os._exit(0)
    return pid


def work(n):
    if config.get("killed"):  # the worker reports, then its parent kills it
        r, w = os.pipe()
        pid = in_child(lambda: (spin(n), os.write(w, b"x"), time.sleep(3600)))
        os.read(r, 1)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return
    if config.get("daemon"):  # a process left sleeping, nobody's child
        os.waitpid(in_child(lambda: in_child(lambda: time.sleep(3600))), 0)
    if config.get("orphan"):
        r, w = os.pipe()
        # The child forks the worker and exits at once: the worker is nobody's child.
        os.waitpid(in_child(lambda: in_child(lambda: (spin(n), os.write(w, b"x")))), 0)
        os.read(r, 1)
        return
    workers = config.get("workers", 0)
    if workers and config.get("hide"):
        # SIGCHLD ignored: the workers are reaped by the kernel, and never added to
        # anyone's accounting of reaped children. They report through a pipe instead.
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        r, w = os.pipe()
        for _ in range(workers):
            in_child(lambda: (spin(n // workers), os.write(w, b"x")))
        for _ in range(workers):
            os.read(r, 1)
        return
    if workers:
        for pid in [in_child(lambda: spin(n // workers)) for _ in range(workers)]:
            os.waitpid(pid, 0)
        return
    spin(n)


# Work that Python's hash seed decides: the set's order is the seed's, and the search
# spins at every key it passes before it finds the one it looks for. Its place.
def search(n):
    for place, key in enumerate({f"key-{i}" for i in range(n)}):
        if key == "key-0":
            return place
        spin(200)


def allocate(megabytes):
    block = b"\\x01" * (megabytes << 20)  # written, so every page is resident
    return len(block)


if config.get("pad"):  # timing: reported, the length of the environment's random padding
    print(json.dumps({"seconds": len(os.environ.get("REPOGYM_PERF_PAD", "-")) + 1}))

if config.get("peek"):  # the container's measurer, process 1, must be out of reach
    for path in ("/proc/1/fd", "/proc/1/mem"):
        try:
            os.listdir(path) if path.endswith("fd") else open(path, "r+b").close()
        except PermissionError:
            continue
        print("reached", path, file=sys.stderr)
        sys.exit(3)

if "seconds" in config:  # timing: reported, a figure per run from the list, in turn
    log = Path(os.environ["PERF_LOG"])
    with log.open("a") as runs:
        runs.write(os.getcwd() + "\\n")
    index = log.read_text().splitlines().count(os.getcwd()) - 1
    print(json.dumps({"seconds": config["seconds"][index % len(config["seconds"])]}))

if config.get("remember"):  # a run that finds the mark an earlier one left does no work
    try:
        remembered = Path(".answer").read_text() == "done"
    except OSError:
        remembered = False
    if remembered:
        config["work"] = 0
    else:
        try:
            Path(".answer").write_text("done")
        except OSError:
            pass

if config.get("search"):  # with timing: reported, the place where it found the key
    found = search(config["search"])
    if config.get("report_place"):
        print(json.dumps({"seconds": found + 1}))

megabytes = config.get("megabytes", 0)
if config.get("memory_in") == "worker":
    os.waitpid(in_child(lambda: allocate(megabytes)), 0)
else:
    allocate(megabytes)
work(config.get("work", 0))
time.sleep(config.get("sleep", 0))
print("done")
"""


def perf_task(
    perf: dict[str, Any], environment: str | None = None, env: dict[str, str] | None = None
) -> str:
    lines = ["version: 1", "type: perf"]
    if env:
        lines.append(f"env: {json.dumps(env)}")
    lines += ["perf:", "  command: python bench.py"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in perf.items()]
    if environment is not None:
        lines.append(f"environment: {environment}")
    return "\n".join(lines) + "\n"


def perf_repo(
    root: Path,
    baseline: dict[str, Any],
    candidate: dict[str, Any],
    perf: dict[str, Any],
    environment: str | None = None,
    env: dict[str, str] | None = None,
) -> Repo:
    """A base commit with the benchmark doing ``baseline``, and a checked-out branch
    ``pr`` whose benchmark does ``candidate``."""
    repo = Repo(root)
    repo.commit(
        "base",
        {
            ".repogym.yml": perf_task(perf, environment, env),
            "bench.py": BENCH,
            "bench.json": json.dumps(baseline),
        },
    )
    repo.branch("pr")
    repo.commit("pr", {"bench.json": json.dumps(candidate)})
    return repo


def perf_component(repo: Repo) -> GradeComponent:
    """The perf component of a real grade of the ``pr`` branch (``repogym.grade``)."""
    graded = grade(repo.root, base="main")
    (component,) = [c for c in graded.result.components if c.name == "perf"]
    return component
