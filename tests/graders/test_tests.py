"""TestGrader on real repositories with real pytest runs writing real JUnit."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from repogym.graders import CompositeGrader, ConstraintGrader, TestGrader
from repogym.junit import Outcome
from repogym.junit.testids import TestResult
from repogym.models import GradeComponent, Role
from repogym.run.host import Runner
from repogym.task import parse_task
from repogym.workspace import Workspace
from tests.graders.projects import CALC, FIXED, HIDDEN, PYTEST, grade, task_text
from tests.support.repo import Repo
from tests.support.spec_example import NoTodoGrader

TESTS = """\
import pytest

from calc import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


@pytest.mark.parametrize("a, b", [(1, 1), (2, 0)], ids=["one one", "two.zero"])
def test_sub_param(a, b):
    assert sub(a, b) == a - b
"""


@pytest.fixture
def project(repo: Repo) -> Repo:
    repo.commit(
        "base",
        {
            ".repogym.yml": task_text(),
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
            ".gitignore": "__pycache__/\n",
        },
    )
    repo.branch("pr")
    return repo


def test_a_fix_passes(project: Repo) -> None:
    project.commit("fix", {"src/calc.py": FIXED})
    component = grade(project)
    assert component.details["fail_to_pass"] == {"tests/test_calc.py::test_add": "passed"}
    assert component.details["pass_to_pass"] == {
        "tests/test_calc.py::test_sub": "passed",
        "tests/test_calc.py::test_sub_param[one one]": "passed",
    }
    assert (component.score, component.passed, component.role) == (1.0, True, Role.OBJECTIVE)
    assert component.details["command"]["exit_code"] == 0


def test_the_empty_submission_scores_zero(project: Repo) -> None:
    component = grade(project)
    assert component.details["fail_to_pass"] == {"tests/test_calc.py::test_add": "failed"}
    assert (component.score, component.passed) == (0.0, False)
    assert "fail_to_pass failed: tests/test_calc.py::test_add: assert -1 == 5" in component.messages


def test_editing_the_test_does_not_help_and_is_put_back(project: Repo) -> None:
    tampered = TESTS.replace("== 5", "== -1")
    project.write({"tests/test_calc.py": tampered})
    component = grade(project)
    assert component.details["fail_to_pass"]["tests/test_calc.py::test_add"] == "failed"
    assert component.details["restored"] == ["tests/test_calc.py"]
    assert (project.root / "tests/test_calc.py").read_text() == tampered


CHEAT_CONFTEST = """\
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""


@pytest.mark.parametrize("where", ["conftest.py", "tests/conftest.py"])
def test_a_new_conftest_cannot_rewrite_outcomes(project: Repo, where: str) -> None:
    project.write({where: CHEAT_CONFTEST})
    component = grade(project)
    assert component.details["fail_to_pass"]["tests/test_calc.py::test_add"] == "failed"
    assert component.details["restored"] == [where]
    assert (project.root / where).read_text() == CHEAT_CONFTEST


def test_an_edited_conftest_is_restored(repo: Repo) -> None:
    repo.commit(
        "base",
        {
            ".repogym.yml": task_text(),
            "conftest.py": "import sys\nsys.path.insert(0, __file__.rsplit('/', 1)[0] + '/src')\n",
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
        },
    )
    repo.write({"conftest.py": (repo.root / "conftest.py").read_text() + CHEAT_CONFTEST})
    component = grade(repo)
    assert component.details["fail_to_pass"]["tests/test_calc.py::test_add"] == "failed"


def test_hidden_tests_are_injected_then_removed(repo: Repo) -> None:
    f2p = "[tests/test_calc.py::test_add, tests/test_hidden.py::test_secret]"
    repo.commit(
        "base",
        {
            ".repogym.yml": task_text(f2p=f2p, extra="  hidden: .repogym/hidden\n"),
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            "tests/test_calc.py": TESTS,
            ".repogym/hidden/tests/test_hidden.py": HIDDEN,
        },
    )
    unfixed = grade(repo)
    assert unfixed.details["hidden"] == ["tests/test_hidden.py::test_secret"]
    assert unfixed.details["fail_to_pass"]["tests/test_hidden.py::test_secret"] == "failed"
    assert "fail_to_pass: 1 hidden test not passing" in unfixed.messages
    assert not any("test_secret" in m for m in unfixed.messages)
    # Run again like every failing test (issue 47), and only counted.
    assert unfixed.details["reruns"] == {
        "tests": {"tests/test_calc.py::test_add": {"class": "failing", "runs": "head 0/3 passed"}},
        "hidden": {"failing": 1},
    }
    assert not (repo.root / "tests/test_hidden.py").exists()
    repo.write({"src/calc.py": FIXED})
    assert grade(repo).score == 1.0


