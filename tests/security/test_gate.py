"""What the constraint gate and the output paths catch (issue 9): compiled code, source
hidden behind a coding cookie, symlinks out of the tree or at protected files, and report
paths that a symlink of the graded tree would redirect. Each attack is a real repository
graded end to end by ``repogym grade``, asserting the verdict, the message, and that
nothing was written outside the tree."""

from __future__ import annotations

import json
import os
import py_compile
from pathlib import Path
from typing import Any

import pytest

from repogym.cli import main
from repogym.errors import TaskError
from repogym.graders.constraints import is_compiled, readings
from repogym.report.outputs import write_outputs
from repogym.task import parse_task
from repogym.tree.atomic import PendingWrite
from tests.support.repo import Repo

TASK = """\
version: 1
type: refactor
constraints:
  protected: [tests/**]
  forbidden_patterns: ['__import__', 'atexit']
  max_function_length: 20
"""
SOURCE = "def f(x):\n    return x + 3\n"
FAILED = "FAIL 0.000 (constraints=0.50✗(gate), quality=1.00✓)"
PASSED = "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓)"
# What a planted module would do when imported: rewrite the report as the run ends.
PAYLOAD = "import atexit\natexit.register(lambda: open('report.json', 'w').write('PASS'))\n"


@pytest.fixture
def pr(repo: Repo) -> Repo:
    """A refactor task at main, with a protected test file, and a branch to submit on."""
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": SOURCE, "tests/test_m.py": "x = 1\n"})
    repo.branch("pr")
    return repo


def link(repo: Repo, path: str, target: str | Path) -> None:
    where = repo.root / path
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(target)


def grade(
    repo: Repo, capsys: pytest.CaptureFixture[str], out: Path, *args: str
) -> tuple[int, list[str], dict[str, Any]]:
    """``repogym grade -C repo --json out``: exit code, printed lines, report."""
    code = main(["grade", "-C", str(repo.root), "--base", "main", "--json", str(out), *args])
    lines = capsys.readouterr().out.splitlines()
    return code, lines, json.loads(out.read_text())


def gate(report: dict[str, Any]) -> dict[str, Any]:
    (constraints,) = [c for c in report["components"] if c["name"] == "constraints"]
    return constraints


def assert_gate_failed(
    code: int,
    lines: list[str],
    report: dict[str, Any],
    messages: list[str],
    summary: str = FAILED,
) -> None:
    assert code == 1
    assert lines[-2] == summary
    assert report["passed"] is False and report["score"] == 0.0
    constraints = gate(report)
    assert constraints["passed"] is False
    assert constraints["messages"] == messages
    # The table printed says it too.
    assert [line for line in lines if line.startswith("constraints: ")] == [
        f"constraints: {m}" for m in messages
    ]


# -- compiled code -----------------------------------------------------------------------


def compiled(tmp_path: Path, source: str = PAYLOAD) -> bytes:
    """The bytecode of ``source``: what a source-less module ships."""
    module = tmp_path / "planted.py"
    module.write_text(source)
    return Path(py_compile.compile(str(module), cfile=str(tmp_path / "planted.pyc"))).read_bytes()


@pytest.mark.parametrize(
    "path",
    [
        "src/m2.pyc",  # a source-less module: imported as `m2` with no source to read
        "src/__pycache__/m.cpython-311.pyc",  # a stale cache entry that shadows src/m.py
        "src/__pycache__/notes.txt",  # anything in a bytecode cache
        "src/m2.pyo",
        "src/fast.cpython-311-x86_64-linux-gnu.so",
        "src/libfast.so.1",
        "src/fast.pyd",
        "lib/fast.dll",
        "lib/libfast.dylib",
        "SRC/M2.PYC",  # Windows and macOS find it whatever the case
    ],
)
def test_compiled_code_added_fails_the_gate(
    pr: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path, path: str
) -> None:
    pr.write({path: compiled(tmp_path)})
    code, lines, report = grade(pr, capsys, tmp_path / "r.json")
    message = (
        f"{path} is compiled code and was added: no check can read what it does; "
        "remove it, or allow it in the task with constraints.allow_compiled"
    )
    assert_gate_failed(code, lines, report, [message])
    (finding,) = gate(report)["findings"]
    assert finding == {
        "path": path,
        "line": None,
        "title": "compiled code",
        "message": message,
        "level": "failure",
    }
    # The planted code never ran: grading reads it, nothing imports it.
    assert not (pr.root / "report.json").exists()


