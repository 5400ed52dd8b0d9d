"""The report's one schema (issue 21): docs/report.schema.json is what the engine's models
export, and the reports the engine writes, a grade's and an error's, fit it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import repogym
from repogym._demo import build_example_repo
from repogym.errors import TaskError
from repogym.report.build import report_dict, user_error_report
from repogym.report.schema import Report, problems, template_view

SCHEMA = Path(__file__).parents[2] / "docs" / "report.schema.json"


def test_the_published_schema_is_the_models() -> None:
    exported = subprocess.run(
        [sys.executable, "-m", "repogym.report.schema"], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(SCHEMA.read_text()) == Report.model_json_schema() == json.loads(exported), (
        "docs/report.schema.json is stale: python -m repogym.report.schema > "
        "docs/report.schema.json"
    )


def test_what_the_engine_writes_fits_it(tmp_path: Path) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    grading = repogym.grade(repo)
    written = json.loads(json.dumps(report_dict(grading)))
    assert problems(written) == []
    error = json.loads(json.dumps(user_error_report(TaskError(".repogym.yml@main:4: `tests`"))))
    assert problems(error) == []
    assert problems({**written, "score": 1.5}) == [
        "`score` is 1.5: should be a finite number in [0, 1]"
    ]


def test_undecodable_bytes_reach_the_templates_as_text() -> None:
    """A file name's undecodable byte (a lone surrogate, os.fsdecode's) is ``\\xe9`` to the
    templates, in a value or a key of a grader's details, as their filters show it."""
    name = "caf\udce9.py"
    component = {"name": "q", "role": "gate", "score": 1, "passed": True}
    component |= {"messages": [name], "details": {name: name}}
    [shown] = template_view({"components": [component]})["components"]
    assert shown["messages"] == ["caf\\xe9.py"]
    assert shown["details"] == {"caf\\xe9.py": "caf\\xe9.py"}
