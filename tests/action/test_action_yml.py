"""action.yml, the table of inputs and outputs, and the README agree (issue 10): the same
names, defaults and descriptions in all three, and action.yml (and the README's workflow)
valid against SchemaStore's schemas, as GitHub's Marketplace and editors read them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from repogym_action.settings import INPUTS, OUTPUTS
from tests.support.workflow_files import ROOT, check_jsonschema, readme_section

ACTION = ROOT / "action.yml"


def action() -> dict[str, object]:
    loaded = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The rows of the table whose header row is ``header``, each a list of cells."""
    lines = text.splitlines()
    start = lines.index(header)
    assert re.fullmatch(r"\|( --- \|)+", lines[start + 1]), lines[start + 1]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def code(cell: str) -> str:
    """A cell holding one code span, as its text; ``""`` stands for the empty string."""
    match = re.fullmatch(r"`([^`]*)`", cell)
    assert match, f"{cell!r} is not one code span"
    return "" if match.group(1) == '""' else match.group(1)


def test_action_yml_is_valid_for_schemastore() -> None:
    done = check_jsonschema("vendor.github-actions", ACTION)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_would_catch_a_mistake(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("color: green", "color: teal"))
    assert check_jsonschema("vendor.github-actions", broken).returncode != 0


def test_action_yml_runs_the_image() -> None:
    assert action()["runs"] == {"using": "docker", "image": "Dockerfile"}


def test_action_yml_declares_the_tables_inputs() -> None:
    declared = action()["inputs"]
    assert isinstance(declared, dict)
    assert list(declared) == list(INPUTS)
    for name, spec in INPUTS.items():
        assert declared[name] == {
            "description": spec.description,
            "required": False,
            "default": spec.default,
        }, name


def test_action_yml_declares_the_tables_outputs() -> None:
    declared = action()["outputs"]
    assert isinstance(declared, dict)
    assert {name: entry["description"] for name, entry in declared.items()} == {
        name: spec.description for name, spec in OUTPUTS.items()
    }
    assert list(declared) == list(OUTPUTS)


def test_the_readme_documents_every_input_with_its_default() -> None:
    rows = markdown_table(readme_section(), "| input | default | description |")
    assert [(code(name), code(default), text) for name, default, text in rows] == [
        (name, spec.default, spec.description) for name, spec in INPUTS.items()
    ]


def test_the_readme_documents_every_output() -> None:
    rows = markdown_table(readme_section(), "| output | description |")
    assert [(code(name), text) for name, text in rows] == [
        (name, spec.description) for name, spec in OUTPUTS.items()
    ]


def test_the_readmes_workflow_is_valid_and_uses_the_action(tmp_path: Path) -> None:
    (block,) = re.findall(r"^```yaml\n(.*?)^```", readme_section(), re.S | re.M)
    workflow = tmp_path / "repogym.yml"
    workflow.write_text(block)
    done = check_jsonschema("vendor.github-workflows", workflow)
    assert done.returncode == 0, done.stdout + done.stderr
    loaded = yaml.safe_load(block)
    assert loaded["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "checks": "write",
    }
    steps = [step["uses"] for step in loaded["jobs"]["grade"]["steps"]]
    assert steps[0].startswith("actions/checkout@")
    assert steps[-1] == "org/repogym-action@v1"


@pytest.mark.parametrize("name", list(INPUTS))
def test_every_input_is_one_word_of_the_runners_alphabet(name: str) -> None:
    # The runner turns the name into INPUT_<NAME>; SchemaStore's pattern for input ids.
    assert re.fullmatch(r"[_a-z][a-z0-9_-]*", name)
