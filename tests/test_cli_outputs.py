"""What ``repogym`` writes and prints, through real processes: output paths checked before
grading, write errors as one line, undecodable file names, files too deep to parse."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_texts import LONG, SHORT, TASK
from tests.support.devices import device, stdout_link
from tests.support.repo import Repo

BAD_NAME = b"bad\xff.py"  # not UTF-8


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repogym", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        errors="surrogateescape",
        check=False,
    )


@pytest.fixture
def pr(repo: Repo) -> Repo:
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": LONG, "file": "x\n"})
    repo.branch("pr")
    repo.write({"src/m.py": SHORT})
    (repo.root / "dir").mkdir()
    return repo


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (
            ["--json", "dir"],
            ["--json dir: is a directory; name a file in it, such as dir/report.json"],
        ),
        (["--json", ""], ["--json '': the path is empty; name a file, such as report.json"]),
        (
            ["--markdown", "file/x.md"],
            ["--markdown file/x.md: file is not a directory; choose a path in a directory"],
        ),
        (
            # Both are checked before either is written: ok.json must not appear.
            ["--json", "ok.json", "--markdown", "file/x.md"],
            ["--markdown file/x.md: file is not a directory; choose a path in a directory"],
        ),
        (
            ["--json", "dir/", "--markdown", ""],
            [
                "--json dir/: is a directory; name a file in it, such as dir/report.json",
                "--markdown '': the path is empty; name a file, such as summary.md",
            ],
        ),
        (
            ["--json", "same", "--markdown", "./same"],
            ["--markdown ./same: is also the --json path; give each output a file of its own"],
        ),
    ],
)
def test_bad_output_paths_stop_before_grading(pr: Repo, args: list[str], lines: list[str]) -> None:
    done = run("grade", *args, cwd=pr.root)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"repogym: error: {line}" for line in lines]
    assert done.stdout == ""  # nothing was graded
    assert not (pr.root / "ok.json").exists()
    assert not (pr.root / "same").exists()


def test_a_write_error_after_grading_is_one_line(pr: Repo, tmp_path: Path) -> None:
    full = device(tmp_path, "full")  # every write fails: ENOSPC
    done = run("grade", "--json", "ok.json", "--markdown", str(full), cwd=pr.root)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"repogym: error: --markdown {full}: could not write it (No space left on device); "
        "choose another path and run again"
    ]
    assert "PASS 1.000" in done.stdout  # the grade is still shown
    assert not (pr.root / "ok.json").exists()  # and no output is half done
    assert stat.S_ISCHR(full.lstat().st_mode)


def test_missing_directories_are_made_for_every_output_and_help_says_so(
    pr: Repo, tmp_path: Path
) -> None:
    # issue 45: --json made a missing directory without a word; every output option does
    # the same, and says so.
    out = tmp_path / "a" / "b"
    done = run("grade", "--json", str(out / "r.json"), "--markdown", str(out / "s.md"), cwd=pr.root)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "r.json").read_text())["passed"] is True
    assert (out / "s.md").read_text().strip()
    helped = " ".join(run("grade", "--help", cwd=pr.root).stdout.split())
    assert helped.count("(missing directories are made)") == 2


def test_reports_to_dev_stdout_and_dev_null(pr: Repo, tmp_path: Path) -> None:
    # Stand-ins for /dev/stdout and /dev/null (see device()).
    link, null = stdout_link(tmp_path), device(tmp_path, "null")
    out = tmp_path / "out.txt"
    with out.open("w") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "repogym", "grade", "--json", str(link),
             "--markdown", str(null)],
            cwd=pr.root, stdout=handle, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    report, rest = text.split("\n}\n", 1)
    assert json.loads(report + "}")["passed"] is True
    assert "PASS 1.000" in rest and f"JSON report: {link}" in rest
    assert link.is_symlink() and stat.S_ISCHR(null.lstat().st_mode)


@pytest.fixture
def undecodable(repo: Repo) -> Repo:
    """A submission that adds a Python file whose name is not UTF-8, and breaks a limit."""
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": SHORT})
    repo.branch("pr")
    (repo.root / "src" / os.fsdecode(BAD_NAME)).write_text(LONG)
    return repo


def test_undecodable_file_name_in_reports(undecodable: Repo, tmp_path: Path) -> None:
    report, summary = tmp_path / "r.json", tmp_path / "r.md"
    done = run(
        "grade", "--json", str(report), "--markdown", str(summary),
        cwd=undecodable.root, env={"PYTHONIOENCODING": "utf-8:strict"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    name = "src/" + os.fsdecode(BAD_NAME)
    raw = report.read_bytes()
    raw.decode("utf-8")  # the file is UTF-8
    assert b"bad\\udcff.py" in raw
    assert json.loads(raw)["files_changed"] == [name]
    # Graders quote such names themselves; raw ones are escaped too (test_report.py).
    assert re.search(r"bad\\(xff|udcff)\.py", summary.read_text(encoding="utf-8"))


def test_undecodable_file_name_on_a_strict_stdout(undecodable: Repo) -> None:
    done = run("metrics", "src", cwd=undecodable.root, env={"PYTHONIOENCODING": "utf-8:strict"})
    assert done.returncode == 0, done.stderr
    assert "src/bad\\udcff.py:1 f" in done.stdout


def test_metrics_names_files_too_deep_to_parse_and_goes_on(tmp_path: Path) -> None:
    deep = {
        "plus.py": "x = 1" + "+1" * 30000 + "\n",  # RecursionError in the parser
        "nots.py": "x = " + "not " * 100000 + "y\n",  # MemoryError
        "minus.py": "x = " + "-" * 100000 + "1\n",  # MemoryError
    }
    for name, source in deep.items():
        (tmp_path / name).write_text(source)
    (tmp_path / "ok.py").write_text("def f():\n    return 1\n")
    done = run("metrics", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"repogym: {tmp_path / name}:1: does not parse: too deeply nested for Python's parser"
        for name in sorted(deep)
    ]
    assert done.stdout.splitlines()[1].endswith("ok.py:1 f")
