"""QualityGrader: per-function length and complexity limits, on real git repositories."""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import pytest

from repogym.graders import CompositeGrader, QualityGrader
from repogym.models import MAX_FINDINGS, Finding, GradeComponent, Role
from repogym.workspace import Workspace
from tests.support.repo import Repo

# Lengths count from the `def` line to the last line of the body; complexity is 1 plus
# one per `if` here, so every expected value below is unambiguous.
SHORT = """\
def short():
    return 1
"""

LONG = """\
def long_one():
    a = 1
    b = 2
    c = 3
    return a + b + c
"""

BRANCHY = """\
def branchy(x):
    if x > 1: return 2
    if x: return 1
    return 0
"""

TESTS = """\
tests:
  command: pytest --junitxml={junit}
  fail_to_pass: [tests/test_a.py::test_a]
"""


def task(
    *,
    type_: str = "refactor",
    length: int | None = 4,
    complexity: int | None = 2,
    paths: str | None = "[src/**/*.py]",
    extra: str = "",
) -> str:
    lines = ["version: 1", f"type: {type_}", "constraints:"]
    if paths is not None:
        lines.append(f"  paths: {paths}")
    if length is not None:
        lines.append(f"  max_function_length: {length}")
    if complexity is not None:
        lines.append(f"  max_cyclomatic_complexity: {complexity}")
    return "\n".join(lines) + "\n" + textwrap.dedent(extra)


def based(repo: Repo, task_text: str, files: dict[str, str | bytes] | None = None) -> str:
    return repo.commit("base", {".repogym.yml": task_text, **(files or {})})


def grade(repo: Repo) -> GradeComponent:
    return QualityGrader().grade(Workspace.open(repo.root, base="main"))


def summary(repo: Repo) -> str:
    ws = Workspace.open(repo.root, base="main")
    return CompositeGrader.for_workspace(ws).grade_result(ws).summary()


def violation(
    path: str, line: int, function: str, metric: str, value: int, limit: int
) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "function": function,
        "metric": metric,
        "value": value,
        "limit": limit,
    }


def test_fixtures_are_what_the_limits_assume() -> None:
    from repogym.metrics import measure_source

    source = SHORT + "\n\n" + LONG + "\n\n" + BRANCHY
    measured = [
        (f.qualname, f.line, f.length, f.complexity) for f in measure_source(source, "m.py")
    ]
    assert measured == [("short", 1, 2, 1), ("long_one", 5, 5, 1), ("branchy", 12, 4, 3)]


def test_one_file_is_worded_in_the_singular(repo: Repo) -> None:
    # Issue 19: "1 Python files within every limit".
    based(repo, task(), {"src/pkg/a.py": SHORT})
    assert grade(repo).messages == ("1 Python file within every limit",)


# -- one grader, one workspace ----------------------------------------------------------------


def test_everything_within_limits(repo: Repo) -> None:
    based(repo, task(), {"src/pkg/a.py": SHORT, "src/b.py": SHORT, "README.md": "r\n"})
    component = grade(repo)
    assert component.name == "quality"
    assert component.role is Role.OBJECTIVE
    assert component.score == 1.0
    assert component.passed is True
    assert component.details == {
        "limits": {"length": 4, "complexity": 2},
        "files": 2,
        "violations": [],
    }
    assert component.messages == ("2 Python files within every limit",)


def test_one_limit_violated_scores_one_half(repo: Repo) -> None:
    based(repo, task(), {"src/pkg/a.py": SHORT})
    repo.write({"src/pkg/a.py": SHORT + "\n\n" + LONG + "\n\n" + LONG.replace("long_one", "two")})
    component = grade(repo)
    assert component.details["violations"] == [
        violation("src/pkg/a.py", 5, "long_one", "length", 5, 4),
        violation("src/pkg/a.py", 12, "two", "length", 5, 4),
    ]
    assert component.score == 0.5
    assert component.passed is False
    assert component.messages == (
        "src/pkg/a.py:5: long_one has length 5 (limit 4)",
        "src/pkg/a.py:12: two has length 5 (limit 4)",
    )


def test_both_limits_violated_score_zero_and_violations_are_sorted(repo: Repo) -> None:
    based(repo, task(length=3), {"src/z.py": "", "src/a.py": ""})
    repo.write({"src/z.py": LONG, "src/a.py": BRANCHY})
    component = grade(repo)
    assert component.details["violations"] == [
        violation("src/a.py", 1, "branchy", "complexity", 3, 2),
        violation("src/a.py", 1, "branchy", "length", 4, 3),
        violation("src/z.py", 1, "long_one", "length", 5, 3),
    ]
    assert component.score == 0.0
    assert component.passed is False


