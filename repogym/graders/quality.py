"""QualityGrader: per-function length and complexity limits (spec: "QualityGrader").

Measured on the Python files under ``constraints.paths`` (every Python file of the
submission when ``paths`` is not declared). Each declared limit is one rule; the score
is the fraction of rules with no violation. It is the objective of a refactor task and a
gate on every other type.
"""

from __future__ import annotations

from typing import Any

from repogym.graders.base import BuiltinGrader
from repogym.metrics import measure_source
from repogym.models import QUALITY, Finding, GradeComponent, capped_findings
from repogym.shown import counted, shown_path
from repogym.tree.globs import compile_globs, matching
from repogym.workspace import Workspace

MAX_LISTED = 100
# The task key of each limit, a finding's title; a file that does not parse breaks all.
_KEYS = {
    "length": "max_function_length",
    "complexity": "max_cyclomatic_complexity",
    "syntax": "syntax",
}


class QualityGrader(BuiltinGrader):
    name = QUALITY

    def grade(self, workspace: Workspace) -> GradeComponent:
        c = workspace.task.constraints
        limits = {
            metric: limit
            for metric, limit in (
                ("length", c.max_function_length),
                ("complexity", c.max_cyclomatic_complexity),
            )
            if limit is not None
        }
        files = python_files(workspace)
        violations = [v for path in files for v in _violations(workspace, path, limits)]
        broken = {v["metric"] for v in violations}
        # A file that does not parse cannot be shown to meet any limit.
        violated = set(limits) if "syntax" in broken else broken & set(limits)
        listed = sorted(violations, key=lambda v: (v["path"], v["line"], v["metric"]))
        details: dict[str, Any] = {
            "limits": limits,
            "files": len(files),
            "violations": listed[:MAX_LISTED],
        }
        if len(listed) > MAX_LISTED:
            details["violations_not_listed"] = len(listed) - MAX_LISTED
        messages = [_message(v) for v in listed[:MAX_LISTED]]
        return GradeComponent(
            name=self.name,
            role=self.default_role(workspace),
            score=(1 - len(violated) / len(limits)) if limits else 1.0,
            passed=not violations,
            details=details,
            messages=messages or [f"{counted(len(files), 'Python file')} within every limit"],
            findings=capped_findings([_finding(v) for v in listed], "violation"),
        )


def python_files(workspace: Workspace) -> tuple[str, ...]:
    """The submission's Python files under ``constraints.paths``."""
    paths = workspace.task.constraints.paths
    # Symlinks are skipped: a link inside the tree is measured at its target.
    files = tuple(
        f for f in workspace.files() if f.endswith(".py") and workspace.is_regular_file(f)
    )
    return tuple(matching(compile_globs(paths), files)) if paths is not None else files


def _violations(workspace: Workspace, path: str, limits: dict[str, int]) -> list[dict[str, Any]]:
    try:
        functions = measure_source(workspace.read_bytes(path), path)
    except SyntaxError as error:  # too deep a nesting included
        return [_unparsable(path, error.lineno or 1, error.msg)]
    found = []
    for function in functions:
        for metric, limit in limits.items():
            value = getattr(function, metric)
            if value > limit:
                found.append(
                    {
                        "path": path,
                        "line": function.line,
                        "function": function.qualname,
                        "metric": metric,
                        "value": value,
                        "limit": limit,
                    }
                )
    return found


def _unparsable(path: str, line: int, reason: str) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "function": None,
        "metric": "syntax",
        "value": None,
        "limit": None,
        "message": f"does not parse: {reason}",
    }


def _finding(v: dict[str, Any]) -> Finding:
    # At the function's `def` line (metrics.py), or where the file stops parsing.
    if v["metric"] == "syntax":
        message = v["message"]
    else:
        message = f"{v['function']} has {v['metric']} {v['value']} (limit {v['limit']})"
    return Finding(title=_KEYS[v["metric"]], path=v["path"], line=v["line"], message=message)


def _message(v: dict[str, Any]) -> str:
    if v["metric"] == "syntax":
        return f"{shown_path(v['path'])}:{v['line']}: {v['message']}"
    where = f"{shown_path(v['path'])}:{v['line']}: {v['function']}"
    return f"{where} has {v['metric']} {v['value']} (limit {v['limit']})"
