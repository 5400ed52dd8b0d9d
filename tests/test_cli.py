from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repogym import __version__
from repogym.cli import main
from tests.support.cli_texts import LONG, SHORT, TASK
from tests.support.repo import Repo


@pytest.fixture
def pr(repo: Repo) -> Repo:
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": LONG})
    repo.branch("pr")
    return repo


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repogym", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_grade_passes_and_writes_reports(pr: Repo, tmp_path: Path) -> None:
    pr.commit("fix", {"src/m.py": SHORT})
    out = tmp_path / "out" / "report.json"
    md = tmp_path / "summary.md"
    done = run("grade", "--json", str(out), "--markdown", str(md), cwd=pr.root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-3] == "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓)"
    report = json.loads(out.read_text())
    base = pr.git("rev-parse", "main").strip()
    head = pr.git("rev-parse", "HEAD").strip()
    assert report["version"] == 2
    assert report["tool"] == {"name": "repogym", "version": __version__}
    assert report["score"] == 1.0 and report["passed"] is True
    assert report["summary"] == "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓)"
    assert report["files_changed"] == ["src/m.py"]
    assert report["base"] == {"ref": "main", "sha": base}
    assert report["merge_base"] == {"sha": base}
    assert report["head"] == {"sha": head}
    assert report["task"]["sha256"] == __import__("hashlib").sha256(TASK.encode()).hexdigest()
    assert report["task"]["source"] == ".repogym.yml@main"
    names = [(c["name"], c["role"], c["weight"]) for c in report["components"]]
    assert names == [("constraints", "gate", 0.0), ("quality", "objective", 1.0)]
    assert set(report["components"][0]) == {
        "name",
        "role",
        "score",
        "passed",
        "weight",
        "details",
        "messages",
        "findings",
    }
    assert report["components"][0]["findings"] == []
    assert "| quality | objective | 1 | 1.00 | ✅ |" in md.read_text()


def test_grade_fails_with_exit_1(pr: Repo) -> None:
    pr.write({"src/m.py": LONG + "\n" + LONG.replace("f(", "g("), "README": "x\n"})
    done = run("grade", cwd=pr.root)
    assert done.returncode == 1
    assert "FAIL 0.000 (constraints=0.50✗(gate), quality=0.00✗)" in done.stdout
    assert "README changed but is outside allowed_files (src/**)" in done.stdout


def test_grade_uses_the_merge_base_and_the_task_at_ref(pr: Repo) -> None:
    pr.commit("fix", {"src/m.py": SHORT})
    # main moves on after the branch point: its new file is not part of the submission,
    # and its stricter task applies.
    pr.git("checkout", "--quiet", "main")
    pr.commit("main moves", {"src/other.py": "x = 1\n", ".repogym.yml": TASK.replace("4", "1")})
    pr.git("checkout", "--quiet", "pr")
    fork_point = pr.git("merge-base", "main", "pr").strip()
    report = pr.root.parent / "report.json"
    done = run("grade", "--base", "main", "--json", str(report), cwd=pr.root)
    assert "quality=0.00✗" in done.stdout
    assert done.returncode == 1
    assert "src/other.py" not in done.stdout
    data = json.loads(report.read_text())
    assert data["base"] == {"ref": "main", "sha": pr.git("rev-parse", "main").strip()}
    assert data["merge_base"] == {"sha": fork_point} != {"sha": data["base"]["sha"]}


def test_submission_cannot_edit_its_rubric(pr: Repo) -> None:
    pr.write({".repogym.yml": TASK.replace("max_function_length: 4", "max_function_length: 99")})
    done = run("grade", cwd=pr.root)
    assert done.returncode == 1
    assert ".repogym.yml is protected (the task file) and was modified" in done.stdout
    assert "quality=0.00✗" in done.stdout


