"""Hostile JUnit reports (issue 9): the test command writes the report, so it can write
one built to exhaust the grader's time or memory, or put something that is not a file
at its path. Each is refused with one line naming the report, the limit and the value,
after reading no more of it than that takes."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import repogym.junit
import repogym.junit.file
import repogym.junit.parser
from repogym.junit import LIMITS, Case, JUnitError, Limits, iter_cases
from tests.support.repo import Repo

MiB = 1 << 20
CHUNK = repogym.junit.parser._CHUNK


@dataclass
class Cost:
    """What reading a report cost: bytes read from files and peak Python memory (expat
    allocates through Python's allocator, so tracemalloc sees its buffers too)."""

    read: int = 0
    peak: int = 0


def _bytes_read() -> tuple[int, int]:
    """Linux's count of the bytes this process got from read(2), what was really read;
    and the size of the one read that got it, which the next count includes."""
    descriptor = os.open("/proc/self/io", os.O_RDONLY)
    try:
        text = os.read(descriptor, 4096)
    finally:
        os.close(descriptor)
    for line in text.decode().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1]), len(text)
    raise AssertionError("/proc/self/io has no rchar")


@contextmanager
def measured() -> Iterator[Cost]:
    cost = Cost()
    tracemalloc.start()
    before, itself = _bytes_read()
    try:
        yield cost
    finally:
        cost.read = _bytes_read()[0] - before - itself
        cost.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def refusal(path: Path, limits: Limits = LIMITS) -> tuple[str, list[Case]]:
    """The error reading ``path`` ends with, and the cases handed out before it."""
    found: list[Case] = []
    with pytest.raises(JUnitError) as caught:
        found.extend(iter_cases(path, limits=limits))
    assert len(caught.value.lines) == 1
    return str(caught.value), found


def many_cases(count: int) -> bytes:
    body = b"".join(b'<testcase classname="c" name="t%07d"/>' % i for i in range(count))
    return b'<testsuite name="s">' + body + b"</testsuite>"


# -- nesting -----------------------------------------------------------------------------


