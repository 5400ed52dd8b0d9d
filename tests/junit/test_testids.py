"""Canonical test ids (issue 3): the mapping of each runner, proven on the JUnit that the
real runner writes. pytest, unittest (xmlrunner), ``node --test``, jest and mocha run
here, once per module each; the reports of runners this machine lacks (go-junit-report,
gotestsum, Maven Surefire, cargo-nextest) are written by hand under ``tests/data/junit``
in their documented formats, beside one recorded from pytest-rerunfailures."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repogym.graders.tests.loadfailure import LoadFailure, load_failure
from repogym.junit import Case, Outcome, iter_cases, testids
from repogym.junit.testids import TestResult, collect

HERE = Path(__file__).parent.parent  # tests/
DATA = HERE / "data" / "junit"
RUNNERS = HERE / "runners"
MODULES = RUNNERS / "node_modules"

P, F, E, S = Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED


def case(
    name: str,
    classname: str = "",
    *,
    file: str | None = None,
    suites: tuple[str, ...] = (),
    outcome: Outcome = P,
    flaky: bool = False,
    message: str = "",
) -> Case:
    return Case(
        name=name,
        classname=classname,
        file=file,
        suites=suites,
        outcome=outcome,
        flaky=flaky,
        message=message,
    )


class Tree:
    """An ``exists`` for a tree holding these files (and their directories), that
    records every path it is asked about."""

    def __init__(self, *paths: str) -> None:
        self.present = set(paths)
        for path in paths:
            parts = path.split("/")
            self.present.update("/".join(parts[:end]) for end in range(1, len(parts)))
        self.asked: list[str] = []

    def __call__(self, path: str) -> bool:
        self.asked.append(path)
        return path in self.present


def id_of(one: Case, *present: str, known: tuple[str, ...] = ()) -> str:
    return testids.test_id(one, exists=Tree(*present), known_ids=known)


def outcomes(results: dict[str, TestResult]) -> dict[str, Outcome]:
    return {key: result.outcome for key, result in results.items()}


def write(root: Path, tree: dict[str, str]) -> None:
    for path, text in tree.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip())


# pytest ---------------------------------------------------------------------------------


def test_pytest_xunit1_joins_the_file_the_classes_and_the_name() -> None:
    one = case("test_n[a b::c.d]", "tests.test_x.TestA.TestB", file="tests/test_x.py")
    assert id_of(one) == "tests/test_x.py::TestA::TestB::test_n[a b::c.d]"


def test_pytest_xunit1_in_a_directory_with_dots() -> None:
    one = case("test_b", "tests.sub.pkg.test_d", file="tests/sub.pkg/test_d.py")
    assert id_of(one) == "tests/sub.pkg/test_d.py::test_b"


def test_pytest_junit_prefix_before_the_module_is_dropped() -> None:
    one = case("test_m", "nightly.tests.test_x.TestA", file="tests/test_x.py")
    assert id_of(one) == "tests/test_x.py::TestA::test_m"


def test_a_module_that_failed_to_collect_is_its_file() -> None:
    failed = case("tests.test_x", file="tests/test_x.py", outcome=E)
    assert id_of(failed) == "tests/test_x.py"
    assert id_of(case("tests.test_x", outcome=E), "tests/test_x.py") == "tests/test_x.py"


def test_a_module_skipped_as_a_whole_is_its_file() -> None:
    # pytest.skip(allow_module_level=True): as a collection error, with a skip.
    skipped = case("tests.test_x", file="tests/test_x.py", outcome=S)
    assert id_of(skipped) == "tests/test_x.py"
    assert id_of(case("tests.test_x", outcome=S), "tests/test_x.py") == "tests/test_x.py"
    # A passing testcase of that form is no module's record (issue 9).
    assert id_of(case("tests.test_x"), "tests/test_x.py") == "tests.test_x"


def test_a_file_skipped_or_not_collected_has_no_test_that_counts(tmp_path: Path) -> None:
    # A test of another module wrote a pass under an id of the file that did not run
    # (pytest's record_xml_attribute): that pass is not counted (issue 9).
    forged = case("test_a", "tests.test_x", file="tests/test_x.py")
    other = case("test_b", "tests.test_y", file="tests/test_y.py")
    for outcome, said in ((S, "skipped"), (E, "not collected")):
        whole = case("tests.test_x", file="tests/test_x.py", outcome=outcome, message="m")
        results = collect([whole, forged, other], tree=tmp_path)
        assert results["tests/test_x.py::test_a"] == TestResult(
            outcome=Outcome.MISSING,
            flaky=False,
            message=f"not counted: the report has its file tests/test_x.py as {said} as a whole",
            attempts=1,
        )
        assert outcomes(results) == {
            "tests/test_x.py": outcome,
            "tests/test_x.py::test_a": Outcome.MISSING,
            "tests/test_y.py::test_b": P,
        }
    # Node's "test failed" for a file may come after its tests ran: they keep their outcome.
    node = [case("/t/test/a.test.js", "test", outcome=F), case("t", "test", file="test/a.test.js")]
    assert outcomes(collect(node, tree=Path("/t"))) == {"test/a.test.js": F, "test/a.test.js::t": P}


def test_xunit2_resolves_the_module_against_the_tree() -> None:
    one = case("test_m[1.5]", "tests.sub.pkg.test_d.TestA")
    assert id_of(one, "tests/sub.pkg/test_d.py") == "tests/sub.pkg/test_d.py::TestA::test_m[1.5]"
    assert id_of(one, "tests/sub/pkg/test_d.py") == "tests/sub/pkg/test_d.py::TestA::test_m[1.5]"
    assert id_of(one, "tests/sub/pkg.test_d.py") == "tests/sub/pkg.test_d.py::TestA::test_m[1.5]"


def test_xunit2_prefers_a_known_id_to_a_file_that_exists() -> None:
    one = case("test_m", "tests.a.b.test_d.TestA")
    present = ("tests/a/b/test_d.py", "tests/a.b/test_d.py")
    assert id_of(one, *present) == "tests/a/b/test_d.py::TestA::test_m"
    known = ("tests/a.b/test_d.py::TestA::test_m",)
    assert id_of(one, *present, known=known) == known[0]


def test_xunit2_known_ids_match_parameters_byte_for_byte() -> None:
    known = ("tests/test_x.py::TestA::test_p[x::y.z [w]]",)
    assert id_of(case("test_p[x::y.z [w]]", "tests.test_x.TestA"), known=known) == known[0]
    # The same key from two known ids: the one whose file exists wins.
    known = ("tests/a.b/t.py::test_q", "tests/a/b/t.py::test_q")
    assert id_of(case("test_q", "tests.a.b.t"), "tests/a/b/t.py", known=known) == known[1]


def test_xunit2_prefers_the_longest_module_that_exists() -> None:
    # tests/test_x/TestA.py exists as well as tests/test_x.py: TestA is a module here.
    one = case("test_m", "tests.test_x.TestA")
    assert id_of(one, "tests/test_x.py", "tests/test_x/TestA.py") == (
        "tests/test_x/TestA.py::test_m"
    )


def test_xunit2_without_a_file_in_the_tree_keeps_the_classname() -> None:
    assert id_of(case("test_m", "tests.test_x.TestA")) == "tests.test_x.TestA::test_m"


def test_only_python_names_are_looked_for_in_python_modules() -> None:
    # A mocha test in describe('parser') of a repository that also has a parser.py.
    assert id_of(case("parses 1.5", "parser"), "parser.py") == "parser::parses 1.5"
    assert id_of(case("TestX/sub", "parser"), "parser.py") == "parser::TestX/sub"
    assert id_of(case("test_x[a b]", "parser"), "parser.py") == "parser.py::test_x[a b]"


def test_resolution_never_asks_outside_the_tree() -> None:
    exists = Tree("tests/test_x.py")
    for classname in ("..etc.passwd", "tests..test_x", "/etc.passwd", "a:b.c", "a\\b.c"):
        testids.test_id(case("t", classname), exists=exists)
    testids.test_id(case("t", "x", file="/w/../../etc/x.js"), exists=exists)
    assert all(".." not in path.split("/") for path in exists.asked)
    assert not any(path.startswith("/") or "\\" in path for path in exists.asked)


def test_collect_looks_for_modules_in_the_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, {"tests/sub.pkg/test_d.py": ""})
    (tmp_path / "outside.py").write_text("")
    cases = [case("test_a", "tests.sub.pkg.test_d.TestA"), case("test_b", "outside")]
    assert set(collect(cases, tree=tree)) == {
        "tests/sub.pkg/test_d.py::TestA::test_a",
        "outside::test_b",
    }


def test_an_absolute_file_is_made_relative_to_the_tree(tmp_path: Path) -> None:
    write(tmp_path, {"tests/test_x.py": ""})
    one = case("test_a", "tests.test_x", file=str(tmp_path / "tests" / "test_x.py"))
    assert set(collect([one], tree=tmp_path)) == {"tests/test_x.py::test_a"}
    # Reported from another mount of the tree: the longest tail that exists, or is known.
    one = case("test_a", "tests.test_x", file="/github/workspace/tests/test_x.py")
    assert id_of(one, "tests/test_x.py") == "tests/test_x.py::test_a"
    assert id_of(one, known=("tests/test_x.py::test_a",)) == "tests/test_x.py::test_a"
    windows = case("test_a", "tests.test_x", file="C:\\work\\tests\\test_x.py")
    assert id_of(windows, "tests/test_x.py") == "tests/test_x.py::test_a"


# unittest -------------------------------------------------------------------------------


def test_a_failing_subtest_counts_against_its_method() -> None:
    cases = [
        case("test_s (v='x.y')", "tests.test_u.TestA", file="tests/test_u.py", outcome=F),
        case("test_s [msg] (v=1)", "tests.test_u.TestA", file="tests/test_u.py", outcome=E),
    ]
    results = collect(cases, tree=Path("/nonexistent"))
    assert results == {
        "tests/test_u.py::TestA::test_s": TestResult(outcome=E, flaky=False, message="", attempts=1)
    }


def test_a_failing_class_fixture_is_named_after_its_class() -> None:
    # xmlrunner writes these with an empty classname and the previous test's file.
    fixture = case("setUpClass (tests.test_u.TestB)", file="tests/other.py", outcome=E)
    assert id_of(fixture, "tests/test_u.py") == "tests/test_u.py::TestB::setUpClass"
    module = case("setUpModule (tests.test_u)", outcome=E)
    assert id_of(module, "tests/test_u.py") == "tests/test_u.py::setUpModule"
    assert id_of(module) == "tests.test_u::setUpModule"


def test_a_module_unittest_could_not_import_is_its_file() -> None:
    # xmlrunner names unittest's stand-in after unittest's own loader.
    loader = "/usr/lib/python3.11/unittest/loader.py"
    with_t = case("test_bad", "unittest.loader._FailedTest.tests", file=loader, outcome=E)
    assert id_of(with_t, "tests/test_bad.py") == "tests/test_bad.py"
    assert id_of(with_t) == "tests.test_bad"  # not a module of this tree: its dotted name
    bare = case("test_bad", "unittest.loader._FailedTest", file=loader, outcome=E)
    assert id_of(bare, "test_bad.py") == "test_bad.py"
    # A module that raised SkipTest when imported: unittest's ModuleSkipped.
    skipped = case("test_skip", "unittest.loader.ModuleSkipped.tests", file=loader, outcome=S)
    assert id_of(skipped, "tests/test_skip.py") == "tests/test_skip.py"


# JavaScript -----------------------------------------------------------------------------


def test_node_ids_are_the_enclosing_suites_and_the_name() -> None:
    nested = case("works", "test", suites=("outer", "inner::x [y]"))
    assert id_of(nested) == "outer::inner::x [y]::works"
    assert id_of(case("top", "test")) == "top"
    # Newer Node writes a file attribute, maybe absolute.
    with_file = case("works", "test", file="/ci/tree/test/a.test.js", suites=("outer",))
    assert id_of(with_file, "test/a.test.js") == "test/a.test.js::outer::works"
    # A file that failed to load is a testcase named by the file's absolute path.
    assert id_of(case("/ci/tree/test/bad.test.js", "test"), "test/bad.test.js") == (
        "test/bad.test.js"
    )


def test_node_without_files_merges_equal_names_as_attempts() -> None:
    # Node 20 writes no file: `top` of two files is one id, and the last one counts.
    results = collect([case("top", "test", outcome=F), case("top", "test")], tree=Path("/x"))
    assert results == {"top": TestResult(outcome=P, flaky=True, message="", attempts=2)}


def test_jest_and_mocha_describe_blocks_come_from_the_classname() -> None:
    jest = case("t", "a::b", file="src/x.test.js", suites=("src/x.test.js",))
    assert id_of(jest) == "src/x.test.js::a::b::t"
    assert id_of(case("t", file="src/x.test.js", suites=("src/x.test.js",))) == ("src/x.test.js::t")
    mocha = case("t", "a::b", suites=("Root Suite::a::b",))
    assert id_of(mocha) == "a::b::t"
    # A describe block named `test` is not mistaken for Node's classname.
    jest = case("t", "test", file="src/x.test.js", suites=("src/x.test.js",))
    assert id_of(jest) == "src/x.test.js::test::t"
    assert id_of(case("t", "test", suites=("Root Suite::test",))) == "test::t"


def test_a_testcase_named_after_its_file_is_the_file() -> None:
    # jest-junit's "Test suite failed to run", written twice, is one attempt.
    cases = [
        case("src/bad.test.js", "Test suite failed to run", file="src/bad.test.js", outcome=E),
        case("src/bad.test.js", "Test suite failed to run", file="src/bad.test.js", outcome=F),
    ]
    results = collect(cases, tree=Path("/x"))
    assert results == {
        "src/bad.test.js": TestResult(outcome=E, flaky=False, message="", attempts=1)
    }


# Go, Java, Rust -------------------------------------------------------------------------


def test_classname_and_name_for_other_runners() -> None:
    go = case("TestParse/unicode_[ü]", "example.com/calc", suites=("example.com/calc",))
    assert id_of(go) == "example.com/calc::TestParse/unicode_[ü]"
    surefire = case("parses(String)[1]", "com.example.ParserTest$Unicode")
    assert id_of(surefire) == "com.example.ParserTest$Unicode::parses(String)[1]"
    nextest = case("parse::tests::works", "calc::bin/calc", suites=("calc::bin/calc",))
    assert id_of(nextest) == "calc::bin/calc::parse::tests::works"
    # gotestsum's failed TestMain has no classname: the package is the suite's name.
    assert id_of(case("TestMain", suites=("example.com/calc",))) == "example.com/calc::TestMain"


# What an id names -----------------------------------------------------------------------


FILES_OF = {
    "tests/test_x.py::TestA::test_b[1]": "tests/test_x.py",
    "test/a.test.js::outer::works": "test/a.test.js",
    "tests/test_x.py": "tests/test_x.py",  # a module that failed to load
    "./tests/test_x.py::t": "./tests/test_x.py",  # a file, so checked (and refused) as a path
    "example.com/calc::TestDivide/by_zero": None,
    "com.example.ParserTest$Unicode::parses(String)[1]": None,
    "calc::bin/calc::cli::tests::parses_args": None,
    "outer::inner::works": None,
    "does not map // when ignoreTrailingSlash is true": None,
    "/ matches root": None,
    "C:\\x": None,
    "loads index.js": None,  # a name with a space is no file, though it ends like one
    "": None,
}


@pytest.mark.parametrize(("test_id", "file"), FILES_OF.items(), ids=repr)
def test_file_of(test_id: str, file: str | None) -> None:
    assert testids.file_of(test_id) == file


def test_escape_controls_writes_them_as_python_does() -> None:
    assert testids.escape_controls("t[\t\n\r\x1b\x7f\x85]") == "t[\\t\\n\\r\\x1b\\x7f\\x85]"
    # A backslash stays as it is: pytest's own `\\t` and an escaped TAB then look alike.
    assert testids.escape_controls("t[\\t] ü") == "t[\\t] ü"


# attempts, phases, flaky ----------------------------------------------------------------


def run(outcome: Outcome, message: str = "", *, flaky: bool = False) -> Case:
    """One testcase of ``tests/test_x.py::test_a``."""
    return case(
        "test_a",
        "tests.test_x",
        file="tests/test_x.py",
        outcome=outcome,
        flaky=flaky,
        message=message,
    )


TEARDOWN = 'failed on teardown with "RuntimeError: td"'
SETUP = 'failed on setup with "RuntimeError: su"'


# name: (testcases of one id in report order, (outcome, flaky, message, attempts))
ATTEMPTS = {
    "one pass": ([run(P)], (P, False, "", 1)),
    "a rerun passed": ([run(F, "boom"), run(P)], (P, True, "", 2)),
    "every rerun failed": ([run(F, "1"), run(F, "2"), run(F, "3")], (F, False, "3", 3)),
    # pytest-rerunfailures writes each failed attempt as a bare testcase.
    # Testcases that all passed: tests sharing a name, or pytest-rerunfailures' bare
    # testcase for a failed attempt, which no report tells apart: not flaky (issue 8).
    "all passed": ([run(P), run(P)], (P, False, "", 2)),
    "rerunfailures: failed every time": ([run(P), run(P), run(F, "x")], (F, False, "x", 3)),
    "the last attempt counts": ([run(F, "x"), run(P), run(F, "y")], (F, True, "y", 3)),
    "call failed, teardown errored": ([run(F, "x"), run(E, TEARDOWN)], (E, False, TEARDOWN, 1)),
    "that, twice": (
        [run(F, "x"), run(E, TEARDOWN), run(F, "y"), run(E, TEARDOWN)],
        (E, False, TEARDOWN, 2),
    ),
    "a teardown error after a bare testcase": ([run(P), run(E, TEARDOWN)], (E, False, TEARDOWN, 2)),
    "a setup error opens an attempt": ([run(F, "x"), run(E, SETUP)], (E, False, SETUP, 2)),
    "a setup error, then a pass": ([run(E, SETUP), run(P)], (P, True, "", 2)),
    "skipped": ([run(S, "why")], (S, False, "why", 1)),
    "flakyFailure children on a pass": ([run(P, flaky=True)], (P, True, "", 1)),
    # Nothing reruns a skipped test: records that disagree otherwise give the worst (issue 9).
    "a pass after a skip does not count": ([run(S, "why"), run(P)], (S, False, "why", 2)),
    "a skip after a pass": ([run(P), run(S, "why")], (S, False, "why", 2)),
    "a skip does not take back a failure": ([run(F, "x"), run(S, "why")], (F, False, "x", 2)),
    "a skip, a failure, a pass": ([run(S), run(F, "x"), run(P)], (F, True, "x", 3)),
    "rerunFailure children on a failure": ([run(F, "x", flaky=True)], (F, False, "x", 1)),
}


@pytest.mark.parametrize(("history", "expected"), ATTEMPTS.values(), ids=ATTEMPTS.keys())
def test_attempts(history: list[Case], expected: tuple[Outcome, bool, str, int]) -> None:
    outcome, flaky, message, attempts = expected
    (result,) = collect(history, tree=Path("/nonexistent")).values()
    assert result == TestResult(outcome=outcome, flaky=flaky, message=message, attempts=attempts)


# The real runners ----------------------------------------------------------------------


def outcomes_in(report: Path, tree: Path, known: tuple[str, ...] = ()) -> dict[str, Outcome]:
    return outcomes(collect(iter_cases(report), tree=tree, known_ids=known))


def execute(command: list[str], cwd: Path, report: Path, env: dict[str, str] | None = None) -> Path:
    """Run a test runner (its tests fail on purpose) and return the report it wrote."""
    return execute_for_output(command, cwd, report, env)[0]


def execute_for_output(
    command: list[str], cwd: Path, report: Path, env: dict[str, str] | None = None
) -> tuple[Path, str, str]:
    """:func:`execute`, and what the runner printed on stdout and stderr."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "JEST_"))}
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**clean, "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if not report.is_file():
        pytest.fail(
            f"{command[0]} wrote no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return report, done.stdout, done.stderr


def require_node() -> None:
    if shutil.which("node") is None:
        pytest.fail("node is not installed: the JavaScript runner tests need Node.js 20")


def node_bin(name: str) -> str:
    require_node()
    path = MODULES / ".bin" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm ci --prefix tests/runners` first")
    return str(path)


PYTEST_PROJECT = {
    "pytest.ini": """
        [pytest]
    """,
    "tests/test_parse.py": """
        import pytest

        def test_pass():
            pass

        def test_fail():
            assert 1 == 2

        @pytest.mark.skip(reason="not now")
        def test_skip():
            pass

        @pytest.mark.parametrize("v", ["a b", "x.y", "p::q", "[z]"])
        def test_param(v):
            assert v != "x.y"

        class TestX:
            def test_m(self):
                pass

            class TestInner:
                @pytest.mark.parametrize("n", [1.5])
                def test_n(self, n):
                    pass

        @pytest.mark.xfail(reason="known bug")
        def test_xfail():
            assert 0

        @pytest.mark.xfail(strict=True)
        def test_xpass_strict():
            pass

        @pytest.mark.xfail
        def test_xpass():
            pass

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown")

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup")

        def test_teardown_errors(broken_teardown):
            pass

        def test_fails_and_teardown_errors(broken_teardown):
            assert 0

        def test_setup_errors(broken_setup):
            pass
    """,
    "tests/test_broken.py": """
        def test_never_collected():
            return (
    """,
    "tests/sub.pkg/test_dotted.py": """
        class TestD:
            def test_a(self):
                pass

        def test_b():
            assert False
    """,
}

PYTEST_IDS = {
    "tests/test_parse.py::test_pass": P,
    "tests/test_parse.py::test_fail": F,
    "tests/test_parse.py::test_skip": S,
    "tests/test_parse.py::test_param[a b]": P,
    "tests/test_parse.py::test_param[x.y]": F,
    "tests/test_parse.py::test_param[p::q]": P,
    "tests/test_parse.py::test_param[[z]]": P,
    "tests/test_parse.py::TestX::test_m": P,
    "tests/test_parse.py::TestX::TestInner::test_n[1.5]": P,
    "tests/test_parse.py::test_xfail": S,
    "tests/test_parse.py::test_xpass_strict": F,
    "tests/test_parse.py::test_xpass": P,
    "tests/test_parse.py::test_teardown_errors": E,
    "tests/test_parse.py::test_fails_and_teardown_errors": E,
    "tests/test_parse.py::test_setup_errors": E,
    "tests/sub.pkg/test_dotted.py::TestD::test_a": P,
    "tests/sub.pkg/test_dotted.py::test_b": F,
    "tests/test_broken.py": E,  # a module that could not be collected is its file
}


@pytest.fixture(scope="module")
def pytest_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pytest-project")
    write(root, PYTEST_PROJECT)
    return root


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_pytest(pytest_project: Path, family: str) -> None:
    report = pytest_project.parent / f"pytest-{family}.xml"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        f"junit_family={family}",
        f"--junitxml={report}",
        "--continue-on-collection-errors",
        "tests",
    ]
    _, stdout, stderr = execute_for_output(command, pytest_project, report)
    assert outcomes_in(report, pytest_project) == PYTEST_IDS
    # The report says "collection failure"; what pytest printed says why.
    assert load_failure("tests/test_broken.py", stdout, stderr) == LoadFailure(
        cause="SyntaxError: '(' was never closed", line=2
    )
    assert outcomes_in(report, pytest_project, tuple(PYTEST_IDS)) == PYTEST_IDS
    teardown = collect(iter_cases(report), tree=pytest_project)[
        "tests/test_parse.py::test_fails_and_teardown_errors"
    ]
    assert teardown.attempts == 1
    assert teardown.message.startswith('failed on teardown with "RuntimeError: teardown"')


def test_pytest_rerunfailures_recorded() -> None:
    results = collect(iter_cases(DATA / "pytest-rerunfailures.xml"), tree=Path("/nonexistent"))
    assert results == {
        # Failed, then passed: written as two bare testcases, as two passes look.
        "tests/test_rr.py::test_flaky": TestResult(
            outcome=P, flaky=False, message="", attempts=2, line=10
        ),
        "tests/test_rr.py::test_always": TestResult(
            outcome=F, flaky=False, message="assert 0", attempts=3, line=13
        ),
        "tests/test_rr.py::test_setup_on_rerun": TestResult(
            outcome=F,
            flaky=False,
            message="AssertionError: assert 2 >= 3\n +  where 2 = bump('sor')",
            attempts=3,
            line=21,
        ),
        "tests/test_rr.py::test_td_fail": TestResult(
            outcome=E,
            flaky=False,
            message='failed on teardown with "RuntimeError: td"',
            attempts=3,
            line=29,
        ),
    }


UNITTEST_PROJECT = {
    "tests/__init__.py": "",
    "tests/test_ut.py": """
        import unittest

        class TestA(unittest.TestCase):
            def test_pass(self):
                pass

            def test_fail(self):
                self.assertEqual(1, 2)

            def test_error(self):
                raise RuntimeError("boom")

            @unittest.skip("not now")
            def test_skip(self):
                pass

            @unittest.expectedFailure
            def test_xfail(self):
                self.assertEqual(1, 2)

            @unittest.expectedFailure
            def test_xpass(self):
                pass

            def test_subtests(self):
                for v in ["a b", "x.y", "p::q"]:
                    with self.subTest(v=v):
                        self.assertNotIn(".", v)
                        self.assertNotIn(":", v)

            def test_subtests_pass(self):
                for v in ["a", "b"]:
                    with self.subTest(v=v):
                        pass

        class TestSetupFails(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                raise RuntimeError("class setup")

            def test_never_runs(self):
                pass
    """,
    "tests/test_broken.py": """
        import unittest

        class TestBroken(unittest.TestCase):
            def test_never_loaded(self):
                return (
    """,
    "tests/pkg/__init__.py": "",
    "tests/pkg/test_more.py": """
        import unittest

        class TestMore(unittest.TestCase):
            def test_ok(self):
                pass
    """,
}


def test_unittest_xmlrunner(tmp_path: Path) -> None:
    if importlib.util.find_spec("xmlrunner") is None:
        pytest.fail("unittest-xml-reporting is not installed: pip install -e '.[dev]'")
    project, report = tmp_path / "project", tmp_path / "unittest.xml"
    write(project, UNITTEST_PROJECT)
    command = [
        sys.executable,
        "-m",
        "xmlrunner",
        "discover",
        "-s",
        "tests",
        "-t",
        ".",
        "--output-file",
        str(report),
    ]
    _, stdout, stderr = execute_for_output(command, project, report)
    assert outcomes_in(report, project) == {
        # unittest's stand-in for a module it could not import, named as pytest does.
        "tests/test_broken.py": E,
        "tests/test_ut.py::TestA::test_pass": P,
        "tests/test_ut.py::TestA::test_fail": F,
        "tests/test_ut.py::TestA::test_error": E,
        "tests/test_ut.py::TestA::test_skip": S,
        "tests/test_ut.py::TestA::test_xfail": S,
        "tests/test_ut.py::TestA::test_xpass": E,  # an unexpected success is an error
        "tests/test_ut.py::TestA::test_subtests": F,
        "tests/test_ut.py::TestA::test_subtests_pass": P,
        "tests/test_ut.py::TestSetupFails::setUpClass": E,  # its tests are missing
        "tests/pkg/test_more.py::TestMore::test_ok": P,
    }
    subtests = collect(iter_cases(report), tree=project)["tests/test_ut.py::TestA::test_subtests"]
    assert subtests.attempts == 1
    # The report's message is the traceback folded onto one line and cut; the output has it.
    assert load_failure("tests/test_broken.py", stdout, stderr) == LoadFailure(
        cause="SyntaxError: '(' was never closed", line=5
    )


NODE_PROJECT = {
    "test/math.test.js": """
        const { describe, it, test } = require('node:test');
        const assert = require('node:assert');

        test('top pass', () => {});
        test('top fail', () => { assert.strictEqual(1, 2); });
        test('top skip', { skip: 'later' }, () => {});
        test('top todo', { todo: true }, () => {});
        describe('outer suite', () => {
          it('adds 1.5 + 2', () => {});
          describe('inner::suite [x]', () => {
            it('works with spaces', () => {});
            it('fails', () => { throw new Error('nope'); });
          });
        });
        test('parent test', async (t) => {
          await t.test('subtest a', () => {});
          await t.test('subtest b', () => { throw new Error('sub'); });
        });
        for (const v of ['a b', 'x.y']) {
          test(`param ${v}`, () => { assert.notStrictEqual(v, 'x.y'); });
        }
        test('one name', () => {});
        test('one name', () => {});
    """,
    "test/nested.dir/other.test.js": """
        const { test } = require('node:test');
        test('other file', () => {});
    """,
    "test/bad.test.js": """
        throw new Error('cannot load');
    """,
    "test/syntax.test.js": """
        const { test } = require('node:test');
        test('never loaded', () => { (; });
    """,
}


def test_node(tmp_path: Path) -> None:
    require_node()
    project, report = tmp_path / "project", tmp_path / "node.xml"
    write(project, NODE_PROJECT)
    # As docs/test-ids.md has it: the spec reporter on stdout, the JUnit one into the file.
    command = [
        "node",
        "--test",
        "--test-reporter=spec",
        "--test-reporter-destination=stdout",
        "--test-reporter=junit",
        f"--test-reporter-destination={report}",
    ]
    _, stdout, stderr = execute_for_output(command, project, report)
    expected = {
        ("test/math.test.js", "top pass"): P,
        ("test/math.test.js", "top fail"): F,
        ("test/math.test.js", "top skip"): S,
        ("test/math.test.js", "top todo"): S,
        ("test/math.test.js", "outer suite::adds 1.5 + 2"): P,
        ("test/math.test.js", "outer suite::inner::suite [x]::works with spaces"): P,
        ("test/math.test.js", "outer suite::inner::suite [x]::fails"): F,
        ("test/math.test.js", "parent test::subtest a"): P,
        ("test/math.test.js", "parent test::subtest b"): F,
        ("test/math.test.js", "param a b"): P,
        ("test/math.test.js", "param x.y"): F,
        ("test/math.test.js", "one name"): P,
        ("test/nested.dir/other.test.js", "other file"): P,
    }
    # Node 20 writes no file attribute; later versions do, and then ids start with it.
    with_files = any(one.file for one in iter_cases(report))
    ids = {f"{file}::{tail}" if with_files else tail: o for (file, tail), o in expected.items()}
    files = {"test/bad.test.js": F, "test/syntax.test.js": F}
    assert outcomes_in(report, project) == {**ids, **files}
    # Two tests of one name that both passed: two attempts that passed, not flaky.
    one_name = "test/math.test.js::one name" if with_files else "one name"
    assert collect(iter_cases(report), tree=project)[one_name] == TestResult(
        outcome=P, flaky=False, message="", attempts=2
    )
    # The report says "test failed"; the cause is in what Node printed.
    assert load_failure("test/syntax.test.js", stdout, stderr) == LoadFailure(
        cause="SyntaxError: Unexpected token ';'", line=2
    )
    assert load_failure("test/bad.test.js", stdout, stderr) == LoadFailure(
        cause="Error: cannot load", line=1
    )


JEST_PROJECT = {
    "package.json": '{"private": true}',
    "src/math.test.js": """
        test('top pass', () => {});
        test('top fail', () => { expect(1).toBe(2); });
        test.skip('top skip', () => {});
        test.todo('top todo');
        describe('outer suite', () => {
          it('adds 1.5 + 2', () => {});
          describe('inner::suite [x]', () => {
            it('works with spaces', () => {});
            it('fails', () => { throw new Error('nope'); });
          });
          test.each(['a b', 'x.y', 'p::q'])('param %s', (v) => { expect(v).not.toBe('x.y'); });
        });
        describe('test', () => { it('in a describe named test', () => {}); });
    """,
    "src/nested.dir/other.test.js": """
        test('top pass', () => {});
    """,
    "src/bad.test.js": """
        throw new Error('cannot load');
    """,
}

# What docs/test-ids.md tells task authors to set, with {junit} filled in.
JEST_ENV = {
    "JEST_JUNIT_ADD_FILE_ATTRIBUTE": "true",
    "JEST_JUNIT_SUITE_NAME": "{filepath}",
    "JEST_JUNIT_CLASSNAME": "{classname}",
    "JEST_JUNIT_TITLE": "{title}",
    "JEST_JUNIT_ANCESTOR_SEPARATOR": "::",
    "JEST_JUNIT_REPORT_TEST_SUITE_ERRORS": "true",
}


def test_jest(tmp_path: Path) -> None:
    jest = node_bin("jest")
    project, report = tmp_path / "project", tmp_path / "jest.xml"
    write(project, JEST_PROJECT)
    command = [jest, "--ci", "--reporters=default", f"--reporters={MODULES / 'jest-junit'}"]
    execute(command, project, report, {**JEST_ENV, "JEST_JUNIT_OUTPUT_FILE": str(report)})
    assert outcomes_in(report, project) == {
        "src/math.test.js::top pass": P,
        "src/math.test.js::top fail": F,
        "src/math.test.js::top skip": S,
        "src/math.test.js::top todo": P,  # jest-junit writes a todo as a bare testcase
        "src/math.test.js::outer suite::adds 1.5 + 2": P,
        "src/math.test.js::outer suite::inner::suite [x]::works with spaces": P,
        "src/math.test.js::outer suite::inner::suite [x]::fails": F,
        "src/math.test.js::outer suite::param a b": P,
        "src/math.test.js::outer suite::param x.y": F,
        "src/math.test.js::outer suite::param p::q": P,
        "src/math.test.js::test::in a describe named test": P,
        "src/nested.dir/other.test.js::top pass": P,
        "src/bad.test.js": E,
    }


MOCHA_PROJECT = {
    "test/math.spec.js": """
        const assert = require('node:assert');

        it('root level test', () => {});
        describe('outer suite', () => {
          it('adds 1.5 + 2', () => {});
          it('fails', () => { assert.strictEqual(1, 2); });
          it.skip('skipped one', () => {});
          it('pending without a body');
          describe('inner::suite [x]', () => {
            it('works with spaces', () => {});
            for (const v of ['a b', 'x.y', 'p::q']) {
              it(`param ${v}`, () => { assert.notStrictEqual(v, 'x.y'); });
            }
          });
          describe('hooked', () => {
            before(() => { throw new Error('hook'); });
            it('never runs', () => {});
          });
        });
        describe('test', () => { it('in a describe named test', () => {}); });
        describe('retried', function () {
          this.retries(2);
          let runs = 0;
          it('passes the third time', () => { runs += 1; assert.ok(runs >= 3); });
        });
    """,
    "test/nested.dir/other.spec.js": """
        describe('other file', () => { it('passes', () => {}); });
    """,
}


def test_mocha(tmp_path: Path) -> None:
    mocha = node_bin("mocha")
    project, report = tmp_path / "project", tmp_path / "mocha.xml"
    write(project, MOCHA_PROJECT)
    options = f"mochaFile={report},jenkinsMode=true,suiteTitleSeparatedBy=::,includePending=true"
    command = [
        mocha,
        "--reporter",
        str(MODULES / "mocha-junit-reporter"),
        "--reporter-options",
        options,
        "test/**/*.spec.js",
    ]
    execute(command, project, report)
    # mocha-junit-reporter writes the file on each file's root suite; tests inherit it.
    assert outcomes_in(report, project) == {
        "root level test": P,  # mocha's root suite has no file
        "test/math.spec.js::outer suite::adds 1.5 + 2": P,
        "test/math.spec.js::outer suite::fails": F,
        "test/math.spec.js::outer suite::skipped one": S,
        "test/math.spec.js::outer suite::pending without a body": S,
        "test/math.spec.js::outer suite::inner::suite [x]::works with spaces": P,
        "test/math.spec.js::outer suite::inner::suite [x]::param a b": P,
        "test/math.spec.js::outer suite::inner::suite [x]::param x.y": F,
        "test/math.spec.js::outer suite::inner::suite [x]::param p::q": P,
        # A failing hook stands for the tests it kept from running, which are missing.
        'test/math.spec.js::outer suite::hooked::"before all" hook for "never runs"': F,
        "test/math.spec.js::test::in a describe named test": P,
        "test/math.spec.js::retried::passes the third time": P,  # the last retry only
        "test/nested.dir/other.spec.js::other file::passes": P,
    }


# Hand-written reports of runners this machine does not have ---------------------------


def test_go_junit_report() -> None:
    assert outcomes_in(DATA / "go-junit-report.xml", Path("/nonexistent")) == {
        "example.com/calc::TestAdd": P,
        "example.com/calc::TestDivide": F,
        "example.com/calc::TestDivide/by_zero": F,
        "example.com/calc::TestDivide/1.5_by_0.5": P,
        "example.com/calc::TestParse/unicode_[ü]": P,
        "example.com/calc::TestSlow": S,
        "example.com/calc/internal/broken::[build failed]": E,
        "example.com/calc/cmd/calc::Failure": E,
    }


def test_gotestsum_with_reruns() -> None:
    results = collect(iter_cases(DATA / "gotestsum.xml"), tree=Path("/nonexistent"))
    assert outcomes(results) == {
        "github.com/acme/calc::TestFlaky": P,
        "github.com/acme/calc::TestAlways": F,
        "github.com/acme/calc::TestWindowsOnly": S,
        "github.com/acme/calc::TestAdd": P,
        "github.com/acme/calc::TestTable/a_b": P,
        "github.com/acme/calc::TestTable": P,
        "github.com/acme/calc/internal/badmain::TestMain": F,
    }
    flaky = results["github.com/acme/calc::TestFlaky"]
    assert (flaky.attempts, flaky.flaky) == (2, True)
    always = results["github.com/acme/calc::TestAlways"]
    assert (always.attempts, always.flaky) == (3, False)


def test_surefire_with_reruns() -> None:
    results = collect(iter_cases(DATA / "surefire.xml"), tree=Path("/nonexistent"))
    calc = "com.example.calc.CalculatorTest"
    assert outcomes(results) == {
        f"{calc}::addsNumbers": P,
        f"{calc}::dividesByZero": F,
        f"{calc}::readsConfig": E,
        f"{calc}::roundsHalfEven": S,
        f"{calc}::fetchesRates": P,
        f"{calc}::parses(String)[1]": P,
        f"{calc}::parses(String)[2]": F,
        "com.example.calc.ParserTest$Unicode::keepsCombiningMarks": P,
    }
    assert [key for key, result in results.items() if result.flaky] == [f"{calc}::fetchesRates"]


def test_nextest_with_retries() -> None:
    results = collect(iter_cases(DATA / "nextest.xml"), tree=Path("/nonexistent"))
    assert outcomes(results) == {
        "calc::parse::tests::parses_ascii": P,
        "calc::parse::tests::parses_unicode": F,
        "calc::net::tests::fetches_rates": P,
        "calc::tests::adds": P,
        "calc::integration::end_to_end": P,
        "calc::integration::large_input": F,
        "calc::bin/calc::cli::tests::parses_args": P,
    }
    assert [key for key, result in results.items() if result.flaky] == [
        "calc::net::tests::fetches_rates"
    ]
