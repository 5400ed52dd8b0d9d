"""Grade what the event names: fetch it into a private clone, read the task at the base,
grade the head against the merge base, and turn any failure into a report that says so.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import repogym
from repogym.errors import RepogymError, TaskError
from repogym.report import ErrorKind, error_report, report_dict
from repogym.workspace import task_at
from repogym_action.checkout import prepare
from repogym_action.commands import Commands
from repogym_action.event import Target
from repogym_action.log import LogProgress
from repogym_action.settings import RunContext, Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class Graded:
    """A grade, or why there is none, as the Action publishes it."""

    report: dict[str, Any]
    seconds: float  # the fetch and the grade, what the Action cannot make faster
    error: str | None = None  # one line, when there is no grade
    internal: bool = False  # the error is repogym's, not the user's

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.report.get("passed"))

    @property
    def summary_line(self) -> str:
        if self.error is not None:
            return f"ERROR {self.error}"
        return str(self.report.get("summary") or "")


def grade_target(context: RunContext, settings: Settings, target: Target, out: Commands) -> Graded:
    """Grade ``target`` in a private clone under ``RUNNER_TEMP``, removed afterwards."""
    started = time.monotonic()
    known = {
        "base": {"ref": target.base_ref, "sha": target.base_sha},
        "head": {"sha": target.head_sha},
    }
    scratch = Path(tempfile.mkdtemp(prefix="repogym-action-", dir=_temp(context)))
    progress = LogProgress(out)
    try:
        with out.group("repogym: fetching base and head"):
            checkout = prepare(context.workspace, target, into=scratch / "tree", log=out.line)
        known["merge_base"] = {"sha": checkout.merge_base}
        task = task_at(
            checkout.tree,
            checkout.base,
            checkout.base_ref,
            path=settings.task,
            fix="or name the task file with the `task` input",
        )
        grading = repogym.grade(
            checkout.tree,
            base=checkout.base_ref,
            task=task,
            hidden=settings.hidden_tests,
            progress=progress,
        )
        report = report_dict(grading)
        return Graded(report=report, seconds=time.monotonic() - started)
    except RepogymError as error:
        kind: ErrorKind = "task" if isinstance(error, TaskError) else "usage"
        message = str(error).replace("\n", "; ")
        report = error_report(kind, message, **known)
        return Graded(report=report, seconds=time.monotonic() - started, error=message)
    except Exception as error:  # repogym's fault: the report says so, the log has the traceback
        with out.group("repogym: traceback"):
            out.untrusted(traceback.format_exc())
        message = f"internal error: {type(error).__name__}: {error}"
        report = error_report("internal", message, **known)
        return Graded(
            report=report, seconds=time.monotonic() - started, error=message, internal=True
        )
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _temp(context: RunContext) -> Path:
    context.temp.mkdir(parents=True, exist_ok=True)
    return context.temp
