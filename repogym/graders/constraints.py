"""ConstraintGrader: rules on the diff, always a gate (spec: "ConstraintGrader").

Each declared rule is one check, and protected files are always one; ``score = 1 −
violated checks / checks``; passing needs no violation. It runs first, so tampering with
protected test files is on record before the TestGrader restores them.

The always-on check (``protected``) also fails on what no submission may add, whatever
the task declares (issue 9): compiled code that the task does not allow, and symlinks
that lead outside the repository or at a protected file.
"""

from __future__ import annotations

import codecs
import io
import os
import posixpath
import re
import tokenize
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from repogym.graders.base import BuiltinGrader
from repogym.models import CONSTRAINTS, Finding, GradeComponent, Role, capped_findings
from repogym.shown import counted, shown_path
from repogym.task import TASK_FILE
from repogym.tree.globs import compile_globs, matching
from repogym.tree.links import SymlinkLoop, resolve_in_tree
from repogym.workspace import Workspace, files_under

# Enough to show what is wrong without turning a report into a dump of the diff.
MAX_LISTED = 50

Violation = dict[str, Any]


class ConstraintGrader(BuiltinGrader):
    """Always a gate. ``hidden`` is a directory of hidden tests given from elsewhere than
    ``tests.hidden`` (as ``TestGrader(hidden=...)`` takes): the paths they are injected at
    are protected too."""

    name = CONSTRAINTS
    role = Role.GATE

    def grade(self, workspace: Workspace) -> GradeComponent:
        rules: list[tuple[str, Callable[[Workspace], Iterator[Violation]]]] = [
            ("protected", lambda ws: _always_on(ws, self.hidden))
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
            messages=messages or [f"no violation ({counted(len(checks), 'check')})"],
            findings=_findings(found),
        )


def _findings(found: list[tuple[str, list[Violation]]]) -> tuple[Finding, ...]:
    """One finding per violation, titled with its rule's key, at its file and line when
    it has them (capped as every component's findings are)."""
    findings = []
    for rule, violations in found:
        for violation in violations:
            message = violation["message"]
            if rule == "forbidden_patterns" and "pattern" in violation:
                # The place is the finding's own: not repeated.
                message = f"forbidden pattern {violation['pattern']!r}"
            path, line = violation.get("path"), violation.get("line")
            title = violation.get("kind", rule)  # what the always-on check caught
            findings.append(Finding(title=title, path=path, line=line, message=message))
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
        # Those of the tip (which are injected, issue 19) and of the merge base (which
        # the diff is against).
        listed = {
            *workspace.baseline_files(hidden),
            *workspace.baseline_files(hidden, at=workspace.rubric),
        }
        for path in sorted(listed):
            paths.setdefault(path, "a hidden test")
            # Hidden tests are copied into the tree at the same relative paths.
            paths.setdefault(path[len(hidden) + 1 :], "where a hidden test is injected")
    return paths


def _always_on(workspace: Workspace, hidden_dir: Path | None) -> Iterator[Violation]:
    """The check every task has: protected files untouched, no compiled code the task
    does not allow, no symlink out of the tree or at a protected file."""
    protection = _Protection(workspace, hidden_dir)
    yield from _protected(workspace, protection)
    yield from _compiled(workspace)
    yield from _symlinks(workspace, protection)


class _Protection:
    """Which paths are protected, and why: exact paths, the hidden directory, globs."""

    def __init__(self, workspace: Workspace, hidden_dir: Path | None) -> None:
        task = workspace.task
        self.exact = protected_paths(workspace, hidden_dir)
        self.hidden = task.tests.hidden if task.tests else None
        self.globs = compile_globs(task.constraints.protected)

    def reason(self, path: str) -> str | None:
        """Why ``path`` is protected, or None."""
        reason = self.exact.get(path)
        if reason is None and self.hidden and path.startswith(self.hidden + "/"):
            reason = "a hidden test"
        if reason is None and self.globs.match_file(path):
            reason = "matched by constraints.protected"
        return reason

    def held_in(self, directory: str, files: tuple[str, ...]) -> str | None:
        """The first protected path under ``directory`` ("" for the root), with why."""
        prefix = directory + "/" if directory else ""
        under = [p for p in (*self.exact, *files) if p.startswith(prefix)]
        for path in sorted(set(under)):
            reason = self.reason(path)
            if reason is not None:
                return f"it holds {shown_path(path)}, {reason}"
        return None


def _protected(workspace: Workspace, protection: _Protection) -> Iterator[Violation]:
    for path, change in workspace.diff_stats().items():
        reason = protection.reason(path)
        if reason is not None:
            verb = {"A": "added", "D": "deleted"}.get(change.status, "modified")
            shown = shown_path(path)
            yield {"path": path, "message": f"{shown} is protected ({reason}) and was {verb}"}


# What the interpreter or a loader runs without a source a grader could read: bytecode,
# anything in a bytecode cache, and native libraries (`libx.so.1` included). Matched
# without regard to case, as Windows and macOS find files.
_COMPILED = re.compile(r"\.(pyc|pyo|pyd|dll|dylib|so(\.[0-9]+)*)$", re.IGNORECASE)


def is_compiled(path: str) -> bool:
    """Whether ``path`` names compiled code: by its suffix, or in a ``__pycache__``."""
    parts = path.split("/")
    return "__pycache__" in parts[:-1] or _COMPILED.search(parts[-1]) is not None


