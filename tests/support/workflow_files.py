"""Checking workflow and action files: SchemaStore's schemas through check-jsonschema,
and the README's section on the Action."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    cli = shutil.which("check-jsonschema", path=Path(sys.executable).parent) or shutil.which(
        "check-jsonschema"
    )
    assert cli, "check-jsonschema is not installed: pip install -e '.[dev]'"
    return subprocess.run(
        [cli, "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## GitHub Action\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "README.md has no section '## GitHub Action'"
    return match.group(1)
