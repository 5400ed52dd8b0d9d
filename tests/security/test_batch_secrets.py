"""A batch's secrets (issue 23): run as a user that is not root, a job's commands run as
that user too, beside the batch's own processes (the batch, its forkserver, the worker
that grades the job), which carry the environment the batch started with. The job's
test command reads ``/proc/<pid>/environ`` of each of them and prints what it finds,
which the report's output tail would show; none may be readable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from repogym._demo import build_example_repo
from tests.support.batching import git

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
NOBODY = 65534
CANARY = "canary-b47c"

# The worker is the command's shell's parent, the forkserver the worker's, the batch
# the forkserver's: what each lets its same-uid neighbour read of its environment.
STEAL = (
    "w=$PPID; f=$(cut -d' ' -f4 /proc/$w/stat); b=$(cut -d' ' -f4 /proc/$f/stat); "
    "for p in $w $f $b; do echo \"pid $p:\"; tr '\\0' '\\n' < /proc/$p/environ; done; "
)

# The batch, in a process that drops to nobody once it has imported what it needs (this
# test's python may be where nobody cannot go, as /root), dumpable, as a process that
# user starts is.
BATCH = """
import ctypes, json, os, sys
from pathlib import Path
from repogym.batch import Local, run_batch

os.setgroups([])
os.setgid(65534)
os.setuid(65534)
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
summary = run_batch(Path(sys.argv[1]), Path(sys.argv[2]), executor=Local(2))
json.dump({"errors": summary.errors}, sys.stdout)
"""


def test_a_jobs_commands_cannot_read_the_batchs_environment() -> None:
    holder = Path(tempfile.mkdtemp(prefix="repogym-batch-secrets-"))
    try:
        repo = build_example_repo("bugfix", holder / "bugfix", solution=True)
        git(repo, "checkout", "--quiet", "main")
        task = repo / ".repogym.yml"
        task.write_text(task.read_text().replace("command: python", f"command: {STEAL}python"))
        git(repo, "commit", "--quiet", "-am", "a test command that reads its neighbours")
        git(repo, "checkout", "--quiet", "submission")
        git(repo, "rebase", "--quiet", "main")
        jobs = holder / "jobs.jsonl"
        jobs.write_text(json.dumps({"repo": "bugfix", "base": "main", "ref": "submission"}) + "\n")
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(holder)], check=True)
        output = holder / "out.jsonl"
        done = subprocess.run(
            [sys.executable, "-c", BATCH, str(jobs), str(output)],
            env={**os.environ, "REPOGYM_TEST_SECRET": CANARY},
            cwd="/",
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        [line] = [json.loads(text) for text in output.read_text().splitlines()]
        [tests] = [c for c in line["components"] if c["name"] == "tests"]
        tail = tests["details"]["command"]["output_tail"]
        assert tail.count("pid ") == 3, tail  # it ran, and looked at all three
        assert CANARY not in json.dumps(line), tail
        assert line["passed"] is True
    finally:
        shutil.rmtree(holder, ignore_errors=True)