def test_hidden_tests_from_the_caller(project: Repo, tmp_path: Path) -> None:
    (tmp_path / "hidden/tests").mkdir(parents=True)
    (tmp_path / "hidden/tests/test_hidden.py").write_text(HIDDEN)
    project.write({"src/calc.py": FIXED})
    component = grade(project, hidden=tmp_path / "hidden")
    assert component.details["reports_tests"] == 5  # 4 of the repository + 1 hidden
    as_text = grade(project, hidden=str(tmp_path / "hidden"))  # a str path works alike
    assert as_text.details["reports_tests"] == 5


def test_a_timeout_scores_zero(project: Repo) -> None:
    project.commit("fix", {"src/calc.py": FIXED})
    workspace = Workspace.open(project.root, base="main")
    config = workspace.task.tests
    assert config is not None
    slow = parse_task(
        task_text(command="sleep 30 && " + PYTEST, extra="").replace(
            "  pass_to_pass", "  timeout: 1\n  pass_to_pass"
        )
    )
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=slow))
    assert component.score == 0.0
    assert component.messages[0] == "score 0: the test command timed out after 1 s"


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("true {junit}", "does not exist"),
        ("touch {junit}", "empty"),
        ("echo '<testsuite><testcase' > {junit}", "not well-formed"),
    ],
)
def test_no_usable_report_scores_zero(project: Repo, command: str, problem: str) -> None:
    project.write({"src/calc.py": FIXED})
    task = parse_task(task_text(command=command))
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=task))
    assert component.score == 0.0 and not component.passed
    assert component.messages[0].startswith("score 0: ")
    assert problem in component.messages[0].lower()


def test_exit_code_contradicting_the_report_is_a_warning(project: Repo) -> None:
    project.write({"src/calc.py": FIXED})
    task = parse_task(task_text(command=PYTEST + "; exit 3"))
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=task))
    assert component.score == 1.0
    assert (
        "warning: the test command exited with code 3 although every test in the report passed"
        in component.messages
    )


def test_the_grader_environment_does_not_leak(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("ALLOWED_ONE", "yes")
    leak_test = (
        "import os\n\ndef test_add():\n"
        "    assert 'GITHUB_TOKEN' not in os.environ\n"
        "    assert os.environ['ALLOWED_ONE'] == 'yes' and os.environ['FIXED'] == 'v'\n"
    )
    project.commit("base2", {"tests/test_env.py": leak_test})
    project.git("branch", "-f", "main", "HEAD")
    task = parse_task(
        task_text(f2p="[tests/test_env.py::test_add]", p2p="[]")
        + "env: {FIXED: v}\npass_env: [ALLOWED_ONE]\n"
    )
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=task))
    assert component.details["fail_to_pass"] == {"tests/test_env.py::test_add": "passed"}


# -- the scoring table, to the letter (spec: "TestGrader") -------------------------------


@functools.cache
def _empty_repo() -> Path:
    """A git work tree with no file, for scoring tables (nothing there is read)."""
    root = Path(tempfile.mkdtemp(prefix="repogym-table-"))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def table(f2p: dict[str, Outcome], p2p: dict[str, Outcome], **options: bool) -> GradeComponent:
    from repogym.graders.tests.grader import _component
    from repogym.graders.tests.outcome import TestsOutcome
    from repogym.graders.tests.runfiles import RunFiles

    kind = "bugfix" if f2p else "refactor"  # a refactor's objective is the quality limit
    lines = ["version: 1", f"type: {kind}", "tests:", "  command: x {junit}"]
    lines.append(f"  fail_to_pass: {list(f2p)}")
    lines.append(f"  pass_to_pass: {list(p2p)}")
    lines += [f"  {key}: {str(value).lower()}" for key, value in options.items()]
    lines += [] if f2p else ["constraints: {max_function_length: 9}"]
    task = parse_task("\n".join(lines) + "\n")
    workspace = Workspace(_empty_repo(), "0" * 40, task, base_ref="main")
    results = {
        i: TestResult(outcome=o, flaky=False, message="", attempts=1)
        for i, o in {**f2p, **p2p}.items()
        if o is not Outcome.MISSING
    }
    assert task.tests is not None
    files = RunFiles(restored=[], linked=[])
    outcome = TestsOutcome.of(
        workspace, task.tests, run=None, results=results, problem=None, hidden=set(), files=files
    )
    return _component(outcome, workspace)