def test_a_million_nested_suites_stop_at_the_depth_limit(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    # The NUL byte at the end would be a syntax error: reaching it would mean reading on.
    path.write_bytes(b"<testsuite>" * 1_000_000 + b"\0")
    with measured() as cost:
        message, found = refusal(path)
    assert message == (
        f"JUnit report {path} nests elements more than 1,000 deep, the limit (at line 1, "
        "column 11,001): a JUnit report needs a few levels: write the test suites less "
        "deeply nested"
    )
    assert found == []
    # Refused in the first chunk of the 11 MB, where the 1,001st suite opens.
    assert cost.read <= CHUNK
    assert cost.peak < MiB


def test_every_element_counts_towards_the_depth(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(b"<testsuites><testsuite><testcase>" + b"<a>" * 5_000)
    message, _ = refusal(path, Limits(max_depth=100))
    assert "nests elements more than 100 deep, the limit (at line 1, column 325):" in message


def test_a_level_of_nesting_costs_the_same_at_any_depth(tmp_path: Path) -> None:
    # Below a raised cap. Each level used to copy the tuple of the suites around it:
    # 50,000 levels took 28 s, a million would take hours. Sixteen times the levels must
    # take less than 64 times as long (linear work takes 16, the copies took 256); the
    # deadline turns a quadratic reader into a failure in seconds rather than a hang.
    def read(levels: int, deadline: float = LIMITS.deadline) -> float:
        path = tmp_path / f"nested-{levels}.xml"
        names = [b'<testsuite name="s%d">' % level for level in range(levels)]
        path.write_bytes(b"".join(names) + b"<testcase/>" + b"</testsuite>" * levels)
        limits = Limits(max_depth=levels + 1, deadline=deadline)
        start = time.perf_counter()
        (case,) = iter_cases(path, limits=limits)
        seconds = time.perf_counter() - start
        assert case.suites == tuple(f"s{level}" for level in range(levels))
        return seconds

    small = min(read(10_000) for _ in range(3))
    large = read(160_000, deadline=64 * small)
    assert large < 64 * small


# -- size --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [500_000_000, 1 << 30])
def test_a_report_over_the_byte_limit_is_refused_unread(tmp_path: Path, size: int) -> None:
    # Sparse: it takes no disk, and reading it whole would take seconds and, as parsed
    # before, gigabytes of memory.
    path = tmp_path / "junit.xml"
    with path.open("wb") as file:
        os.truncate(file.fileno(), size)
    with measured() as cost:
        message, _ = refusal(path)
    assert message == (
        f"JUnit report {path} is {size:,} bytes, over the limit of 268,435,456: "
        "reduce the captured output in the report"
    )
    assert cost.read == 0
    assert cost.peak < 64 << 10


def test_a_sparse_report_under_the_limit_is_read_no_further_than_its_first_chunk(
    tmp_path: Path,
) -> None:
    path = tmp_path / "junit.xml"
    with path.open("wb") as file:
        os.truncate(file.fileno(), 200 * MiB)
    with measured() as cost:
        message, _ = refusal(path)
    assert message == (
        f"JUnit report {path} is not well-formed XML: not well-formed (invalid token) "
        "at line 1, column 1"
    )
    assert cost.read <= CHUNK
    assert cost.peak < MiB


def test_a_report_that_grows_while_read_stops_at_the_limit(tmp_path: Path) -> None:
    # The size is checked before reading, and what is read is counted: a test process
    # left running may go on appending.
    path = tmp_path / "junit.xml"
    report = many_cases(50_000)  # 2 MB
    path.write_bytes(report[:-12])  # open: no </testsuite> yet
    more = report[20:]
    limits = Limits(max_bytes=3 * MiB)
    with measured() as cost:
        cases = iter_cases(path, limits=limits)
        assert next(cases).name == "t0000000"
        with path.open("ab") as file:
            file.write(more)  # now 4 MB
        with pytest.raises(JUnitError) as caught:
            for _ in cases:
                pass
    read = re.fullmatch(
        f"JUnit report {re.escape(str(path))} is ([0-9,]+) bytes, over the limit of 3,145,728: "
        "reduce the captured output in the report",
        str(caught.value),
    )
    assert read is not None, caught.value
    assert 3 * MiB < int(read[1].replace(",", "")) <= 3 * MiB + CHUNK
    assert 3 * MiB < cost.read <= 3 * MiB + CHUNK
    assert cost.peak < MiB


# -- counts ------------------------------------------------------------------------------


def test_a_huge_legitimate_report_is_within_the_limits(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(many_cases(100_000))
    assert sum(1 for _ in iter_cases(path)) == 100_000


def test_more_testcases_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(many_cases(5_000))
    message, found = refusal(path, Limits(max_cases=3_000))
    assert message == (
        f"JUnit report {path} has more than 3,000 <testcase> elements, the limit: "
        "run fewer tests in one test command"
    )
    # Counted once a chunk, and no chunk's cases are handed out past the limit.
    assert 0 < len(found) <= 3_000
    assert LIMITS.max_cases == 1_000_000


def test_more_distinct_names_than_the_limit(tmp_path: Path) -> None:
    # Expat and pyexpat keep every element and attribute name for the whole parse:
    # 32 MiB of distinct names took 580 MB.
    path = tmp_path / "junit.xml"
    names = b"".join(b"<a%d/>" % i for i in range(1_000_000))
    path.write_bytes(b"<testsuite><testcase/>" + names + b"</testsuite>")
    with measured() as cost:
        message, _ = refusal(path)
    assert message.startswith(
        f"JUnit report {path} uses more than 10,000 distinct element and attribute names, "
        "the limit (at line 1, column "
    )
    assert message.endswith(
        "): a JUnit report uses a few dozen: write a report with the usual elements only"
    )
    assert cost.read < 3 * CHUNK  # refused within a chunk of reaching it
    assert cost.peak < 8 * MiB


@pytest.mark.parametrize(
    ("head", "column"),
    [('<testsuite><testcase name="', 12), ("<testsuite><testcase/><!--", 23)],
    ids=["attribute", "comment"],
)
def test_a_token_longer_than_the_limit(tmp_path: Path, head: str, column: int) -> None:
    # Expat holds an unfinished token whole, and the one in Python 3.11 scanned it again
    # on every chunk: a 32 MiB attribute took 41 s.
    path = tmp_path / "junit.xml"
    path.write_bytes(head.encode() + b"x" * (64 * MiB))
    with measured() as cost:
        message, _ = refusal(path)
    assert message == (
        f"JUnit report {path} has a tag or comment longer than 4,194,304 bytes, the limit "
        f"(at line 1, column {column}): write long messages as the element's text rather "
        "than in an attribute"
    )
    assert cost.read < 10 * MiB
    assert cost.peak < 32 * MiB


def test_a_long_attribute_under_the_limit_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    message = "m" * (3 * MiB)
    path.write_text(f'<testcase name="t"><failure message="{message}"/></testcase>')
    with measured() as cost:
        (case,) = iter_cases(path)
    assert case.message == "m" * repogym.junit.MAX_MESSAGE
    assert cost.read == path.stat().st_size


# -- time --------------------------------------------------------------------------------


def test_the_deadline_stops_a_slow_read(tmp_path: Path) -> None:
    # A deadline far below what a 64 KiB chunk takes: reading stops after the first one.
    path = tmp_path / "junit.xml"
    path.write_bytes(many_cases(20_000))
    message, found = refusal(path, Limits(deadline=0.0001))
    assert message == (
        f"JUnit report {path} was not read within 0.0001 seconds, the limit "
        f"(stopped after {CHUNK:,} bytes): write a smaller report"
    )
    assert found == []
    assert LIMITS.deadline == 120


# -- what is at the path -----------------------------------------------------------------


def _symlink_to(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _null_device(path: Path) -> None:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # as /dev/null


NOT_FILES = [
    (_symlink_to("/etc/shadow"), "a symbolic link"),
    (_symlink_to("/proc/self/environ"), "a symbolic link"),
    (_symlink_to("/dev/zero"), "a symbolic link"),
    (_fifo, "a named pipe (FIFO)"),
    (_null_device, "a character device"),
    (os.mkdir, "a directory"),
]
NOT_FILE_IDS = ["shadow", "environ", "zero", "fifo", "device", "directory"]


@pytest.mark.parametrize(("make", "kind"), NOT_FILES, ids=NOT_FILE_IDS)
def test_a_report_path_that_is_not_a_regular_file(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    if make is _null_device and os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    path = tmp_path / "junit.xml"
    make(path)
    with measured() as cost:
        message, _ = refusal(path)
    assert message == (
        f"JUnit report {path} is {kind}, not a regular file: "
        "the test command must write its report there as a file"
    )
    assert cost.read == 0


@pytest.mark.parametrize(("make", "kind"), NOT_FILES, ids=NOT_FILE_IDS)
def test_a_report_swapped_after_it_was_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], None], kind: str
) -> None:
    # The test command's leftover processes can replace the file between the check of
    # the path and its opening: what is opened is checked again, and a FIFO without a
    # writer must not block the open (the read runs in a thread so a hang fails the test).
    if make is _null_device and os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    path = tmp_path / "junit.xml"
    path.write_text("<testcase/>")
    checked = repogym.junit.file._lstat

    def swapping(target: Path) -> os.stat_result:
        info = checked(target)
        target.unlink()
        make(target)
        return info

    monkeypatch.setattr(repogym.junit.file, "_lstat", swapping)
    outcome: list[str] = []
    reader = threading.Thread(target=lambda: outcome.append(refusal(path)[0]), daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert not reader.is_alive(), "opening the swapped report blocked"
    assert outcome == [
        f"JUnit report {path} is {kind}, not a regular file: "
        "the test command must write its report there as a file"
    ]


# -- end to end --------------------------------------------------------------------------

BOMB = 'python3 -c \'import sys; open(sys.argv[1], "w").write("<testsuite>" * 1000000)\' {junit}'


def test_a_grade_whose_test_command_writes_a_bomb_fails_with_the_limit(repo: Repo) -> None:
    task = (
        f"version: 1\ntype: bugfix\ntests:\n  command: {BOMB}\n"
        "  fail_to_pass: [tests/test_a.py::test_a]\n"
    )
    repo.commit("base", {".repogym.yml": task, "tests/test_a.py": "def test_a():\n    pass\n"})
    repo.branch("pr")
    repo.commit("fix", {"a.py": "x = 1\n"})
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "grade", "--base", "main"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    problem = [line for line in done.stdout.splitlines() if "nests elements" in line]
    assert len(problem) == 1
    assert problem[0].startswith("tests: score 0: JUnit report ")
    assert problem[0].endswith(
        " nests elements more than 1,000 deep, the limit (at line 1, column "
        "11,001): a JUnit report needs a few levels: write the test suites less deeply nested"
    )
    assert "FAIL 0.000" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
