"""write_atomic and the output checks, on real files: symlinks, FIFOs, devices, modes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.models import GradeComponent, GradeResult, Role
from repogym.report.build import text_table, to_json
from repogym.report.outputs import output_problems, write_outputs
from repogym.report.render import render
from repogym.tree.atomic import PendingWrite, write_atomic
from tests.support.devices import device, stdout_link


@pytest.fixture
def umask() -> Iterator[None]:
    """Puts the process's umask back after a test that sets it."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def leftovers(directory: Path, *expected: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in expected)


def test_new_file_is_written_whole_with_no_temporary_file_left(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.json"  # missing parents are created
    write_atomic(target, '{"a": 1}\n')
    assert target.read_text() == '{"a": 1}\n'
    assert leftovers(target.parent, "report.json") == []


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_mode_follows_the_umask(tmp_path: Path, umask: None, mask: int, mode: int) -> None:
    os.umask(mask)
    write_atomic(tmp_path / "r.json", "{}\n")
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == mode


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640, 0o444])
def test_replaced_file_keeps_its_mode(tmp_path: Path, umask: None, mode: int) -> None:
    os.umask(0o077)  # must not matter for a file that exists
    target = tmp_path / "r.json"
    target.write_text("old\n")
    target.chmod(mode)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_symlink_is_followed_and_stays(tmp_path: Path) -> None:
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(Path("reports") / "r.json")
    write_atomic(link, "new\n")
    assert link.is_symlink() and link.readlink() == Path("reports") / "r.json"
    assert real.read_text() == "new\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    # The temporary file went beside the target, and is gone.
    assert leftovers(real.parent, "r.json") == []
    assert leftovers(tmp_path, "reports", "latest.json") == []


def test_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "new" / "r.json")
    write_atomic(link, "new\n")
    assert link.is_symlink()
    assert (tmp_path / "new" / "r.json").read_text() == "new\n"


def test_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert leftovers(tmp_path, "pipe") == []


def test_character_device_is_written_to_not_replaced(tmp_path: Path) -> None:
    null_device = device(tmp_path, "null")
    before = null_device.lstat()
    write_atomic(null_device, "discarded\n")
    after = null_device.lstat()
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino
    # Through a symlink too: the link stays a link, the device a device.
    link = tmp_path / "to-null"
    link.symlink_to(null_device)
    write_atomic(link, "discarded\n")
    assert link.is_symlink() and stat.S_ISCHR(null_device.lstat().st_mode)


WRITE_TO_STDOUT = """\
import sys
from pathlib import Path
from repogym.tree.atomic import write_atomic
print("before")
write_atomic(Path(sys.argv[1]), "the report\\n")
print("after")
"""


def test_dev_stdout_to_a_file_keeps_order_and_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    link = stdout_link(tmp_path)
    with out.open("wb") as handle:
        inode = os.fstat(handle.fileno()).st_ino
        command = [sys.executable, "-c", WRITE_TO_STDOUT, str(link)]
        subprocess.run(command, stdout=handle, check=True)
    assert out.read_text() == "before\nthe report\nafter\n"
    assert out.stat().st_ino == inode  # written through, not replaced
    assert link.is_symlink()
    assert leftovers(tmp_path, "out.txt", "stdout") == []


def test_dev_stdout_to_a_pipe(tmp_path: Path) -> None:
    link = stdout_link(tmp_path)
    command = [sys.executable, "-c", WRITE_TO_STDOUT, str(link)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert done.stdout == "before\nthe report\nafter\n"
    assert link.is_symlink()


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path, "x")


def test_a_failed_direct_write_leaves_regular_outputs_as_they_were(tmp_path: Path) -> None:
    full = device(tmp_path, "full")  # every write fails: ENOSPC
    kept = tmp_path / "r.json"
    kept.write_text("old\n")
    problem = write_outputs([("--json", str(kept), "new\n"), ("--markdown", str(full), "x")])
    assert problem == (
        f"--markdown {full}: could not write it (No space left on device); "
        "choose another path and run again"
    )
    assert kept.read_text() == "old\n"
    assert stat.S_ISCHR(full.lstat().st_mode)
    assert leftovers(tmp_path, "r.json", "full") == []


def test_pending_write_discarded_leaves_nothing(tmp_path: Path) -> None:
    pending = PendingWrite(tmp_path / "r.json", "x")
    assert pending.replaces
    pending.discard()
    pending.discard()
    assert leftovers(tmp_path) == []