P, F, E, S, M = (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED, Outcome.MISSING)


def test_k_of_n_with_partial_credit() -> None:
    c = table({"a.py::1": P, "a.py::2": F, "a.py::3": P, "a.py::4": S}, {})
    assert (c.score, c.passed) == (0.5, False)


def test_no_partial_credit_and_any_failing() -> None:
    assert table({"a.py::1": P, "a.py::2": E}, {}, partial_credit=False).score == 0.0
    assert table({"a.py::1": P, "a.py::2": P}, {}, partial_credit=False).score == 1.0


def test_fail_to_pass_needs_a_real_pass() -> None:
    for outcome in (S, E, M, F):
        assert table({"a.py::1": outcome}, {}).score == 0.0


def test_broken_pass_to_pass_scales_the_score() -> None:
    c = table({"a.py::1": P}, {"b.py::1": P, "b.py::2": F, "b.py::3": M, "b.py::4": S})
    assert c.score == pytest.approx(0.25)  # 3 of 4 broken: a skip is not kept (issue 9)
    assert c.passed is False


def test_broken_pass_to_pass_with_require_all() -> None:
    c = table({"a.py::1": P}, {"b.py::1": P, "b.py::2": E}, require_all_pass_to_pass=True)
    assert (c.score, c.passed) == (0.0, False)


def test_regression_only_is_a_gate() -> None:
    lines = "version: 1\ntype: refactor\ntests:\n  command: x {junit}\n  pass_to_pass: [b.py::1]\n"
    task = parse_task(lines + "constraints: {max_function_length: 9}\n")
    assert task.tests_role is Role.GATE
    assert table({}, {"b.py::1": P, "b.py::2": P}).score == 1.0
    assert table({}, {"b.py::1": P, "b.py::2": F}).score == 0.5
    assert table({}, {"b.py::1": P, "b.py::2": S}).score == 0.5  # skipped is broken (issue 9)


# -- the spec's example, verbatim ("Writing a grader") ------------------------------------


def test_the_spec_example_on_a_real_repository(project: Repo) -> None:
    project.commit("fix", {"src/calc.py": FIXED + "# TODO: tidy\n"})
    workspace = Workspace.open(project.root, base="main")
    grader = CompositeGrader(
        [ConstraintGrader(), TestGrader(), NoTodoGrader()],
        weights={"tests": 0.8, "no_todo": 0.2},
    )  # set role="gate" to block instead
    result = grader.grade_result(workspace)
    assert result.component("tests").details["fail_to_pass"] == {
        "tests/test_calc.py::test_add": "passed"
    }
    assert result.summary() == ("FAIL 0.800 (constraints=1.00✓(gate), tests=1.00✓, no_todo=0.00✗)")
    assert result.files_changed == ("src/calc.py",)


def test_runner_is_used_for_commands(project: Repo) -> None:
    project.write({"src/calc.py": FIXED})
    runner = Runner(set_env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert grade(project, runner=runner).score == 1.0
    assert not os.environ.get("REPOGYM_RUN")


def test_a_mistyped_id_gets_the_closest_one(project: Repo) -> None:
    project.write({"src/calc.py": FIXED})
    task = parse_task(task_text(p2p="[tests/test_calc.py::test_sbu]"))
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=task))
    assert component.details["pass_to_pass"]["tests/test_calc.py::test_sbu"] == "missing"
    assert (
        "tests/test_calc.py::test_sbu is not in the report; the closest id there is "
        "tests/test_calc.py::test_sub" in component.messages
    )