def test_compiled_code_changed_fails_and_deleted_passes(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo.commit(
        "base",
        {".repogym.yml": TASK, "src/m.py": SOURCE, "vendor/a.so": b"\x7fELF1", "b.pyc": b"x"},
    )
    repo.branch("pr")
    repo.write({"vendor/a.so": b"\x7fELF2"})
    repo.delete("b.pyc")
    code, lines, report = grade(repo, capsys, tmp_path / "r.json")
    assert_gate_failed(
        code,
        lines,
        report,
        [
            "vendor/a.so is compiled code and was changed: no check can read what it does; "
            "remove it, or allow it in the task with constraints.allow_compiled"
        ],
    )


def test_compiled_code_the_task_allows_passes(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    task = TASK.replace("constraints:\n", "constraints:\n  allow_compiled: ['vendor/**']\n")
    repo.commit("base", {".repogym.yml": task, "src/m.py": SOURCE})
    repo.branch("pr")
    repo.write({"vendor/fast.so": b"\x7fELF", "vendor/__pycache__/x.pyc": b"x"})
    code, lines, report = grade(repo, capsys, tmp_path / "r.json")
    assert (code, lines[-2], gate(report)["findings"]) == (0, PASSED, [])
    assert report["task"]["config"]["constraints"]["allow_compiled"] == ["vendor/**"]
    # Allowed there, not anywhere.
    repo.write({"src/m2.pyc": compiled(tmp_path)})
    code, lines, report = grade(repo, capsys, tmp_path / "r.json")
    assert code == 1 and [f["path"] for f in gate(report)["findings"]] == ["src/m2.pyc"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "['../vendor/**']",
            "glob '../vendor/**' must be a relative POSIX path from the repository root",
        ),
        ("vendor/**", "Input should be a valid tuple"),
    ],
)
def test_allow_compiled_is_checked_like_every_glob_key(value: str, message: str) -> None:
    text = TASK.replace("constraints:\n", f"constraints:\n  allow_compiled: {value}\n")
    with pytest.raises(TaskError) as caught:
        parse_task(text)
    (line,) = caught.value.lines
    assert line.startswith(".repogym.yml:4: `constraints.allow_compiled`"), line
    assert message.lower() in line.lower() or "list" in line, line


def test_what_counts_as_compiled() -> None:
    source = ["a.py", "a.pyi", "so.txt", "a.sol", "lib.so.x", "pycache/a", "__pycache__"]
    assert [p for p in source if is_compiled(p)] == []
    assert all(map(is_compiled, ["a.so.1.2", "x/__pycache__/y", "A.DLL", "m.abi3.so"]))


# -- forbidden patterns behind a coding cookie -----------------------------------------------


# `+AF8AXw-` is `__` in UTF-7, `+AGE-` is `a` and `+-` is `+`: valid Python, with no
# forbidden text in the UTF-8 reading.
HIDDEN_IMPORT = b"# coding: utf-7\ndef f(x):\n    +AF8AXw-import+AF8AXw-('os')\n    return x +- 3\n"
HIDDEN_ATEXIT = b"# -*- coding: utf-7 -*-\nimport +AGE-texit\n\ndef f(x):\n    return x +- 3\n"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (HIDDEN_IMPORT, "src/m.py:3: forbidden pattern '__import__'"),
        (HIDDEN_ATEXIT, "src/m.py:2: forbidden pattern 'atexit'"),
    ],
)
def test_forbidden_text_hidden_by_a_utf7_cookie_is_caught(
    pr: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path, source: bytes, found: str
) -> None:
    assert b"__import__" not in source and b"atexit" not in source
    pr.write({"src/m.py": source})
    code, lines, report = grade(pr, capsys, tmp_path / "r.json")
    assert_gate_failed(code, lines, report, [found])
    (finding,) = gate(report)["findings"]
    assert (finding["title"], finding["path"]) == ("forbidden_patterns", "src/m.py")


