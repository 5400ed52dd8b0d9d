"""Every ```python block of README.md and docs/*.md runs (issue 8), in order, one
namespace per file, in a real repository: the bugfix example with its reference solution
committed on a branch checked out over `main`. ``path/to/repo`` in a block means it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from repogym._demo import EXAMPLES, build_example_repo

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("doc", [d for d in DOCS if _blocks(d)], ids=lambda d: d.name)
def test_python_examples_run(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    monkeypatch.chdir(repo)
    fixed = (EXAMPLES / "bugfix" / "solution" / "src" / "slugify" / "core.py").read_text()
    namespace: dict[str, object] = {"__name__": "docs_example", "fixed_source": fixed}
    for index, block in enumerate(_blocks(doc)):
        code = compile(
            block.replace("path/to/repo", os.fspath(repo)), f"{doc.name}#{index}", "exec"
        )
        exec(code, namespace)
    printed = capsys.readouterr().out
    if doc.name == "README.md":
        assert "PASS 1.000 (constraints=1.00✓(gate), tests=1.00✓, " in printed
