"""repogym.report.redact: when hidden tests ran, no text the run produced is shown (issue 19)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from repogym.report.redact import NOT_SHOWN, redacted
from repogym.report.render import TEMPLATES, render

REPORTS = Path(__file__).parent.parent / "data" / "reports"
SECRET = "def test_ties(): assert top(['b', 'a']) == ['a']  # the hidden test's source"


def hidden_report() -> dict[str, Any]:
    """The hidden case, its public test failing with a message that carries the hidden
    test, a finding and a perf component saying it too."""
    report: dict[str, Any] = json.loads((REPORTS / "hidden.json").read_text())
    tests = next(c for c in report["components"] if c["name"] == "tests")
    public = "tests/test_top_words.py::test_most_frequent_first"
    tests["details"]["fail_to_pass"][public] = "failed"
    tests["messages"] = [
        "fail_to_pass: 1 of 3 passed",
        f"fail_to_pass failed: {public}: RuntimeError: {SECRET}",
        "fail_to_pass: 1 hidden test not passing",
        "pass_to_pass: 0 of 2 broken",
        "warning: the test command exited with code 0 although the report has failures",
        f"tests/nope.py::x is not in the report; closest: {SECRET}",
    ]
    tests["findings"] = [
        {
            "path": "tests/test_top_words.py",
            "line": 3,
            "title": "fail_to_pass",
            "message": f"{public} failed: RuntimeError: {SECRET}",
            "level": "failure",
        },
        *tests["findings"],
    ]
    report["components"].append(
        {
            "name": "perf",
            "role": "objective",
            "score": 0.0,
            "passed": False,
            "weight": 0.2,
            "details": {
                "speedup": 1.04,
                "interval": {
                    "estimate": 1.03,
                    "low": 0.98,
                    "high": 1.09,
                    "level": 0.96,
                    "pairs": 9,
                },
            },
            "messages": ["speed-up 1.04×", f"output tail:\n{SECRET}"],
            "findings": [{"title": "command", "message": SECRET, "level": "failure"}],
        }
    )
    return report


def test_the_tests_say_counts_and_public_ids_only() -> None:
    report = hidden_report()
    kept = copy.deepcopy(report)
    shown = redacted(report)
    assert report == kept  # the input is not changed
    assert SECRET not in json.dumps(shown)
    tests = next(c for c in shown["components"] if c["name"] == "tests")
    assert tests["messages"] == [
        "fail_to_pass: 1 of 3 passed",
        "fail_to_pass failed: tests/test_top_words.py::test_most_frequent_first",
        "fail_to_pass: 1 hidden test not passing",
        "pass_to_pass: 0 of 2 broken",
        "warning: the test command exited with code 0 although the report has failures",
    ]
    assert tests["findings"][0] == {
        **report["components"][1]["findings"][0],
        "message": "tests/test_top_words.py::test_most_frequent_first failed",
    }
    assert tests["findings"][1]["title"] == "hidden"  # the count, as it was
    perf = shown["components"][-1]
    assert perf["messages"] == [
        "speed-up 1.04×",
        "pairs: 1.03× [0.98, 1.09] over 9 pairs",
        f"2 messages {NOT_SHOWN}",
    ]
    assert perf["findings"][0]["message"] == NOT_SHOWN
    # What runs nothing of the submission's is shown as it is.
    assert shown["components"][0] == report["components"][0]


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_template_sees_the_runs_text(template: str) -> None:
    text = render(hidden_report(), template)
    assert "hidden test's source" not in text and "RuntimeError" not in text


def test_the_sentences_are_the_graders() -> None:
    from repogym.graders.tests import findings as _test_findings
    from repogym.graders.tests import grader as tests
    from repogym.junit import Outcome
    from repogym.report.redact import _WHAT, OUTPUT_NOT_SHOWN, PASSED

    assert OUTPUT_NOT_SHOWN == tests.OUTPUT_NOT_SHOWN
    assert Outcome.PASSED.value == PASSED
    assert {o.value: what for o, what in _test_findings._WHAT.items()} == _WHAT


def test_a_report_without_hidden_tests_is_shown_as_it_is() -> None:
    report = json.loads((REPORTS / "fail.json").read_text())
    assert redacted(report) is report


def test_hidden_tests_from_outside_count_too() -> None:
    report = json.loads((REPORTS / "fail.json").read_text())
    said = next(c for c in report["components"] if c["name"] == "tests")["messages"]
    assert any("AssertionError: assert 'crme-brlee'" in m for m in said)
    report["task"]["hidden_tests"] = "outside"
    tests = next(c for c in redacted(report)["components"] if c["name"] == "tests")
    assert not any("AssertionError" in m for m in tests["messages"])
    assert "fail_to_pass: 1 of 2 passed" in tests["messages"]


def test_no_number_the_submission_chooses_is_shown() -> None:
    """Code that reads the hidden tests can spell them out in numbers as well as in text:
    its exit code, how many bytes of output were cut, how long it ran, a custom grader's
    details (found in review of issue 19). Only whether the command exited non-zero or
    timed out is shown."""
    report = hidden_report()
    tests = next(c for c in report["components"] if c["name"] == "tests")
    tests["details"]["command"] = {
        "command": "python -m pytest",
        "exit_code": 42,
        "timed_out": False,
        "duration": 1.2345678,
        "output_cut_bytes": 987654321,
        "output_tail": SECRET,
    }
    tests["messages"].append(
        "warning: the test command exited with code 42 although every test in the report passed"
    )
    report["components"].append(
        {
            "name": "no_todo",
            "role": "objective",
            "score": 1.0,
            "passed": True,
            "weight": 0.1,
            "details": {"note": SECRET, "count": 987654321},
            "messages": [],
            "findings": [],
        }
    )
    shown = json.dumps(redacted(report))
    for chosen in ("42", "987654321", "1.23", SECRET):
        assert chosen not in shown, chosen
    command = next(c for c in redacted(report)["components"] if c["name"] == "tests")
    assert command["details"]["command"]["exit_code"] == "non-zero"
    assert command["details"]["command"]["timed_out"] is False
    for template in TEMPLATES:
        text = render(report, template)
        assert "987654321" not in text and "42" not in text.replace("4​2", "")
