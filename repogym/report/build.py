"""The JSON report and the plain-text and Markdown renderings of a grade.

The JSON layout is documented in ``docs/report.md``; ``REPORT_VERSION`` changes whenever
a key is renamed or removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from repogym._version import version
from repogym.errors import LOG_LINE, EngineError, RepogymError, TaskError
from repogym.models import GradeResult, format_score
from repogym.report.schema import BUILT, LINE_BREAKING, MAX_TEXT, REPORT_VERSION, ErrorKind, Report
from repogym.shown import show_undecodable, shown_path

if TYPE_CHECKING:
    from repogym.grading import Grading

__all__ = [
    "error_report",
    "exception_report",
    "report_dict",
    "report_model",
    "text_table",
    "to_json",
    "user_error_report",
]

_BREAKS = re.compile(f"[{LINE_BREAKING}]+")


def report_model(grading: Grading) -> Report:
    """Everything the grade used and found, as the report's model (docs/report.md): the
    one schema the report is built by, read back by and rendered from
    (:mod:`repogym.report.schema`). Built from the grade's own values (its components are
    read by attribute), so it is checked as it is made: a component whose message is over
    the schema's bounds fails here, not in the hands of a later reader."""
    task = grading.task
    result = grading.result
    built = {
        "tool": {"version": version()},
        "score": result.score,
        "passed": result.passed,
        "summary": result.summary(),
        "components": result.components,
        "files_changed": result.files_changed,
        "base": {"ref": grading.base_ref, "sha": grading.base},
        "merge_base": {"sha": grading.merge_base},
        "head": {"sha": grading.head},
        "task": {
            "source": task.source,
            "sha256": task.sha256,
            "type": task.type,
            "hidden_tests": _hidden_tests(grading),
            "config": task.model_dump(mode="json"),
        },
        "environment": grading.environment,
    }
    return Report.model_validate(built, strict=False, from_attributes=True, context={BUILT: True})


def report_dict(grading: Grading) -> dict[str, Any]:
    """:func:`report_model` as JSON-ready data, without ``error`` (a grade that finished)."""
    data = report_model(grading).model_dump(mode="python")
    del data["error"]
    return data


def _hidden_tests(grading: Grading) -> str | None:
    """Where hidden tests came from: ``outside`` the repository (``--hidden``), the
    ``task``'s ``tests.hidden`` at the baseline, or None when there were none."""
    if grading.hidden is not None:
        return "outside"
    tests = grading.task.tests
    return "task" if tests is not None and tests.hidden is not None else None


def error_report(kind: ErrorKind, message: str, **known: Any) -> dict[str, Any]:
    """The report of a grade that could not finish: ``kind`` says whose error it is
    (``usage``, ``task`` and ``environment``: the user's to fix; ``internal``: ours),
    ``message`` what failed, in one line. ``known`` adds what was resolved before it
    failed, under the keys of a full report (``base``, ``head``...). A message of
    several lines (an exception's text) is made one, as the schema has it."""
    return {
        "version": REPORT_VERSION,
        "tool": {"name": "repogym", "version": version()},
        "error": {"kind": kind, "message": _BREAKS.sub(" ", message).strip()[:MAX_TEXT]},
        **known,
    }


def user_error_report(error: RepogymError, **known: Any) -> dict[str, Any]:
    """The report of a grade that a :class:`RepogymError` stopped: its kind by whose it is
    to fix (``environment``: the machine's engine or the task's image, issue 20), its
    problems joined in one line, and the log it quotes, if any, as ``error.log_tail``."""
    kind: ErrorKind = "usage"
    if isinstance(error, TaskError):
        kind = "task"
    elif isinstance(error, EngineError):
        kind = "environment"
    problems = [line for line in error.lines if not line.startswith(LOG_LINE)]
    quoted = [line[len(LOG_LINE) :] for line in error.lines if line.startswith(LOG_LINE)]
    report = error_report(kind, "; ".join(problems) or error.lines[0], **known)
    if quoted:
        report["error"]["log_tail"] = "\n".join(quoted)
    return report


def exception_report(
    error: BaseException, *, line: Callable[[BaseException], str] | None = None, **known: Any
) -> dict[str, Any]:
    """The report of a grade that ``error`` stopped, the one way every caller makes it
    (the command line, a batch's lines, the Action): a :class:`RepogymError` is the
    user's to fix (:func:`user_error_report`); anything else is ours (``internal``), in the
    one line ``line`` says of it (by default its type and its text)."""
    if isinstance(error, RepogymError):
        return user_error_report(error, **known)
    said = line(error) if line is not None else f"{type(error).__name__}: {error}"
    return error_report("internal", said, **known)


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
                "–" if c.role.value == "gate" else f"{c.weight:g}",  # as the comment has it
                format_score(c.score),
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
        lines += _reruns_lines(c.name, c.details.get("reruns"))
    failed = [c.name for c in result.components if not c.passed]
    if not result.passed and failed:  # before the score, which can read like a near-pass
        lines.append(f"not passed: {', '.join(failed)} failed")
    lines.append(result.summary())
    return show_undecodable("\n".join(lines) + "\n")


def _reruns_lines(name: str, reruns: Any, most: int = 20) -> list[str]:
    """Each public test the tests grader ran again (issue 47): its class and its runs at
    each side, as the comment's table has them (the first ``most``)."""
    tests = reruns.get("tests", {}) if isinstance(reruns, dict) else {}
    lines = [
        f"{name}: run again: {shown_path(test_id)}: "
        + ", ".join(shown_path(str(t.get(k))) for k in ("class", "runs")).replace("_", " ")
        for test_id, t in list(tests.items())[:most]
        if isinstance(t, dict)
    ]
    if len(tests) > most:
        lines.append(f"{name}: run again: {len(tests) - most} more")
    return lines