def test_output_problems_name_the_output_path_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    monkeypatch.chdir(tmp_path)
    outputs = [
        ("--json", "", "report.json"),
        ("--json", "dir", "report.json"),
        ("--markdown", "dir/", "summary.md"),
        ("--markdown", "new/", "summary.md"),
        ("--json", "file/r.json", "report.json"),
        ("--json", "file/sub/r.json", "report.json"),
        ("--json", "ok.json", "report.json"),
        ("--markdown", "./ok.json", "summary.md"),
        ("--json", "missing/dirs/r.json", "report.json"),  # created when written
        ("--json", "/dev/null", "report.json"),
        ("--markdown", "/dev/null", "summary.md"),  # not a file: may be named twice
    ]
    assert output_problems(outputs) == [
        "--json '': the path is empty; name a file, such as report.json",
        "--json dir: is a directory; name a file in it, such as dir/report.json",
        "--markdown dir/: is a directory; name a file in it, such as dir/summary.md",
        "--markdown new/: ends with / (a directory); name a file, such as new/summary.md",
        "--json file/r.json: file is not a directory; choose a path in a directory",
        "--json file/sub/r.json: file is not a directory; choose a path in a directory",
        "--markdown ./ok.json: is also the --json path; give each output a file of its own",
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only directory")
def test_output_problems_in_a_read_only_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    assert output_problems([("--json", str(locked / "r.json"), "report.json")]) == [
        f"--json {locked}/r.json: cannot create files in {locked} (permission denied); "
        "choose a directory you may write to"
    ]


def result_naming(name: str) -> GradeResult:
    component = GradeComponent(
        name="custom",
        score=0.0,
        passed=False,
        details={"path": name},
        messages=[f"{name} | <b> is wrong"],
    )
    return GradeResult(score=0.0, passed=False, components=(component,), files_changed=(name,))


def test_undecodable_names_in_json_round_trip(tmp_path: Path) -> None:
    name = os.fsdecode(b"src/bad\xff.txt")  # surrogateescape: "src/bad\udcff.txt"
    target = tmp_path / "r.json"
    write_atomic(target, to_json(result_naming(name).to_dict()))
    raw = target.read_bytes()
    assert b"bad\\udcff.txt" in raw
    raw.decode("utf-8")  # valid UTF-8
    data = json.loads(raw)
    assert data["files_changed"] == [name]
    assert data["components"][0]["details"]["path"] == name


def test_undecodable_names_in_markdown_and_table(tmp_path: Path) -> None:
    name = os.fsdecode(b"src/bad\xff.txt")
    target = tmp_path / "r.md"
    write_atomic(target, render(result_naming(name).to_dict(), "comment.md.j2"))
    text = target.read_text(encoding="utf-8")
    assert "- src/bad&#92;xff.txt &#124; &lt;b&gt; is wrong" in text
    assert "custom: src/bad\\xff.txt | <b> is wrong" in text_table(result_naming(name))


def test_the_text_table_cuts_scores() -> None:
    result = GradeResult(
        score=0.9996,
        passed=False,
        components=(GradeComponent(name="tests", score=0.9988, passed=False),),
    )
    table = text_table(result).splitlines()
    assert table[1].split() == ["tests", "objective", "1", "0.99", "FAIL"]
    assert table[-1] == "FAIL 0.999 (tests=0.99✗)"


def test_the_text_table_says_why_a_grade_failed_before_its_score() -> None:
    # issue 45: a broken regression read `FAIL 0.994`, like a near-pass; and a gate's
    # weight was `0` in the terminal, `–` in the comment.
    result = GradeResult(
        score=0.994,
        passed=False,
        components=(
            GradeComponent(name="constraints", score=1.0, passed=True, role=Role.GATE, weight=0),
            GradeComponent(name="tests", score=0.994, passed=False),
        ),
    )
    table = text_table(result).splitlines()
    assert table[1].split() == ["constraints", "gate", "–", "1.00", "pass"]
    assert table[-2:] == [
        "not passed: tests failed",
        "FAIL 0.994 (constraints=1.00✓(gate), tests=0.99✗)",
    ]


def test_the_text_table_shows_each_test_run_again_and_escapes_its_id() -> None:
    # Issue 47: the terminal shows each rerun's class and runs, as the comment's table.
    reruns = {
        "tests": {"t.py::test_\x1b[2Jx": {"class": "made_flaky", "runs": "head 1/3 passed"}},
        "hidden": {},
    }
    component = GradeComponent(name="tests", score=0.5, passed=False, details={"reruns": reruns})
    table = text_table(GradeResult(score=0.5, passed=False, components=(component,)))
    assert 'tests: run again: "t.py::test_\\x1b[2Jx": made flaky, head 1/3 passed\n' in table
