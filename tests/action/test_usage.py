"""``repogym-action`` tried by hand, as a new user would (issue 19): ``--help`` is the usage,
not three missing GITHUB_* variables; an argument is one line saying it takes none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMMAND = Path(sys.executable).with_name("repogym-action")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Outside a job: no GITHUB_* variable at all.
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd)}
    return subprocess.run(
        [str(COMMAND), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def test_help_prints_the_usage_and_exits_0(tmp_path: Path) -> None:
    for flag in ("--help", "-h"):
        done = run(flag, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout.startswith("usage: repogym-action\n")
        assert "INPUT_*" in done.stdout and "uses: OWNER/repogym-action@v1" in done.stdout
        assert "::error::" not in done.stdout


def test_an_argument_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run("grade", "--base", "main", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "repogym-action: error: it takes no arguments, not 'grade --base main': the runner "
        "passes the inputs as INPUT_* variables (see `repogym-action --help`)"
    ]


def test_without_arguments_outside_a_job_it_says_what_is_missing(tmp_path: Path) -> None:
    done = run(cwd=tmp_path)
    assert done.returncode == 2
    assert "::error::GITHUB_EVENT_NAME is not set" in done.stdout