def test_only_the_declared_limit_is_a_rule(repo: Repo) -> None:
    based(repo, task(length=None), {"src/a.py": LONG})
    component = grade(repo)
    assert component.details["limits"] == {"complexity": 2}
    assert component.score == 1.0
    repo.write({"src/a.py": BRANCHY})
    component = grade(repo)
    assert component.details["violations"] == [
        violation("src/a.py", 1, "branchy", "complexity", 3, 2)
    ]
    assert component.score == 0.0


def test_a_function_exactly_at_the_limit_passes(repo: Repo) -> None:
    based(repo, task(length=5, complexity=3), {"src/a.py": LONG + "\n\n" + BRANCHY})
    assert grade(repo).passed is True


def test_methods_are_measured_with_their_qualname(repo: Repo) -> None:
    source = "class Parser:\n" + textwrap.indent(LONG, "    ")
    based(repo, task(), {"src/a.py": source})
    assert grade(repo).details["violations"] == [
        violation("src/a.py", 2, "Parser.long_one", "length", 5, 4)
    ]


def test_only_python_files_under_paths_are_measured(repo: Repo) -> None:
    based(
        repo,
        task(paths="[src/**/*.py, '!src/vendor/**']"),
        {
            "scripts/tool.py": LONG,
            "src/vendor/big.py": LONG,
            "src/long.txt": LONG,
            "src/ok.py": SHORT,
        },
    )
    component = grade(repo)
    assert component.details["files"] == 1
    assert component.passed is True


def test_without_paths_every_python_file_of_the_submission(repo: Repo) -> None:
    based(
        repo,
        task(paths=None),
        {".gitignore": "build/\n", "deleted.py": LONG, "kept.py": SHORT},
    )
    repo.delete("deleted.py")
    repo.write({"build/gen.py": LONG, "new/untracked.py": LONG, "notes.md": LONG})
    component = grade(repo)
    assert component.details["files"] == 2  # kept.py and new/untracked.py
    assert component.details["violations"] == [
        violation("new/untracked.py", 1, "long_one", "length", 5, 4)
    ]


def test_the_submission_is_measured_not_the_baseline(repo: Repo) -> None:
    based(repo, task(), {"src/a.py": LONG + "\n\n" + BRANCHY})
    assert grade(repo).score == 0.0  # the empty submission of this refactor
    repo.branch("pr")
    repo.commit(
        "refactor",
        {"src/a.py": "def long_one():\n    return 6\n\n\ndef branchy(x):\n    return x\n"},
    )
    component = grade(repo)
    assert component.score == 1.0
    assert component.passed is True


def test_a_file_that_does_not_parse_violates_every_limit(repo: Repo) -> None:
    based(repo, task(), {"src/a.py": SHORT, "src/b.py": SHORT})
    repo.write({"src/a.py": "x = 1\n\ndef broken(:\n    pass\n"})
    component = grade(repo)
    (found,) = component.details["violations"]
    assert found["path"] == "src/a.py"
    assert found["line"] == 3
    assert found["function"] is None
    assert found["metric"] == "syntax"
    assert found["message"].startswith("does not parse: ")
    assert component.score == 0.0
    assert component.passed is False
    assert component.messages == (f"src/a.py:3: {found['message']}",)


@pytest.mark.parametrize(
    "content",
    [
        b"x = 1\0\n",
        b"caf\xe9 = 1\n",
        b"# -*- coding: no-such-codec -*-\nx = 1\n",
        b"x = " + b"(" * 300 + b")" * 300 + b"\n",
        # Parses as text, but CPython gives up building the AST: RecursionError.
        b"x = 1" + b" + 1" * 20_000 + b"\n",
    ],
    ids=["nul-byte", "not-utf8", "unknown-coding", "too-nested", "too-deep-for-the-ast"],
)
def test_unparsable_bytes_are_a_violation_not_a_crash(repo: Repo, content: bytes) -> None:
    based(repo, task(), {"src/a.py": SHORT})
    repo.write({"src/a.py": content})
    component = grade(repo)
    assert [v["metric"] for v in component.details["violations"]] == ["syntax"]
    assert component.details["violations"][0]["path"] == "src/a.py"
    assert component.score == 0.0
    assert component.passed is False


def test_a_dangling_python_symlink_does_not_stop_the_measuring(repo: Repo) -> None:
    # e.g. a link to a generated module that is not built in this checkout.
    based(repo, task(), {"src/a.py": LONG})
    (repo.root / "src" / "generated.py").symlink_to("../build/generated.py")
    component = grade(repo)
    assert [v for v in component.details["violations"] if v["path"] == "src/a.py"] == [
        violation("src/a.py", 1, "long_one", "length", 5, 4)
    ]


def test_violations_listed_at_most_one_hundred(repo: Repo) -> None:
    source = "\n\n".join(LONG.replace("long_one", f"f{i}") for i in range(103))
    based(repo, task(complexity=None), {"src/a.py": source})
    component = grade(repo)
    assert len(component.details["violations"]) == 100
    assert component.details["violations_not_listed"] == 3
    assert len(component.messages) == 100
    assert component.details["violations"][-1]["function"] == "f99"