def test_task_override(pr: Repo, tmp_path: Path) -> None:
    task = tmp_path / "task.yml"
    task.write_text(TASK.replace("max_function_length: 4", "max_function_length: 10"))
    done = run("grade", "--task", str(task), cwd=pr.root)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grade", "--base", "nope"], "`nope` does not name a commit"),
        (["grade", "--bogus"], "unrecognized arguments: --bogus"),
        ([], "no command given: run `repogym COMMAND` with one of grade, validate"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["grade", "--json"], "argument --json: expected one argument (see `repogym grade"),
        (["metrics", "missing.py"], "missing.py: no such file or directory"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(pr: Repo, args: list[str], message: str) -> None:
    done = run(*args, cwd=pr.root)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("repogym: error: ") and message in lines[0]
    assert not lines[0].startswith("repogym: error: repogym")  # issue 19: said twice
    assert "Traceback" not in done.stderr


def test_task_error_at_base_is_reported_per_line(repo: Repo) -> None:
    repo.commit("base", {".repogym.yml": "version: 1\ntype: refactr\nconstraint: {}\n"})
    done = run("grade", cwd=repo.root)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "repogym: error: .repogym.yml@main:2: `type` = 'refactr': should be 'bugfix', "
        "'feature', 'perf' or 'refactor'",
        "repogym: error: .repogym.yml@main:3: unknown key `constraint`; did you mean "
        "`constraints`?",
    ]


def test_missing_task_file(repo: Repo) -> None:
    repo.commit("base", {"a.py": "x = 1\n"})
    done = run("grade", cwd=repo.root)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "repogym: error: .repogym.yml not found at main: commit a task file on the base "
        "branch, or pass one with --task FILE"
    )


def test_not_a_git_repository(tmp_path: Path) -> None:
    done = run("grade", cwd=tmp_path)
    assert done.returncode == 2
    assert "not inside a git work tree" in done.stderr


def test_default_base_prefers_the_remote_default_branch(pr: Repo) -> None:
    pr.git("update-ref", "refs/remotes/origin/trunk", "main")
    pr.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    pr.write({"src/m.py": SHORT})
    done = run("grade", "--json", "r.json", cwd=pr.root)
    assert done.returncode == 0, done.stderr
    assert json.loads((pr.root / "r.json").read_text())["base"]["ref"] == "origin/trunk"


def test_metrics_json_and_table(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        "class C:\n    def m(self, x):\n        return 1 if x else 2\n"
    )
    done = run("metrics", "--json", str(tmp_path / "pkg"))
    assert done.returncode == 0
    row = json.loads(done.stdout)
    assert row == {
        "path": (tmp_path / "pkg" / "a.py").as_posix(),
        "line": 2,
        "qualname": "C.m",
        "length": 2,
        "complexity": 2,
    }
    table = run("metrics", str(tmp_path / "pkg" / "a.py")).stdout.splitlines()
    assert table[1].split()[:2] == ["2", "2"] and table[1].endswith("a.py:2 C.m")


def test_metrics_reports_unparsable_files(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n")
    done = run("metrics", str(tmp_path / "bad.py"))
    assert done.returncode == 2
    assert "bad.py:1: does not parse" in done.stderr


def test_version() -> None:
    assert run("--version").stdout.strip() == f"repogym {__version__}"


def test_demo_grades_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓, quality=1.00✓(gate))" in out
    assert "PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓(gate), quality=1.00✓)" in out
    report = Path(out.split("The JSON reports are in ")[1].split(" ")[0]) / "refactor.json"
    assert json.loads(report.read_text())["passed"] is True
    # The perf example's runs are long enough for its own rule (issue 45: its solution's
    # run took 0.16 s and the demo warned that start-up dominated it).
    assert "perf: speed-up " in out and "under half a second" not in out, out


