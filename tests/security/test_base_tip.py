"""The rubric is the base tip's, whatever the fork point (issue 19).

The task is read at the base branch's tip; the test files, the runner's configuration,
the hidden tests and the custom graders must come from there too, not from the merge base,
which the author picks by choosing where to branch from. Each case commits an older,
lenient rubric on ``main``, branches ``attack`` from it, then moves ``main`` on to the
strict rubric the task is graded with: a change that only the old rubric passes must fail.

The diff (and so the constraints) stays against the merge base: a pull request from an
old fork point does not "delete" what the base added since. Graded against
examples/bugfix as it ships.
"""

from __future__ import annotations

import textwrap
from typing import Any

from tests.security import _payloads as p
from tests.security._base_tip import LENIENT_TEST, SHIPPED_TEST, SLOPPY_CORE, UP_TO_DATE
from tests.security._harness import BUGFIX_TASK, EXAMPLES, Case, Graded, check_all

BUGGY_CORE = (EXAMPLES / "bugfix" / "repo" / "src" / "slugify" / "core.py").read_text()


def move_main(case: Case, files: dict[str, str | bytes], *, delete: tuple[str, ...] = ()) -> str:
    """A commit on ``main`` after ``attack`` branched from it; ``attack`` checked out again."""
    case.repo.git("checkout", "--quiet", "main")
    case.repo.write(files)
    case.repo.delete(*delete)
    sha = case.repo.commit("the base moves on")
    case.repo.git("checkout", "--quiet", "attack")
    return sha


def component_of(graded: Graded) -> dict[str, Any]:
    assert graded.report is not None, graded.output
    components: list[dict[str, Any]] = graded.report["components"]  # type: ignore[assignment]
    [tests] = [c for c in components if c["name"] == "tests"]
    return tests


def test_a_test_made_strict_on_the_base_after_the_fork_point(case: Case) -> None:
    case.base(files={"tests/test_slugify.py": LENIENT_TEST})
    case.submit({"src/slugify/core.py": SLOPPY_CORE})
    tip = move_main(case, {"tests/test_slugify.py": SHIPPED_TEST})
    old_fork = case.grade()
    # The same change branched from the tip: the strict test, as it always was.
    case.repo.git("checkout", "--quiet", "-b", "from-tip", tip)
    case.submit({"src/slugify/core.py": SLOPPY_CORE})
    from_tip = case.grade()
    check_all((old_fork, UP_TO_DATE), (from_tip, "fail_to_pass: 1 of 2 passed"))
    tests = component_of(old_fork)
    assert tests["details"]["tests_from"] == tip
    assert tests["details"]["changed_on_base"] == ["tests/test_slugify.py"]
    assert [f["level"] for f in tests["findings"] if f["title"] == "out of date"] == ["warning"]
    assert "tests/test_slugify.py" in old_fork.markdown_text


def test_the_test_the_base_made_strict_also_changed_by_the_pull_request(case: Case) -> None:
    # The pull request loosens the lenient test further; the base made it strict. What
    # runs is the tip's, and the constraints, judging the diff against the merge base,
    # see the pull request's own change of a protected file (and only that).
    case.base(files={"tests/test_slugify.py": LENIENT_TEST})
    looser = LENIENT_TEST.replace('assert slugify("Déjà vu") != "dj-vu"', "assert True")
    case.submit({"src/slugify/core.py": SLOPPY_CORE, "tests/test_slugify.py": looser})
    move_main(case, {"tests/test_slugify.py": SHIPPED_TEST})
    graded = case.grade()
    graded.check("tests/test_slugify.py is protected")
    assert "fail_to_pass: 1 of 2 passed" in graded.output
    [protected] = [
        c
        for c in graded.report["components"][0]["details"]["checks"]  # type: ignore[index]
        if c["rule"] == "protected"
    ]
    assert [v["path"] for v in protected["violations"]] == ["tests/test_slugify.py"]


def test_runner_configuration_tightened_on_the_base_after_the_fork_point(case: Case) -> None:
    warns = p.FIXED_CORE.replace(
        "import re\n",
        "import re\nimport warnings\n\nwarnings.warn('slugify: lossy', DeprecationWarning)\n",
    )
    case.base()
    case.submit({"src/slugify/core.py": warns})
    move_main(case, {"pytest.ini": "[pytest]\npythonpath = src\nfilterwarnings = error\n"})
    case.grade().check(UP_TO_DATE)


HIDDEN_TASK = BUGFIX_TASK.replace(
    "  pass_to_pass:",
    "    - tests/test_more.py::test_more_accents\n  hidden: .repogym/hidden\n  pass_to_pass:",
)
HIDDEN_TEST = "from slugify import slugify\n\n\ndef test_more_accents():\n    assert {}\n"