@pytest.mark.parametrize(
    ("cookie", "body", "reason"),
    [
        (b"nonesuch", b"x = 1\n", "unknown encoding: nonesuch"),
        (
            b"rot13",
            b"k = 1\n",
            "'rot13' is not a text encoding; use codecs.decode() to handle arbitrary codecs",
        ),
        (
            b"ascii",
            "x = 'é'\n".encode(),
            "ascii cannot decode line 2: ordinal not in range(128)",
        ),
    ],
)
def test_a_cookie_that_cannot_read_the_file_fails_the_gate(
    pr: Repo,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    cookie: bytes,
    body: bytes,
    reason: str,
) -> None:
    pr.write({"src/m.py": b"# coding: " + cookie + b"\n" + body})
    code, lines, report = grade(pr, capsys, tmp_path / "r.json")
    message = (
        f"src/m.py: its coding cookie cannot be used to read it ({reason}), so "
        "forbidden_patterns cannot check it; declare a text encoding that decodes it, "
        "such as utf-8"
    )
    # Python cannot read it either: the quality limits do not parse it.
    assert_gate_failed(code, lines, report, [message], FAILED.replace("1.00✓", "0.00✗"))
    (finding,) = gate(report)["findings"]
    assert finding["path"] == "src/m.py" and finding["message"] == message


