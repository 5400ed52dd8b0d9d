"""ConstraintGrader: rules on the diff, always a gate (spec: "ConstraintGrader").

Each declared rule is one check, and protected files are always one; ``score = 1 −
violated checks / checks``; passing needs no violation. It runs first, so tampering with
protected test files is on record before the TestGrader restores them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from repogym._globs import compile_globs, matching
from repogym.graders.base import Grader
from repogym.models import Finding, GradeComponent, Role, capped_findings
from repogym.task import TASK_FILE
from repogym.workspace import Workspace, files_under, shown_path

# Enough to show what is wrong without turning a report into a dump of the diff.
MAX_LISTED = 50

Violation = dict[str, Any]


class ConstraintGrader(Grader):
    """Always a gate. ``hidden`` is a directory of hidden tests given from elsewhere than
    ``tests.hidden`` (as ``TestGrader(hidden=...)`` takes): the paths they are injected at
    are protected too."""

    name = "constraints"
    role = Role.GATE

    def __init__(
        self, *, role: Role | str | None = None, hidden: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__(role=role)
        self.hidden = None if hidden is None else Path(hidden)

    def grade(self, workspace: Workspace) -> GradeComponent:
        rules: list[tuple[str, Callable[[Workspace], Iterator[Violation]]]] = [
            ("protected", lambda ws: _protected(ws, self.hidden))
        ]
        c = workspace.task.constraints
        declared = {
            "allowed_files": c.allowed_files,
            "max_files_changed": c.max_files_changed,
            "max_lines_changed": c.max_lines_changed,
            "forbidden_patterns": c.forbidden_patterns,
            "required_patterns": c.required_patterns,
        }
        rules += [(rule, _RULES[rule]) for rule, value in declared.items() if value is not None]
        found = [(rule, list(find(workspace))) for rule, find in rules]
        checks = [_check(rule, violations) for rule, violations in found]
        violated = [check for check in checks if not check["passed"]]
        messages = [violation["message"] for check in violated for violation in check["violations"]]
        return GradeComponent(
            name=self.name,
            role=Role.GATE,
            score=1 - len(violated) / len(checks),
            passed=not violated,
            details={"checks": checks},
            messages=messages or [f"no violation ({_plural(len(checks), 'check')})"],
            findings=_findings(found),
        )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _findings(found: list[tuple[str, list[Violation]]]) -> tuple[Finding, ...]:
    """One finding per violation, titled with its rule's key, at its file and line when
    it has them (capped as every component's findings are)."""
    findings = []
    for rule, violations in found:
        for violation in violations:
            message = violation["message"]
            if rule == "forbidden_patterns":  # the place is the finding's own: not repeated
                message = f"forbidden pattern {violation['pattern']!r}"
            path, line = violation.get("path"), violation.get("line")
            findings.append(Finding(title=rule, path=path, line=line, message=message))
    return capped_findings(findings, "violation")


def _check(rule: str, violations: list[Violation]) -> dict[str, Any]:
    check: dict[str, Any] = {"rule": rule, "passed": not violations}
    check["violations"] = violations[:MAX_LISTED]
    if len(violations) > MAX_LISTED:
        check["violations_not_listed"] = len(violations) - MAX_LISTED
    return check


def protected_paths(workspace: Workspace, hidden_dir: Path | None = None) -> dict[str, str]:
    """Exact paths no submission may change, with the reason, always on."""
    task = workspace.task
    paths = task.protected_files()
    for path in files_under(hidden_dir) if hidden_dir is not None else []:
        paths.setdefault(path, "where a hidden test is injected")
    if task.tests is not None and task.tests.hidden:
        hidden = task.tests.hidden
        for path in workspace.baseline_files(hidden):
            paths.setdefault(path, "a hidden test")
            # Hidden tests are copied into the tree at the same relative paths.
            paths.setdefault(path[len(hidden) + 1 :], "where a hidden test is injected")
    return paths


def _protected(workspace: Workspace, hidden_dir: Path | None) -> Iterator[Violation]:
    exact = protected_paths(workspace, hidden_dir)
    task = workspace.task
    hidden = task.tests.hidden if task.tests else None
    globs = compile_globs(task.constraints.protected)
    changes = workspace.diff_stats()
    for path, change in changes.items():
        reason = exact.get(path)
        if reason is None and hidden and path.startswith(hidden + "/"):
            reason = "a hidden test"
        if reason is None and globs.match_file(path):
            reason = "matched by constraints.protected"
        if reason is not None:
            verb = {"A": "added", "D": "deleted"}.get(change.status, "modified")
            shown = shown_path(path)
            yield {"path": path, "message": f"{shown} is protected ({reason}) and was {verb}"}


def _allowed_files(workspace: Workspace) -> Iterator[Violation]:
    allowed = workspace.task.constraints.allowed_files or ()
    spec = compile_globs(allowed)
    for path in workspace.changed_files():
        if not spec.match_file(path):
            yield {
                "path": path,
                "message": f"{shown_path(path)} changed but is outside allowed_files "
                f"({', '.join(allowed)})",
            }


def _max_files_changed(workspace: Workspace) -> Iterator[Violation]:
    limit = workspace.task.constraints.max_files_changed
    count = len(workspace.changed_files())
    if limit is not None and count > limit:
        yield {
            "value": count,
            "limit": limit,
            "message": f"{count} files changed; at most {limit} allowed",
        }


def _max_lines_changed(workspace: Workspace) -> Iterator[Violation]:
    limit = workspace.task.constraints.max_lines_changed
    count = sum(c.added + c.removed for c in workspace.diff_stats().values())
    if limit is not None and count > limit:
        yield {
            "value": count,
            "limit": limit,
            "message": f"{count} lines changed (added + removed); at most {limit} allowed",
        }


def _forbidden_patterns(workspace: Workspace) -> Iterator[Violation]:
    patterns = [
        re.compile(p, re.MULTILINE) for p in workspace.task.constraints.forbidden_patterns or ()
    ]
    for path, change in workspace.diff_stats().items():
        # Symlinks are skipped: what they point to is checked as a file of its own.
        if change.status == "D" or change.binary or not workspace.is_regular_file(path):
            continue
        text = workspace.read(path)
        for pattern in patterns:
            lines = sorted({text.count("\n", 0, m.start()) + 1 for m in pattern.finditer(text)})
            for line in lines:
                yield {
                    "path": path,
                    "line": line,
                    "pattern": pattern.pattern,
                    "message": f"{shown_path(path)}:{line}: forbidden pattern {pattern.pattern!r}",
                }


def _required_patterns(workspace: Workspace) -> Iterator[Violation]:
    c = workspace.task.constraints
    # The rubric itself and the hidden tests must not satisfy a requirement on the code.
    rubric = set(protected_paths(workspace)) - set(workspace.task.protected_files()) | {TASK_FILE}
    files = tuple(f for f in workspace.files() if f not in rubric and workspace.is_regular_file(f))
    if c.paths is not None:
        files = tuple(matching(compile_globs(c.paths), files))
    texts = _texts(workspace, files)
    where = f"file under paths ({', '.join(c.paths)})" if c.paths is not None else "file"
    for pattern in c.required_patterns or ():
        regex = re.compile(pattern, re.MULTILINE)
        if not any(regex.search(text) for text in texts):
            yield {
                "pattern": pattern,
                "message": f"no {where} matches required pattern {pattern!r}",
            }


def _texts(workspace: Workspace, files: tuple[str, ...]) -> list[str]:
    texts = []
    for path in files:
        data = workspace.read_bytes(path)
        if b"\0" not in data[:8000]:
            texts.append(data.decode("utf-8", errors="replace"))
    return texts


_RULES: dict[str, Callable[[Workspace], Iterator[Violation]]] = {
    "allowed_files": _allowed_files,
    "max_files_changed": _max_files_changed,
    "max_lines_changed": _max_lines_changed,
    "forbidden_patterns": _forbidden_patterns,
    "required_patterns": _required_patterns,
}
