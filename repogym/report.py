"""The JSON report and the plain-text and Markdown renderings of a grade.

The JSON layout is documented in ``docs/report.md``; ``REPORT_VERSION`` changes whenever
a key is renamed or removed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from repogym import __version__
from repogym.models import GradeResult
from repogym.workspace import Workspace

REPORT_VERSION = 1


def report_dict(result: GradeResult, workspace: Workspace) -> dict[str, Any]:
    """Everything the grade used and found, as JSON-ready data."""
    task = workspace.task
    return {
        "version": REPORT_VERSION,
        "tool": {"name": "repogym", "version": __version__},
        **result.to_dict(),
        "base": {"ref": workspace.base_ref, "sha": workspace.base},
        "head": {"sha": workspace.head},
        "task": {
            "source": task.source,
            "sha256": task.sha256,
            "type": task.type,
            "config": task.model_dump(mode="json"),
        },
    }


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` is either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_json(data: dict[str, Any]) -> str:
    # Custom graders may put anything in details; fall back to str() rather than fail.
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def text_table(result: GradeResult) -> str:
    """The components as an aligned table, then the summary line."""
    rows = [("component", "role", "weight", "score", "result")]
    for c in result.components:
        rows.append(
            (
                c.name,
                c.role.value,
                f"{c.weight:g}",
                f"{c.score:.2f}",
                "pass" if c.passed else "FAIL",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    for c in result.components:
        for message in c.messages:
            lines.append(f"{c.name}: {message}")
    lines.append(result.summary())
    return "\n".join(lines) + "\n"


def markdown(result: GradeResult) -> str:
    """A Markdown table of the components with their messages."""
    verdict = "✅ passed" if result.passed else "❌ failed"
    lines = [
        f"### repogym: {verdict}, score {result.score:.3f}",
        "",
        "| component | role | weight | score | result |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in result.components:
        mark = "✓" if c.passed else "✗"
        lines.append(f"| {c.name} | {c.role.value} | {c.weight:g} | {c.score:.2f} | {mark} |")
    for c in result.components:
        if c.messages:
            lines += ["", f"**{c.name}**", ""] + [f"- {_md_escape(m)}" for m in c.messages]
    lines += ["", f"`{result.summary()}`", ""]
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")