def test_a_hidden_test_made_strict_on_the_base_after_the_fork_point(case: Case) -> None:
    hidden = ".repogym/hidden/tests/test_more.py"
    # The sloppy fix gives "a-va" for "Ça va": the old hidden test took it.
    lenient = HIDDEN_TEST.format('slugify("Ça va").endswith("a-va")')
    case.base(task=HIDDEN_TASK, files={"tests/test_slugify.py": LENIENT_TEST, hidden: lenient})
    case.submit({"src/slugify/core.py": SLOPPY_CORE})
    move_main(case, {hidden: HIDDEN_TEST.format('slugify("Ça va") == "ca-va"')})
    graded = case.grade()
    graded.check("fail_to_pass: 1 hidden test not passing")
    assert UP_TO_DATE in graded.output
    assert "test_more" not in graded.output  # the hidden file is not named


GRADER_TASK = BUGFIX_TASK + "grading:\n  graders: ['tools.graders:NoPrint']\n"
NO_PRINT = textwrap.dedent(
    """
    from repogym.graders import Grader
    from repogym.models import GradeComponent, Role

    ENFORCED = ENFORCING


    class NoPrint(Grader):
        name = "no_print"
        role = Role.GATE

        def grade(self, workspace):
            bad = [f for f in workspace.changed_files() if "print(" in workspace.read(f)]
            bad = bad if ENFORCED else []
            return GradeComponent(
                name=self.name, score=float(not bad), passed=not bad, role=Role.GATE,
                messages=[f"print( in {f}" for f in bad] or ["no print("],
            )
    """
)


def test_a_custom_grader_enforced_on_the_base_after_the_fork_point(case: Case) -> None:
    case.base(task=GRADER_TASK, files={"tools/graders.py": NO_PRINT.replace("ENFORCING", "False")})
    debug = p.FIXED_CORE.replace('    """Lower', '    print(title)\n    """Lower')
    case.submit({"src/slugify/core.py": debug})
    move_main(case, {"tools/graders.py": NO_PRINT.replace("ENFORCING", "True")})
    case.grade().check("print( in src/slugify/core.py")


# -- what an honest pull request from an old fork point gets --------------------------


def test_a_test_file_the_base_added_after_the_fork_point_runs(case: Case) -> None:
    # The task names a test file that the merge base does not have: it is the tip's,
    # restored into the run, and not a deletion the constraints would hold against the PR.
    task = BUGFIX_TASK.replace(
        "  pass_to_pass:", "    - tests/test_more.py::test_more_accents\n  pass_to_pass:"
    )
    case.base()
    case.submit({"src/slugify/core.py": p.FIXED_CORE})
    move_main(
        case,
        {
            ".repogym.yml": task,
            "tests/test_more.py": HIDDEN_TEST.format('slugify("Ça va") == "ca-va"'),
        },
    )
    graded = case.grade()
    assert graded.returncode == 0, graded.output
    assert graded.problems(verdict=False) == []


def test_a_runner_file_the_base_deleted_after_the_fork_point_is_not_restored(
    case: Case,
) -> None:
    # The base once deselected a regression test; the tip runs it again. A PR from before
    # still has the old conftest.py: what runs is the tip's (no conftest.py at all).
    deselect = (
        "def pytest_collection_modifyitems(config, items):\n"
        "    items[:] = [i for i in items if i.name != 'test_ascii']\n"
    )
    case.base(files={"tests/conftest.py": deselect})
    case.submit({"src/slugify/core.py": p.FIXED_CORE})
    move_main(case, {}, delete=("tests/conftest.py",))
    graded = case.grade()
    assert graded.returncode == 0, graded.output
    tests = component_of(graded)
    assert tests["details"]["restored"] == ["tests/conftest.py"]
    assert tests["details"]["pass_to_pass"]["tests/test_slugify.py::test_ascii"] == "passed"


def test_a_test_that_needs_the_bases_newer_code_says_bring_it_up_to_date(case: Case) -> None:
    # The honest case the rule costs: the base added a feature and its test after the fork
    # point. The pull request fails until it is brought up to date, and is told so.
    case.base()
    case.submit({"src/slugify/core.py": p.FIXED_CORE})

    def with_sep(core: str) -> str:
        return core.replace("(title: str)", '(title: str, sep: str = "-")').replace(
            '"-".join', "sep.join"
        )

    test = SHIPPED_TEST + '\n\ndef test_sep():\n    assert slugify("a b", sep="_") == "a_b"\n'
    task = BUGFIX_TASK.replace(
        "  pass_to_pass:\n", "  pass_to_pass:\n    - tests/test_slugify.py::test_sep\n"
    )
    move_main(
        case,
        {
            ".repogym.yml": task,
            "src/slugify/core.py": with_sep(BUGGY_CORE),
            "tests/test_slugify.py": test,
        },
    )
    stale = case.grade()
    stale.check(UP_TO_DATE)
    assert "tests/test_slugify.py" in stale.output
    # Brought up to date (main merged in): it passes.
    case.repo.git("merge", "--quiet", "-X", "theirs", "--no-edit", "main")
    case.submit({"src/slugify/core.py": with_sep(p.FIXED_CORE)})
    fresh = case.grade()
    assert fresh.returncode == 0, fresh.output