def test_cookies_without_hidden_text_pass(
    pr: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pr.write(
        {
            "src/m.py": "# coding: latin-1\ndef f(x):\n    return x + 3  # café\n".encode(
                "latin-1"
            ),
            "src/n.py": b"# coding: utf-7\nx = 1\n",
            # Only Python reads cookies: in another file an unknown one is just text.
            "Makefile": b"# coding: nonesuch\nall:\n\ttrue\n",
        }
    )
    code, lines, _ = grade(pr, capsys, tmp_path / "r.json")
    assert (code, lines[-2]) == (0, PASSED)


def test_readings_are_utf8_and_what_the_cookie_says() -> None:
    assert readings("a.py", b"x = 1\n") == (["x = 1\n"], None)
    assert readings("a.py", HIDDEN_IMPORT)[0][1].splitlines()[2] == "    __import__('os')"
    # A BOM that contradicts the cookie: Python refuses the file.
    _, problem = readings("a.py", b"\xef\xbb\xbf# coding: latin-1\n")
    assert problem is not None and "(encoding problem: utf-8)" in problem


# -- symlinks ----------------------------------------------------------------------------------

OUTSIDE = (
    "which leads outside the repository; commit the file itself, or link to a path inside "
    "the repository"
)


@pytest.mark.parametrize(
    ("path", "target", "problem"),
    [
        ("src/data.txt", "/etc/passwd", OUTSIDE),
        ("src/up.py", "../../outside.py", OUTSIDE),  # `..` past the root
        ("src/sneaky", "m.py/../../../x", OUTSIDE),  # read as written, it escapes
        (
            "src/cfg",
            "../.git/config",
            "which leads into .git, which is no part of the submission; remove it",
        ),
        (
            "src/t.py",
            "../tests/test_m.py",
            "which is protected (matched by constraints.protected); remove the link",
        ),
        ("src/task.yml", "../.repogym.yml", "which is protected (the task file); remove the link"),
        (
            "src/all",
            "..",  # the root, and every protected file in it
            "which is protected (it holds .repogym.yml, the task file); remove the link",
        ),
        (
            "src/t",
            "../tests",
            "which is protected (it holds tests/test_m.py, matched by constraints.protected); "
            "remove the link",
        ),
    ],
)
def test_symlink_out_of_the_tree_or_at_a_protected_file_fails_the_gate(
    pr: Repo,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    path: str,
    target: str,
    problem: str,
) -> None:
    link(pr, path, target)
    code, lines, report = grade(pr, capsys, tmp_path / "r.json")
    message = f"{path} is a symlink to {target}, {problem}"
    assert_gate_failed(code, lines, report, [message])
    (finding,) = gate(report)["findings"]
    assert (finding["title"], finding["path"], finding["message"]) == ("symlink", path, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "repo"]


def test_symlink_escaping_through_a_link_of_the_base_fails_the_gate(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # `shared` came with the base (a monorepo's link to its neighbour): a link through it
    # reads as inside the tree, but the kernel takes it out.
    (tmp_path / "secret.txt").write_text("TOKEN\n")
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": SOURCE})
    link(repo, "shared", "..")
    repo.commit("a link to the parent, at base")
    repo.branch("pr")
    link(repo, "src/config.txt", "../shared/secret.txt")
    code, lines, report = grade(repo, capsys, tmp_path / "r.json")
    assert_gate_failed(
        code, lines, report, [f"src/config.txt is a symlink to ../shared/secret.txt, {OUTSIDE}"]
    )


def test_a_symlink_changed_to_lead_out_fails_and_a_loop_fails(
    repo: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo.commit("base", {".repogym.yml": TASK, "src/m.py": SOURCE})
    link(repo, "src/alias.py", "m.py")
    repo.commit("an in-tree link, at base")
    repo.branch("pr")
    (repo.root / "src" / "alias.py").unlink()
    link(repo, "src/alias.py", "/usr/lib/python3/dist-packages")
    link(repo, "a", "b")
    link(repo, "b", "a")
    code, lines, report = grade(repo, capsys, tmp_path / "r.json")
    loop = "which never resolves (a loop of symlinks); remove it"
    assert_gate_failed(
        code,
        lines,
        report,
        [
            f"a is a symlink to b, {loop}",
            f"b is a symlink to a, {loop}",
            f"src/alias.py is a symlink to /usr/lib/python3/dist-packages, {OUTSIDE}",
        ],
    )


def test_symlinks_inside_the_tree_stay_allowed(
    pr: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    link(pr, "src/alias.py", "m.py")
    link(pr, "lib", "src")
    link(pr, "src/dangling", "not-yet-built.txt")
    link(pr, "docs/m.py", "../lib/m.py")  # through another link, still inside
    code, lines, report = grade(pr, capsys, tmp_path / "r.json")
    assert (code, lines[-2], gate(report)["findings"]) == (0, PASSED, [])


# -- output paths ------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Where a planted link points: a stand-in for the grader's site-packages."""
    site = tmp_path / "site-packages"
    site.mkdir()
    return site


def refused(
    repo: Repo, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, list[str], str]:
    code = main(["grade", "--base", "main", *args])
    captured = capsys.readouterr()
    return code, captured.err.splitlines(), captured.out


@pytest.mark.parametrize(
    ("option", "name"), [("--json", "report.json"), ("--markdown", "summary.md")]
)
def test_a_committed_symlink_as_the_output_is_refused_before_grading(
    pr: Repo,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    outside: Path,
    option: str,
    name: str,
) -> None:
    target = outside / "x.pth"
    link(pr, name, target)
    pr.commit("a report that writes a .pth into the grader's site-packages")
    monkeypatch.chdir(pr.root)
    code, errors, out = refused(pr, capsys, option, name)
    assert code == 2
    assert errors == [
        f"repogym: error: {option} {name}: is a symlink in the graded tree (-> {target}); "
        "write the report outside the tree or remove the link"
    ]
    assert out == ""  # refused before grading
    assert list(outside.iterdir()) == []
    assert (pr.root / name).is_symlink()


def test_a_symlinked_directory_on_the_way_is_refused(
    pr: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    link(pr, "build", outside)
    monkeypatch.chdir(pr.root)
    code, errors, out = refused(pr, capsys, "--json", "build/x.pth")
    assert (code, out) == (2, "")
    assert errors == [
        f"repogym: error: --json build/x.pth: goes through {pr.root / 'build'}, a symlink in "
        f"the graded tree (-> {outside}); write the report outside the tree or remove the link"
    ]
    assert list(outside.iterdir()) == []


def test_a_path_outside_that_leads_into_the_tree_and_out_again_is_refused(
    pr: Repo, capsys: pytest.CaptureFixture[str], tmp_path: Path, outside: Path
) -> None:
    # The user's own link into the tree is followed; the tree's link after it is not.
    (tmp_path / "checkout").symlink_to(pr.root)
    link(pr, "report.json", outside / "x.pth")
    via = tmp_path / "checkout" / "report.json"
    code, errors, out = refused(pr, capsys, "-C", str(pr.root), "--json", str(via))
    assert (code, out) == (2, "")
    assert errors == [
        f"repogym: error: --json {via}: is a symlink in the graded tree "
        f"(-> {outside / 'x.pth'}); write the report outside the tree or remove the link"
    ]
    assert list(outside.iterdir()) == []


def test_a_fifo_in_the_tree_is_refused(
    pr: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a FIFO with no reader would hang the grader.
    os.mkfifo(pr.root / "report.json")
    monkeypatch.chdir(pr.root)
    code, errors, out = refused(pr, capsys, "--json", "report.json")
    assert (code, out) == (2, "")
    assert errors == [
        "repogym: error: --json report.json: is not a regular file, in the graded tree; "
        "write the report outside the tree"
    ]


def test_a_regular_path_inside_the_tree_stays_allowed(
    pr: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    link(pr, "lib", "src")  # a link elsewhere in the tree does not matter
    monkeypatch.chdir(pr.root)
    code = main(["grade", "--base", "main", "--json", "out/report.json", "--markdown", "s.md"])
    assert code == 0, capsys.readouterr().err
    assert json.loads((pr.root / "out" / "report.json").read_text())["passed"] is True
    assert (pr.root / "s.md").is_file()


# -- writing never follows a link planted after the check ---------------------------------------


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    repo: Repo, outside: Path
) -> None:
    (repo.root / "out").mkdir()
    pending = PendingWrite(repo.root / "out" / "r.json", "{}\n", tree=repo.root)
    (repo.root / "out").rename(repo.root / "moved")
    (repo.root / "out").symlink_to(outside)
    try:
        pending.commit()
    finally:
        pending.discard()
    assert list(outside.iterdir()) == []
    assert (repo.root / "moved" / "r.json").read_text() == "{}\n"  # where it was checked


def test_a_file_swapped_for_a_symlink_after_the_check_is_replaced_not_followed(
    repo: Repo, outside: Path
) -> None:
    report = repo.root / "r.json"
    pending = PendingWrite(report, "{}\n", tree=repo.root)
    report.symlink_to(outside / "x.pth")
    try:
        pending.commit()
    finally:
        pending.discard()
    assert list(outside.iterdir()) == []
    assert not report.is_symlink() and report.read_text() == "{}\n"


def test_a_link_planted_before_writing_is_one_line(repo: Repo, outside: Path) -> None:
    # Checked before grading, planted during it: the write refuses it too.
    link(repo, "r.json", outside / "x.pth")
    problem = write_outputs([("--json", str(repo.root / "r.json"), "{}\n")], tree=repo.root)
    assert problem == (
        f"--json {repo.root / 'r.json'}: is a symlink in the graded tree "
        f"(-> {outside / 'x.pth'}); write the report outside the tree or remove the link"
    )
    assert list(outside.iterdir()) == []


def test_outside_the_tree_a_users_symlink_is_still_followed(repo: Repo, tmp_path: Path) -> None:
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    (tmp_path / "latest.json").symlink_to(real)
    assert (
        write_outputs([("--json", str(tmp_path / "latest.json"), "{}\n")], tree=repo.root) is None
    )
    assert real.read_text() == "{}\n"
