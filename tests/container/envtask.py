"""Tasks that name an ``environment:`` (issue 20), graded end to end by ``repogym grade``
as a subprocess, for tests/container/test_environment_attacks.py.

A task's repository has, on ``main``, ``.repogym.yml``, ``probe.py`` (``attack()`` not
written yet) and ``tests/test_probe.py``, which calls ``probe.attack()`` and passes when
the dict it returns lists nothing under ``worked``: the rubric's test, restored from the
base whatever the pull request does. The ``submission`` branch writes the hostile
``probe.py``: its code runs in the container as the test runs, says what it saw on a
``SEEN {json}`` line of the test's output (printed at once and again at exit, so that it
ends the report's output tail), and lists under ``worked`` what it got that it must not.
The grade passes when the protection held; what the probe saw is checked by the test.

The image is the tests' one image with python3 and pytest (tests/support/envimage.py), built
through the engine's API once per recipe (:func:`python_image`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.run.container import engine as _engine
from tests.support import envimage
from tests.support.repo import Repo

LABEL = "repogym"
HOST = _engine.HOST  # with the pid namespace, as the owner label has it
DEADLINE = 120.0  # seconds: a backstop for a grade that hangs, never what a test waits for

TASK = """version: 1
type: feature
environment: ENVIRONMENT
SETUP
tests:
  command: python3 -m pytest -q -s -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}
  fail_to_pass: [tests/test_probe.py::test_probe]
  pass_to_pass: []
  timeout: TIMEOUT
"""
TEST = """import atexit
import json

import probe


def test_probe():
    seen = probe.attack()
    line = "SEEN " + json.dumps(seen, sort_keys=True, default=str)
    print("\\n" + line, flush=True)
    atexit.register(print, line, flush=True)
    assert not seen["worked"], seen["worked"]
"""
UNWRITTEN = "def attack():\n    raise NotImplementedError\n"


def python_image(client: Any) -> str:
    """The tests' one image with python3 and pytest (tests/support/envimage.py), by the tag
    that names its recipe."""
    return envimage.python_image(client)


def task_repo(
    root: Path,
    probe: str,
    *,
    environment: str | None = None,
    setup: str | None = None,
    timeout: int = 30,
    base: Mapping[str, str] | None = None,
    pull_request: Mapping[str, str] | None = None,
) -> Repo:
    """A repository whose ``submission`` branch (checked out) writes ``probe`` as
    ``probe.py``; ``environment`` is the task's, in YAML's flow style; ``base`` and
    ``pull_request`` more files of each side."""
    if environment is None:
        environment = f"{{image: {envimage.python_image()}}}"
    task = TASK.replace("ENVIRONMENT", environment).replace("TIMEOUT", str(timeout))
    task = task.replace("SETUP", f"setup: {json.dumps(setup)}" if setup else "")
    repo = Repo(root)
    repo.commit(
        "base",
        {".repogym.yml": task, "probe.py": UNWRITTEN, "tests/test_probe.py": TEST, **(base or {})},
    )
    repo.branch("submission")
    repo.commit("attack", {"probe.py": probe, **(pull_request or {})})
    return repo


@dataclass(frozen=True)
class Graded:
    """One ``repogym grade --json``: how it ended and its report."""

    pid: int
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    report: dict[str, Any]

    @property
    def passed(self) -> bool:
        return bool(self.report.get("passed"))

    @property
    def tests(self) -> dict[str, Any]:
        return next(c for c in self.report["components"] if c["name"] == "tests")

    @property
    def output(self) -> str:
        return str(self.tests["details"]["command"]["output_tail"])

    @property
    def seen(self) -> dict[str, Any]:
        """What the probe said it saw: its last ``SEEN`` line."""
        lines = [x for x in self.output.splitlines() if x.startswith("SEEN ")]
        assert lines, f"the probe said nothing:\n{self.output}\n{self.stderr}"
        seen: dict[str, Any] = json.loads(lines[-1][5:])
        return seen


def start(repo: Repo, report: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """``repogym grade --json report`` of ``repo``'s submission, started."""
    return subprocess.Popen(
        [sys.executable, "-m", "repogym", "grade", "-C", str(repo.root), "--json", str(report)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def grade(repo: Repo, report: Path, env: Mapping[str, str] | None = None) -> Graded:
    """``repogym grade`` of ``repo``'s submission, to its end."""
    began = time.monotonic()
    process = start(repo, report, env)
    stdout, stderr = process.communicate(timeout=DEADLINE)
    seconds = time.monotonic() - began
    assert "Traceback" not in stderr, stderr
    assert process.returncode in (0, 1), f"exit {process.returncode}:\n{stdout}{stderr}"
    return Graded(
        pid=process.pid,
        returncode=process.returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=seconds,
        report=json.loads(report.read_text()),
    )


def owned(client: Any, pid: int) -> list[str]:
    """The containers and volumes the grader ``pid`` of this host labelled as its own
    (``repogym.run.container.engine.labels``), as ``container <name> <state>`` or
    ``volume <name>``."""
    mine = f"{HOST}/{pid}/"
    found = [
        f"container {c['Names'][0]} {c['State']}"
        for c in client.api.containers(all=True, filters={"label": LABEL})
        if (c.get("Labels") or {}).get(f"{LABEL}.owner", "").startswith(mine)
    ]
    volumes = client.api.volumes(filters={"label": LABEL}).get("Volumes") or []
    found += [
        f"volume {v['Name']}"
        for v in volumes
        if (v.get("Labels") or {}).get(f"{LABEL}.owner", "").startswith(mine)
    ]
    return found


def marked(marker: str) -> list[int]:
    """The processes of this machine (containers' included) whose command line holds
    ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in line:
            found.append(int(entry.name))
    return found


def commands(client: Any, pid: int) -> list[str]:
    """``<command> <state>`` of the containers of the grader ``pid``, ``keeper`` for
    the command of the one that holds its volumes."""
    found = []
    for c in client.api.containers(all=True, filters={"label": LABEL}):
        if (c.get("Labels") or {}).get(f"{LABEL}.owner", "").startswith(f"{HOST}/{pid}/"):
            what = "keeper" if c["Command"] == "/bin/sh -c 'read -r _'" else c["Command"]
            found.append(f"{what} {c['State']}")
    return found


def wait_for_test_command(client: Any, pid: int, marker: str) -> None:
    """Until the engine runs the test command of the grader ``pid``, and in it a process
    holding ``marker``. Polled: neither the engine nor the container can tell us."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        running = any(x.endswith(" running") and "pytest" in x for x in commands(client, pid))
        if running and marked(marker):
            return
        time.sleep(0.05)
    raise AssertionError(f"grader {pid} did not run its test command: {commands(client, pid)}")


class Peak(threading.Thread):
    """The most that ``measure()`` gave while it ran, sampled every few milliseconds
    (what it measures tells no one when it changes)."""

    def __init__(self, measure: Callable[[], int]) -> None:
        super().__init__(daemon=True)
        self.measure, self.most, self._done = measure, 0, threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.005):
            self.most = max(self.most, self.measure())

    def __enter__(self) -> Peak:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self.join()


def disk_use(top: Path) -> int:
    """Bytes the files under ``top`` take on disk (a sparse file its written blocks)."""
    return sum(_blocks(top))


def _blocks(top: Path) -> Iterator[int]:
    for directory, _, names in os.walk(top):
        for name in names:
            try:
                yield (Path(directory) / name).lstat().st_blocks * 512
            except OSError:  # gone since it was listed
                continue