def _compiled(workspace: Workspace) -> Iterator[Violation]:
    allowed = compile_globs(workspace.task.constraints.allow_compiled)
    for path, change in workspace.diff_stats().items():
        if change.status == "D" or not is_compiled(path) or allowed.match_file(path):
            continue
        verb = "added" if change.status == "A" else "changed"
        yield {
            "path": path,
            "kind": "compiled code",
            "message": f"{shown_path(path)} is compiled code and was {verb}: no check can read "
            "what it does; remove it, or allow it in the task with constraints.allow_compiled",
        }


# -- symlinks ----------------------------------------------------------------------------


def _symlinks(workspace: Workspace, protection: _Protection) -> Iterator[Violation]:
    """Symlinks the submission added or changed that lead outside the repository (or
    into its ``.git``) or at a protected file. Only link targets are read, never files
    through them."""
    for path, change in workspace.diff_stats().items():
        # The link as the snapshot holds it: what the commands will run with.
        entry = workspace.entry(path)
        if change.status == "D" or entry is None or entry.mode != "120000":
            continue
        target = os.fsdecode(workspace.snapshot().store.read_blob(entry.sha))
        problem = _link_problem(workspace, protection, path, target)
        if problem is not None:
            yield {
                "path": path,
                "kind": "symlink",
                "message": f"{shown_path(path)} is a symlink to {shown_path(target)}, {problem}",
            }


def _link_problem(
    workspace: Workspace, protection: _Protection, path: str, target: str
) -> str | None:
    """What is wrong with the link at ``path`` to ``target``, or None."""
    outside = (
        "which leads outside the repository; commit the file itself, or link to a path "
        "inside the repository"
    )
    if target.startswith("/"):
        return outside
    # Read as written (`a/../..` escapes even when `a` is a symlink deeper in the tree),
    # and as the kernel resolves it, through the tree's other symlinks.
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    try:
        real = resolve_in_tree(workspace.root, path)
    except SymlinkLoop:
        return "which never resolves (a loop of symlinks); remove it"
    if lexical == ".." or lexical.startswith("../") or real is None:
        return outside
    for where in dict.fromkeys(("" if lexical == "." else lexical, real)):
        if where.split("/")[0] == ".git":
            return "which leads into .git, which is no part of the submission; remove it"
        reason = protection.reason(where) or protection.held_in(where, workspace.files())
        if reason is not None:
            return f"which is protected ({reason}); remove the link"
    return None


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
            "message": f"{counted(count, 'file')} changed; at most {limit} allowed",
        }


def _max_lines_changed(workspace: Workspace) -> Iterator[Violation]:
    limit = workspace.task.constraints.max_lines_changed
    count = sum(c.added + c.removed for c in workspace.diff_stats().values())
    if limit is not None and count > limit:
        yield {
            "value": count,
            "limit": limit,
            "message": (
                f"{counted(count, 'line')} changed (added + removed); at most {limit} allowed"
            ),
        }


def _forbidden_patterns(workspace: Workspace) -> Iterator[Violation]:
    patterns = [
        re.compile(p, re.MULTILINE) for p in workspace.task.constraints.forbidden_patterns or ()
    ]
    for path, change in workspace.diff_stats().items():
        # Symlinks are skipped: what they point to is checked as a file of its own.
        if change.status == "D" or change.binary or not workspace.is_regular_file(path):
            continue
        texts, problem = readings(path, workspace.read_bytes(path))
        if problem is not None:
            yield {"path": path, "message": f"{shown_path(path)}: {problem}"}
        for pattern in patterns:
            yield from _matches(path, pattern, texts)


def _matches(path: str, pattern: re.Pattern[str], texts: list[str]) -> Iterator[Violation]:
    lines = {text.count("\n", 0, m.start()) + 1 for text in texts for m in pattern.finditer(text)}
    for line in sorted(lines):
        yield {
            "path": path,
            "line": line,
            "pattern": pattern.pattern,
            "message": f"{shown_path(path)}:{line}: forbidden pattern {pattern.pattern!r}",
        }


def readings(path: str, data: bytes) -> tuple[list[str], str | None]:
    """The texts a pattern must be searched in: the file read as UTF-8, and also as its
    coding cookie (PEP 263) says when it has one, since that is what Python runs: in
    `# coding: utf-7`, `+AF8AXw-import+AF8AXw-` is `__import__`. With the reason when a
    Python file's cookie names no text encoding or does not decode it (Python refuses
    such a file, but the gate cannot vouch for it)."""
    text = data.decode("utf-8", errors="replace")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if codecs.lookup(encoding).name in ("utf-8", "utf-8-sig"):
            return [text], None
        return [text, data.decode(encoding)], None
    except (SyntaxError, LookupError, UnicodeError) as error:  # `undefined` raises UnicodeError
        if not path.endswith((".py", ".pyw")):
            return [text], None  # a cookie only Python reads, in a file it does not run
        return [text], (
            f"its coding cookie cannot be used to read it ({_cookie_error(error, data)}), so "
            "forbidden_patterns cannot check it; declare a text encoding that decodes it, "
            "such as utf-8"
        )


def _cookie_error(error: SyntaxError | LookupError | UnicodeError, data: bytes) -> str:
    if isinstance(error, SyntaxError):
        return error.msg  # unknown encoding: nonesuch
    if isinstance(error, UnicodeDecodeError):
        line = data.count(b"\n", 0, error.start) + 1
        return f"{error.encoding} cannot decode line {line}: {error.reason}"
    return str(error)  # 'rot13' is not a text encoding...


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