def test_a_collection_error_is_named_when_ids_are_missing(project: Repo) -> None:
    # pytest stops the session on a collection error: every id goes missing. Its report
    # says "collection failure"; the cause is what pytest printed.
    project.write({"src/calc.py": FIXED, "tests/test_broken.py": "\nimport nowhere_xyz\n"})
    component = grade(project)
    assert set(component.details["fail_to_pass"].values()) == {"missing"}
    assert (
        "the report also has tests/test_broken.py: error, the file could not be loaded: "
        "ModuleNotFoundError: No module named 'nowhere_xyz' (line 2)"
    ) in component.messages


TAB_TESTS = """\
import pytest


@pytest.mark.parametrize("v", ["\\t", "\\r", "t"])
def test_p(v):
    pass


def test_alpha():
    pass


def test_beta():
    pass


def test_gamma():
    pass


def test_delta():
    pass
"""


def test_every_missing_id_gets_its_closest_one_and_escapes_are_ranked_first(
    project: Repo,
) -> None:
    project.commit("base2", {"tests/test_tab.py": TAB_TESTS})
    project.git("branch", "-f", "main", "HEAD")
    project.write({"src/calc.py": FIXED})
    # YAML's double quotes make a TAB of `\t`; pytest's id has a backslash and a `t`.
    f2p = '["tests/test_tab.py::test_p[\\t]"]'
    p2p = "[" + ", ".join(f"tests/test_tab.py::test_{n}" for n in ("alpa", "bta", "gama", "delt"))
    task = parse_task(task_text(f2p=f2p, p2p=p2p + "]"))
    component = TestGrader().grade(Workspace.open(project.root, base="main", task=task))
    assert component.details["fail_to_pass"] == {"tests/test_tab.py::test_p[\t]": "missing"}
    # Raw, the TAB is closer to `test_p[t]`; written as messages show it, it is the id.
    assert (
        "tests/test_tab.py::test_p[\\t] is not in the report, which has the same id with a "
        "backslash escape where the task's id has a control character: YAML turns `\\t` "
        "into a TAB inside double quotes; write the id in single quotes"
    ) in component.messages
    assert "fail_to_pass missing: tests/test_tab.py::test_p[\\t]" in component.messages
    for typo, real in (("alpa", "alpha"), ("bta", "beta"), ("gama", "gamma"), ("delt", "delta")):
        assert (
            f"tests/test_tab.py::test_{typo} is not in the report; the closest id there is "
            f"tests/test_tab.py::test_{real}"
        ) in component.messages


NODE = (
    "node --test --test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={junit}"
)
NODE_TESTS = {
    "test/calc.test.js": (
        "const { test } = require('node:test');\n"
        "test('adds numbers', () => {});\n"
        "test('/ matches root', () => {});\n"
    ),
    "test/broken.test.js": (
        "const { test } = require('node:test');\n\ntest('never', () => { (; });\n"
    ),
}


def test_bare_names_get_hints_and_a_file_that_did_not_load_its_cause(repo: Repo) -> None:
    if shutil.which("node") is None:
        pytest.fail("node is not installed: this test needs Node.js 20")
    repo.commit("base", NODE_TESTS)
    # Node 20 writes no file: its ids are bare names, which once could not even be ids.
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    prefix = "" if version.stdout.startswith("v20.") else "test/calc.test.js::"
    task = parse_task(
        f"version: 1\ntype: bugfix\ntests:\n  command: {NODE}\n"
        f"  fail_to_pass: ['{prefix}ads numbers']\n  pass_to_pass: ['{prefix}/ matches root']\n"
    )
    component = TestGrader().grade(Workspace.open(repo.root, base="main", task=task))
    assert component.details["pass_to_pass"] == {f"{prefix}/ matches root": "passed"}
    assert (
        f"{prefix}ads numbers is not in the report; the closest id there is {prefix}adds numbers"
    ) in component.messages
    # The report's message is "test failed"; Node printed the SyntaxError.
    assert (
        "the report also has test/broken.test.js: failed, the file could not be loaded: "
        "SyntaxError: Unexpected token ';' (line 3)"
    ) in component.messages


def test_hints_never_name_hidden_tests(repo: Repo) -> None:
    f2p = "[tests/test_hidden.py::test_secrte]"
    repo.commit(
        "base",
        {
            ".repogym.yml": task_text(f2p=f2p, p2p="[]", extra="  hidden: .repogym/hidden\n"),
            "pytest.ini": "[pytest]\npythonpath = src\n",
            "src/calc.py": CALC,
            ".repogym/hidden/tests/test_hidden.py": HIDDEN,
        },
    )
    component = grade(repo)
    assert not any("secret" in m or "secrte" in m for m in component.messages)