# -- findings -----------------------------------------------------------------------------


def test_each_violation_is_a_finding_at_the_def_line(repo: Repo) -> None:
    based(repo, task(length=3), {"src/a.py": "", "src/z.py": "", "src/ok.py": SHORT})
    decorated = "import functools\n\n\n@functools.cache\n" + LONG
    repo.write({"src/a.py": BRANCHY, "src/z.py": decorated, "src/b.py": "def broken(:\n"})
    component = grade(repo)
    assert [(f.path, f.line, f.title, f.level) for f in component.findings] == [
        ("src/a.py", 1, "max_cyclomatic_complexity", "failure"),
        ("src/a.py", 1, "max_function_length", "failure"),
        ("src/b.py", 1, "syntax", "failure"),
        ("src/z.py", 5, "max_function_length", "failure"),  # the def, not the decorator
    ]
    messages = [f.message for f in component.findings]
    assert messages[0] == "branchy has complexity 3 (limit 2)"
    assert messages[1] == "branchy has length 4 (limit 3)"
    assert messages[2].startswith("does not parse: ")
    assert messages[3] == "long_one has length 5 (limit 3)"


def test_within_limits_no_finding(repo: Repo) -> None:
    based(repo, task(), {"src/a.py": SHORT})
    assert grade(repo).findings == ()


def test_findings_past_the_cap_are_counted(repo: Repo) -> None:
    count = MAX_FINDINGS + 3
    source = "\n\n".join(LONG.replace("long_one", f"f{i}") for i in range(count))
    based(repo, task(complexity=None), {"src/a.py": source})
    findings = grade(repo).findings
    assert len(findings) == MAX_FINDINGS + 1
    assert findings[MAX_FINDINGS - 1] == Finding(
        title="max_function_length",
        path="src/a.py",
        line=1 + 7 * (MAX_FINDINGS - 1),
        message=f"f{MAX_FINDINGS - 1} has length 5 (limit 4)",
    )
    assert findings[-1] == Finding(
        title="not listed", message="3 more violations not listed", level="notice"
    )


# -- roles --------------------------------------------------------------------------------


def test_quality_is_the_objective_of_a_refactor() -> None:
    from repogym.task import parse_task

    assert parse_task(task()).quality_role is Role.OBJECTIVE


@pytest.mark.parametrize("type_", ["bugfix", "feature"])
def test_quality_is_a_gate_on_other_task_types(repo: Repo, type_: str) -> None:
    based(repo, task(type_=type_, extra=TESTS), {"src/a.py": LONG})
    component = grade(repo)
    assert component.role is Role.GATE
    assert component.score == 0.5
    assert component.passed is False


# -- in the composite -------------------------------------------------------------------------


def test_refactor_summary_with_quality_as_the_objective(repo: Repo) -> None:
    based(repo, task(), {"src/a.py": LONG})
    # Spec: score = Σ wᵢ·sᵢ / Σ wᵢ over objectives, and no gate failed: 0.5.
    assert summary(repo) == "FAIL 0.500 (constraints=1.00✓(gate), quality=0.50✗)"
    repo.write({"src/a.py": SHORT})
    assert summary(repo) == "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓)"


def test_refactor_summary_when_the_constraints_gate_fails(repo: Repo) -> None:
    text = task().replace("constraints:\n", "constraints:\n  max_files_changed: 0\n")
    based(repo, text, {"src/a.py": LONG + "\n\n" + BRANCHY})
    repo.write({"src/a.py": SHORT + "\n\n" + BRANCHY})
    assert summary(repo) == "FAIL 0.000 (constraints=0.50✗(gate), quality=0.50✗)"


def test_a_failing_quality_gate_zeroes_the_objective(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A feature task whose objective is a custom grader from the base tree; quality gates it.
    grader = """\
from repogym.graders import Grader
from repogym.models import GradeComponent


class Always(Grader):
    name = "always"

    def grade(self, workspace):
        return GradeComponent(name=self.name, score=1.0, passed=True)
"""
    text = task(type_="feature") + "grading:\n  graders: ['rg_quality_tools:Always']\n"
    based(repo, text, {"rg_quality_tools.py": grader, "src/a.py": SHORT})
    monkeypatch.delitem(sys.modules, "rg_quality_tools", raising=False)
    try:
        passing = summary(repo)
        repo.write({"src/a.py": LONG})
        failing = summary(repo)
    finally:
        sys.modules.pop("rg_quality_tools", None)
    assert passing == "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓(gate), always=1.00✓)"
    assert failing == "FAIL 0.000 (constraints=1.00✓(gate), quality=0.50✗(gate), always=1.00✓)"
