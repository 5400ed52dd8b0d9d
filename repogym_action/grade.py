"""Grade what the event names: fetch it into a private clone, read the task at the base,
grade the head against the merge base, and turn any failure into a report that says so.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import repogym
from repogym.errors import RepogymError
from repogym.report.build import exception_report, report_dict
from repogym.report.schema import BUILT, Report
from repogym.report.template_files import TemplateFilesError, templates_at, templates_in
from repogym.tree.git import git, tree_entry
from repogym_action.checkout import Checkout, prepare
from repogym_action.commands import Commands
from repogym_action.event import Target
from repogym_action.log import LogProgress
from repogym_action.settings import RunContext, Settings, workspace_link


@dataclass(frozen=True, slots=True, kw_only=True)
class Graded:
    """A grade, or why there is none, as the Action publishes it."""

    report: dict[str, Any]  # as it is written and rendered
    seconds: float  # the fetch and the grade, what the Action cannot make faster
    error: str | None = None  # one line, when there is no grade
    internal: bool = False  # the error is repogym's, not the user's
    # The sources of the `template` input's directory, read before the grade (issue 19).
    templates: Mapping[str, str] | None = None
    # The report as its schema reads it: what the Action itself reads of it (issue 46).
    model: Report = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Built by this run (undecodable bytes of a name kept as they are), or read back
        # and checked strictly already (repogym_action.publish_mode.read_report).
        model = Report.model_validate(self.report, context={BUILT: True})
        object.__setattr__(self, "model", model)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.model.passed)

    @property
    def summary_line(self) -> str:
        if self.error is not None:
            return f"ERROR {self.error}"
        return self.model.summary or ""


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
            checkout = prepare(
                context.workspace,
                target,
                into=scratch / "tree",
                log=out.line,
                env=context.git_env,
            )
        known["merge_base"] = {"sha": checkout.merge_base}
        templates = read_templates(context, settings, checkout)
        grading = repogym.grade(
            checkout.tree,
            base=checkout.base_ref,
            task=repogym.TaskFile(settings.task, fix="or name the task file with the `task` input"),
            hidden=settings.hidden_tests,
            progress=progress,
        )
        report = report_dict(grading)
        for warning in (grading.environment or {}).get("warnings") or ():
            out.warning(warning)  # an image named without a digest (issue 20)
        return Graded(report=report, seconds=time.monotonic() - started, templates=templates)
    except Exception as error:  # the user's to fix, or ours (then the log has the traceback)
        report = exception_report(
            error,
            line=lambda e: out.internal_error(e, "internal error", group="repogym: traceback"),
            **known,
        )
        graded = Graded(
            report=report,
            seconds=time.monotonic() - started,
            error=report["error"]["message"],
            # Not the user's: ours, or an outage (GitHub's, a registry's): exit 3.
            internal=not (isinstance(error, RepogymError) and error.users_to_fix),
        )
        failure = graded.model.error
        if failure is not None and failure.log_tail:  # a Dockerfile's build log, in the log too
            with out.group("repogym: the build log's last lines"):
                out.untrusted(failure.log_tail)
        return graded
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)


def read_templates(
    context: RunContext, settings: Settings, checkout: Checkout
) -> dict[str, str] | None:
    """The sources of the ``template`` input's directory, read as the task is: at the base
    commit, through git (issue 19: the pull request's merge commit is the workspace, so a
    template read there is the pull request's). A directory the base does not have may be
    one a step before this one made in the workspace, if no commit of the pull request's
    has anything at that path. Links are refused wherever the templates come from.

    Raises:
        TemplateFilesError: one line, starting with the input's name.
    """
    if settings.template is None:
        return None
    name = settings.template
    try:
        at_base = templates_at(checkout.tree, checkout.base, name, at=checkout.base_ref)
        if at_base is not None:
            return at_base
        pulls = [c for c in (checkout.head, context.sha) if c and _has_commit(checkout.tree, c)]
        if any(_pull_has(checkout.tree, commit, name) for commit in pulls):
            raise TemplateFilesError(
                f"{name!r} is not a directory at the base ({checkout.base_ref}) and the pull "
                "request's commits have it: a pull request cannot change the templates its "
                "verdict is written by; commit the templates on the base branch"
            )
        link = workspace_link(
            context.workspace / name, context.workspace, "commit the templates on the base branch"
        )
        if link is not None:
            raise TemplateFilesError(f"{name!r} {link}")
        if not (context.workspace / name).is_dir():
            raise TemplateFilesError(
                f"{name!r} is not a directory at the base ({checkout.base_ref}), nor one that "
                f"a step before this one made in the workspace {context.workspace}; commit "
                "the templates on the base branch"
            )
        return templates_in(context.workspace / name, shown=name)
    except TemplateFilesError as error:
        raise TemplateFilesError(f"input `template`: {error.lines[0]}") from None


def workspace_templates(context: RunContext, settings: Settings) -> dict[str, str] | None:
    """The ``template`` input's directory in the workspace, for publish mode: a
    ``workflow_run`` job, whose checkout is the default branch's, not a pull request's."""
    if settings.template is None:
        return None
    try:
        return templates_in(context.workspace / settings.template, shown=settings.template)
    except TemplateFilesError as error:
        raise TemplateFilesError(f"input `template`: {error.lines[0]}") from None


def _pull_has(repo: Path, commit: str, name: str) -> bool:
    """Whether ``commit`` has something at ``name``, or a file or link where one of its
    parent directories would be: git's tree does not look through a committed link
    (`shared -> elsewhere` with `elsewhere/templates/`), the workspace's directory does."""
    parts = PurePosixPath(name).parts
    for depth in range(1, len(parts) + 1):
        entry = tree_entry(repo, commit, "/".join(parts[:depth]))
        if entry is not None and (depth == len(parts) or entry.type != "tree"):
            return True
    return False


def _has_commit(repo: Path, sha: str) -> bool:
    try:
        git(["cat-file", "-e", f"{sha}^{{commit}}"], repo)
    except RepogymError:
        return False
    return True


def _temp(context: RunContext) -> Path:
    context.temp.mkdir(parents=True, exist_ok=True)
    return context.temp
