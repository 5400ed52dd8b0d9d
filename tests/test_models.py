from __future__ import annotations

import math

import pytest

from repogym.models import (
    MAX_FINDINGS,
    Finding,
    GradeComponent,
    GradeResult,
    Role,
    capped_findings,
    format_score,
)


def test_component_defaults_to_objective_and_normalises() -> None:
    c = GradeComponent(name="x", score=1, passed=1, messages=["a"])  # type: ignore[arg-type]
    assert c.role is Role.OBJECTIVE
    assert c.score == 1.0 and isinstance(c.score, float)
    assert c.passed is True
    assert c.messages == ("a",)
    assert c.weight == 1.0


@pytest.mark.parametrize("score", [-0.01, 1.0001, math.nan, math.inf])
def test_component_rejects_scores_outside_unit_interval(score: float) -> None:
    with pytest.raises(ValueError, match="not in \\[0, 1\\]"):
        GradeComponent(name="x", score=score, passed=False)


def test_component_role_from_string() -> None:
    assert GradeComponent(name="g", score=0, passed=False, role="gate").role is Role.GATE  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        GradeComponent(name="g", score=0, passed=False, role="boss")  # type: ignore[arg-type]


def _result(*components: GradeComponent, score: float, passed: bool) -> GradeResult:
    return GradeResult(score=score, passed=passed, components=components)


def test_summary_format_matches_spec() -> None:
    result = _result(
        GradeComponent(name="constraints", score=1, passed=True, role=Role.GATE),
        GradeComponent(name="tests", score=1, passed=True),
        score=1.0,
        passed=True,
    )
    assert result.summary() == "PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓)"


def test_summary_marks_failures_and_cuts_scores() -> None:
    result = _result(
        GradeComponent(name="constraints", score=2 / 3, passed=False, role=Role.GATE),
        GradeComponent(name="tests", score=0.5, passed=False),
        GradeComponent(name="perf", score=0.4537, passed=False),
        score=0.0,
        passed=False,
    )
    assert result.summary() == ("FAIL 0.000 (constraints=0.66✗(gate), tests=0.50✗, perf=0.45✗)")


def test_a_score_short_of_one_never_shows_as_one() -> None:
    # Issue 8: 0.9988 printed as `tests=1.00✗`, full marks beside a failure.
    tests = GradeComponent(name="tests", score=0.9988, passed=False)
    result = _result(tests, score=0.9996, passed=False)
    assert result.summary() == "FAIL 0.999 (tests=0.99✗)"


@pytest.mark.parametrize(
    ("score", "two", "three"),
    [
        (1.0, "1.00", "1.000"),
        (0.0, "0.00", "0.000"),
        (0.9999999999, "0.99", "0.999"),
        (0.29, "0.29", "0.290"),  # 0.29 is 0.28999... as a float: cut its decimal, not that
        (0.57, "0.57", "0.570"),
        (0.1 + 0.2, "0.30", "0.300"),
        (1e-12, "0.00", "0.000"),
        (0.125, "0.12", "0.125"),
    ],
)
def test_format_score_cuts(score: float, two: str, three: str) -> None:
    assert (format_score(score), format_score(score, 3)) == (two, three)


def test_component_lookup_names_the_alternatives() -> None:
    result = _result(GradeComponent(name="tests", score=1, passed=True), score=1, passed=True)
    assert result.component("tests").score == 1.0
    with pytest.raises(KeyError, match="components: tests"):
        result.component("perf")


def test_json_form() -> None:
    result = GradeResult(
        score=0.5,
        passed=False,
        components=(
            GradeComponent(name="constraints", score=1, passed=True, role=Role.GATE, weight=0),
            GradeComponent(
                name="tests",
                score=0.5,
                passed=False,
                details={"k": 1},
                messages=["m"],
                findings=[Finding(message="t failed", title="fail_to_pass", path="t.py", line=3)],
            ),
        ),
        files_changed=("a.py",),
    )
    assert result.to_dict() == {
        "score": 0.5,
        "passed": False,
        "summary": "FAIL 0.500 (constraints=1.00✓(gate), tests=0.50✗)",
        "components": [
            {
                "name": "constraints",
                "role": "gate",
                "score": 1.0,
                "passed": True,
                "weight": 0,
                "details": {},
                "messages": [],
                "findings": [],
            },
            {
                "name": "tests",
                "role": "objective",
                "score": 0.5,
                "passed": False,
                "weight": 1.0,
                "details": {"k": 1},
                "messages": ["m"],
                "findings": [
                    {
                        "path": "t.py",
                        "line": 3,
                        "title": "fail_to_pass",
                        "message": "t failed",
                        "level": "failure",
                    }
                ],
            },
        ],
        "files_changed": ["a.py"],
    }


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"level": "error"}, "use failure, warning or notice"),
        ({"path": "a.py", "line": 0}, "from 1"),
        ({"line": 3}, "needs a path"),
    ],
)
def test_finding_refuses_what_an_annotation_cannot_show(
    kwargs: dict[str, object], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        Finding(message="m", **kwargs)  # type: ignore[arg-type]


def test_component_findings_must_be_findings() -> None:
    with pytest.raises(TypeError, match="findings must be Finding, not str"):
        GradeComponent(name="x", score=0, passed=False, findings=["oops"])  # type: ignore[list-item]


def test_findings_are_capped_and_the_rest_counted() -> None:
    found = [Finding(message=f"m{i}", path="a.py", line=i + 1) for i in range(MAX_FINDINGS + 2)]
    assert capped_findings(found[:MAX_FINDINGS]) == tuple(found[:MAX_FINDINGS])
    assert capped_findings(found[: MAX_FINDINGS + 1], "failing test")[MAX_FINDINGS:] == (
        Finding(title="not listed", message="1 more failing test not listed", level="notice"),
    )
    capped = capped_findings(found)
    assert capped[:MAX_FINDINGS] == tuple(found[:MAX_FINDINGS])
    assert capped[MAX_FINDINGS:] == (
        Finding(title="not listed", message="2 more findings not listed", level="notice"),
    )