def test_a_demo_whose_every_grade_errs_ends_saying_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The last line is that nothing was graded, not where the reports went (issue 43)."""
    monkeypatch.setenv("REPOGYM_COPIES", str(tmp_path / "missing"))
    assert main(["demo"]) == 2
    captured = capsys.readouterr()
    said = f"REPOGYM_COPIES={tmp_path / 'missing'}: not a directory; make it, or unset"
    graded = captured.out.count(": grading branch `submission`")
    assert graded >= 4 and captured.err.count(said) == graded  # those this machine can grade
    assert captured.err.splitlines()[-1] == (
        f"repogym demo: none of the {graded} examples could be graded; each ended in the "
        "error printed under its name above"
    )


# -- exit code 3, error reports, hidden tests from outside (issue 8) ------------------------


def _broken_grade(*args: object, **kwargs: object) -> None:
    raise RuntimeError("the grader broke\nsecond line")


def test_an_error_that_is_not_the_users_exits_3_with_the_traceback_in_a_file(
    pr: Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("repogym.cli.grade", _broken_grade)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.delenv("REPOGYM_DEBUG", raising=False)
    report = tmp_path / "report.json"
    assert main(["grade", "-C", str(pr.root), "--json", str(report)]) == 3
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    # Where: the innermost frame in repogym's own code.
    assert line.startswith("repogym: internal error: RuntimeError at cli.py:")
    assert ": the grader broke; this is a bug in repogym, not in your change" in line
    (written,) = tmp_path.glob("repogym-error-*.txt")
    assert line.endswith(f"the traceback is in {written}")
    assert "Traceback (most recent call last)" in written.read_text()
    assert "second line" in written.read_text()
    data = json.loads(report.read_text())
    assert data["error"] == {
        "kind": "internal",
        "message": "RuntimeError: the grader broke second line",  # one line, as the schema has it
    }
    assert "components" not in data


def test_repogym_debug_prints_the_traceback(
    pr: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("repogym.cli.grade", _broken_grade)
    monkeypatch.setenv("REPOGYM_DEBUG", "1")
    assert main(["grade", "-C", str(pr.root)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)")
    assert err.splitlines()[-1].endswith("the grader broke (traceback above)")


def test_a_task_error_writes_an_error_report_and_exits_2(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {".repogym.yml": "version: 1\ntype: bugfix\ntests: {}\n"})
    report = tmp_path / "report.json"
    done = run("grade", "--base", "main", "--json", str(report), cwd=repo.root)
    assert done.returncode == 2
    data = json.loads(report.read_text())
    assert data["error"]["kind"] == "task"
    assert data["error"]["message"].startswith(".repogym.yml@main:")
    assert data["version"] == 2 and data["tool"]["name"] == "repogym"


HIDDEN_TASK = """\
version: 1
type: feature
tests:
  command: python -m pytest -q -p no:cacheprovider --junitxml={junit}
  fail_to_pass: [tests/test_hidden.py::test_g]
  hidden: .repogym/hidden
"""
HIDDEN_TEST = "from m import g\n\n\ndef test_g():\n    assert g() == 2\n"


def test_hidden_tests_from_outside_for_grade_and_validate(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", {".repogym.yml": HIDDEN_TASK, "m.py": "def g():\n    return 1\n"})
    repo.branch("pr")
    repo.commit("fix", {"m.py": "def g():\n    return 2\n"})
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_hidden.py").write_text(HIDDEN_TEST)
    report = tmp_path / "report.json"
    done = run("grade", "--base", "main", "--hidden", str(hidden), "--json", str(report),
               cwd=repo.root)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(report.read_text())["task"]["hidden_tests"] == "outside"
    # Without them, the task's own directory is missing at the base: the target fails.
    assert run("grade", "--base", "main", cwd=repo.root).returncode == 1
    done = run("validate", "--base", "main", "--hidden", str(hidden), "--solution", "pr",
               cwd=repo.root)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the reference solution passes" in done.stdout
    done = run("grade", "--base", "main", "--hidden", str(tmp_path / "nope"), cwd=repo.root)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"repogym: error: hidden tests {str(tmp_path / 'nope')!r} does not exist; pass the "
        "directory that holds them at the paths they take in the repository"
    )


@pytest.mark.parametrize("kind", ["file", "directory", "fifo"])
def test_a_hidden_test_that_is_a_link_or_a_fifo_is_refused(
    repo: Repo, tmp_path: Path, kind: str
) -> None:
    """Hidden tests are copied into the run's copy, where the submission's code reads
    them, by root in a container: a link among them would carry there what it names,
    and a FIFO would hang the copy (issue 19). One line names it; nothing is graded."""
    repo.commit("base", {".repogym.yml": HIDDEN_TASK, "m.py": "def g():\n    return 1\n"})
    repo.branch("pr")
    repo.commit("fix", {"m.py": "def g():\n    return 2\n"})
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_hidden.py").write_text(HIDDEN_TEST)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("not a test\n")
    planted = hidden / "tests" / "extra"
    if kind == "file":
        planted.symlink_to(secret / "key")
    elif kind == "directory":
        planted.symlink_to(secret, target_is_directory=True)
    else:
        os.mkfifo(planted)
    report = tmp_path / "report.json"
    done = run("grade", "--base", "main", "--hidden", str(hidden), "--json", str(report),
               cwd=repo.root)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    what = "is not a regular file" if kind == "fifo" else f"is a symlink (-> {planted.readlink()})"
    assert done.stderr.strip() == (
        f"repogym: error: hidden tests: tests/extra in {hidden} {what}; a hidden test must "
        "be a file in the directory itself: put the file there, not a link to it"
    )
    assert json.loads(report.read_text())["error"]["kind"] == "usage"