SCRIPT_TEST = """\
#!/bin/sh
# A test file run as a program: its executable bit is part of it. It also checks that
# tests/link.sh is the symlink of the base.
case_() { printf '<testcase file="%s" name="fixed">%s</testcase>' "$1" "$2"; }
failure='<failure message="no"/>'
if grep -q 'a + b' src/calc.py; then code=''; else code=$failure; fi
if [ -L tests/link.sh ]; then link=''; else link=$failure; fi
echo "<testsuite>$(case_ t.sh "$code")$(case_ tests/link.sh "$link")</testsuite>" > "$1"
"""


def test_a_restored_test_file_keeps_its_mode(repo: Repo) -> None:
    repo.write({"t.sh": SCRIPT_TEST})
    (repo.root / "t.sh").chmod(0o755)
    (repo.root / "tests").mkdir()
    (repo.root / "tests/link.sh").symlink_to("../t.sh")
    task = "version: 1\ntype: bugfix\ntests:\n  command: ./t.sh {junit}\n"
    task += "  fail_to_pass: [t.sh::fixed, tests/link.sh::fixed]\n"
    repo.commit("base", {".repogym.yml": task, "src/calc.py": CALC})
    # The submission fixes the code, edits the test file, drops its executable bit and
    # turns the symlink into a file of its own.
    repo.write({"src/calc.py": FIXED, "t.sh": SCRIPT_TEST + "# mine\n"})
    (repo.root / "t.sh").chmod(0o644)
    (repo.root / "tests/link.sh").unlink()
    repo.write({"tests/link.sh": "#!/bin/sh\nexit 1\n"})
    component = grade(repo)
    assert component.details["restored"] == ["t.sh", "tests/link.sh"]
    assert component.score == 1.0, component.messages
    # Afterwards the submission's own versions are back, modes included.
    assert (repo.root / "t.sh").read_text().endswith("# mine\n")
    assert (repo.root / "t.sh").stat().st_mode & 0o777 == 0o644
    assert not (repo.root / "tests/link.sh").is_symlink()


DEPENDENCY_TEST = """\
from pathlib import Path


def test_add():
    # The ignored dependency directory is there in the run's copy, as a link to the
    # work tree's (not a copy); an ignored directory of another name is not there.
    assert Path("node_modules/dep/index.js").read_text() == "module.exports = 1\\n"
    assert Path("node_modules").is_symlink()
    assert not Path("build").exists()


def test_sub():
    pass
"""


def test_ignored_dependency_directories_are_linked_into_the_copy(repo: Repo) -> None:
    repo.commit(
        "base",
        {
            ".repogym.yml": task_text(p2p="[tests/test_calc.py::test_sub]"),
            ".gitignore": "node_modules/\nbuild/\n__pycache__/\n",
            "tests/test_calc.py": DEPENDENCY_TEST,
        },
    )
    repo.branch("pr")
    repo.write({"node_modules/dep/index.js": "module.exports = 1\n", "build/out.txt": "x\n"})
    component = grade(repo)
    assert component.details["fail_to_pass"] == {"tests/test_calc.py::test_add": "passed"}
    assert component.score == 1.0, component.messages


def test_the_runner_configuration_in_the_copy_is_the_bases(project: Repo) -> None:
    # A plugin by a new conftest deep in the tree, a pytest.ini of the submission's, a
    # stdlib shadow on the test path, a test module far from the tests: none is run.
    flip = "def pytest_runtest_logreport(report):\n    report.outcome = 'passed'\n"
    project.commit(
        "attack",
        {
            "src/deep/conftest.py": flip,
            "pytest.ini": "[pytest]\npythonpath = src\naddopts = -p no:junitxml\n",
            "src/cmd.py": "raise SystemExit('shadow imported')\n",
            "src/test_far.py": "import sys\nsys.exit(3)\n",
        },
    )
    component = grade(project)
    assert component.details["fail_to_pass"] == {"tests/test_calc.py::test_add": "failed"}
    assert set(component.details["restored"]) >= {
        "pytest.ini",
        "src/cmd.py",
        "src/deep/conftest.py",
        "src/test_far.py",
    }
