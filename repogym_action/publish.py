"""What the Action leaves behind: the report file, the outputs, the job summary, the
check run and the sticky comment, each rendered from the report by the templates.

Local files come first (they cannot fail for GitHub's reasons), then the check run
(what branch protection reads), then the comment. One that fails does not stop the
others; the first failure is raised at the end.

A verdict belongs to its pull request's (head, base) pair (issue 19). The check run is
named for its base when that is not the default branch (:attr:`Publication.check_name`),
and says in its summary which base it graded. Before completing the check run and before
commenting, the pull request is read again: retargeted to another base while this run
graded, the check run is completed ``cancelled`` (never ``success``, nor ``neutral``,
which branch protection counts as passing) and the comment is left to the run grading
against the new base; the head moved on, the comment is left to the newer run. A new
commit on the same base branch is not a move: no ``pull_request`` event grades again for
it, so the verdict is posted, said against the base commit it graded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repogym.errors import RepogymError
from repogym.models import format_score
from repogym.report.build import error_report, to_json
from repogym.report.redact import redacted
from repogym.report.render import code, md
from repogym.report.render_process import render_texts
from repogym.report.schema import Report
from repogym.tree.atomic import write_atomic
from repogym.tree.links import LinkInTree
from repogym_action.annotations import one_line, to_annotations
from repogym_action.checks import CheckRef, Conclusion
from repogym_action.commands import Commands, append_summary, write_outputs
from repogym_action.event import PullRequest, Target
from repogym_action.github import GitHub, comment_marker
from repogym_action.grade import Graded
from repogym_action.retry import ApiError
from repogym_action.settings import CommentMode, RunContext, Settings

# GitHub's limits, in characters; render() counts UTF-8 bytes, never fewer.
CHECK_TEXT_LIMIT = 65535
COMMENT_LIMIT = 65536
JOB_SUMMARY_LIMIT = 1024 * 1024 - 1024  # the runner drops a step summary over 1 MiB
READ_ONLY = (
    "the token may not write check runs here (a pull request from a fork gets a read-only "
    "GITHUB_TOKEN): the change is graded, and the job summary, the outputs and the report "
    "have the verdict, but nothing is posted. To post on pull requests from forks, upload "
    "the report (input `report:`, then actions/upload-artifact) and post it from a "
    "`workflow_run` workflow that runs this Action with `mode: publish` (README, "
    '"Pull requests from forks", and examples/workflows/fork-*.yml)'
)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(kw_only=True)
class Publication:
    """Where this run publishes, and the check run once it is started."""

    context: RunContext
    settings: Settings
    target: Target
    github: GitHub
    check: CheckRef | None = None
    read_only: bool = False  # the token may not write here (a fork's pull request)
    problems: list[RepogymError] = field(default_factory=list)

    @property
    def check_name(self) -> str:
        """The check run's name: `check-name`, with the base in brackets when the base is
        not the repository's default branch (or that is not known): ``repogym (release)``.

        Issue 19: one head in pull requests to two bases (or a pull request retargeted)
        shared one check, and a grade against a lax branch turned green the check that
        the default branch's protection requires. A rule on the default branch requires
        `check-name`, which only a grade against that branch reports; a rule on another
        branch requires `check-name (<branch>)`.
        """
        target = self.target
        if target.default_branch is not None and target.base_ref == target.default_branch:
            return self.settings.check_name
        base = target.base_ref[:12] if _SHA.fullmatch(target.base_ref) else target.base_ref
        return f"{self.settings.check_name} ({base})"

    @property
    def run_key(self) -> str:
        """This job of this attempt of this workflow run."""
        c = self.context
        return f"{c.run_id}-{c.run_attempt}-{c.job}"

    def start(self, out: Commands) -> None:
        """The check run, ``in_progress``, on the head: the pull request shows it at once."""
        if not self.settings.check_run:
            return
        try:
            self.check = self.github.checks.start_check(
                name=self.check_name,
                head_sha=self.target.head_sha,
                external_id=self.run_key,
                details_url=self.context.run_url,
            )
        except ApiError as error:
            if not error.read_only:
                raise
            self.read_only = True
            out.notice(READ_ONLY)
            return
        out.line(f"check run {self.check_name}: {self.check.html_url}")


def publish(publication: Publication, graded: Graded, out: Commands) -> None:
    """Everything this run leaves; raises the first :class:`RepogymError` of them.

    When hidden tests ran, all of it is the report as
    :func:`~repogym.report.redact.redacted` makes it (issue 19): no text the run produced,
    counts and the public ids only."""
    p = publication
    graded = Graded(
        report=dict(redacted(graded.report)),
        seconds=graded.seconds,
        error=graded.error,
        internal=graded.internal,
        templates=graded.templates,
    )
    report = graded.report
    links = {**_links(p), **_commit_links(p, graded.model)}
    texts = _render(p, report, links, graded.templates)
    if texts is None:  # the templates failed: publish that, with the built-in ones
        line = p.problems[-1].lines[0]
        report = error_report("usage", line, **_known(report))
        graded = Graded(report=report, seconds=graded.seconds, error=line)
        texts = _render(p, report, links, None) or _plain(p, graded.model)
    _step(p, "report", lambda: _write_report(p, report))
    _step(p, "outputs", lambda: _write_outputs(p, graded))
    _step(p, "job summary", lambda: append_summary(p.context.summary_path, texts["job_summary"]))
    if p.check is not None:
        _step(p, "check run", lambda: _finish_check(p, graded, texts))
    commenting = p.settings.comment is not CommentMode.OFF and not p.read_only
    if p.target.comment and p.target.pull is not None and commenting:
        _step(p, "comment", lambda: _comment_unless_read_only(p, texts["comment"], out))
    if p.problems:
        raise p.problems[0]


def _render(
    p: Publication,
    report: dict[str, Any],
    links: dict[str, str],
    templates: Mapping[str, str] | None,
) -> dict[str, str] | None:
    """The four texts, or None (the failure in ``p.problems``). The templates of the
    ``template`` input render in a child process under a deadline; whatever they do is
    one line (issue 19)."""
    marker, _ = comment_marker(p.settings.check_name, p.run_key)
    limits = {
        "comment": ("comment.md.j2", COMMENT_LIMIT - len(marker.encode()) - 1),
        # Room for the lines _finish_check puts before and after: the base graded against,
        # a retargeted pull request (three refs of up to 255 bytes), annotations left out.
        "check_summary": ("check_summary.md.j2", CHECK_TEXT_LIMIT - 2000),
        "check_text": ("check_text.md.j2", CHECK_TEXT_LIMIT),
        "job_summary": ("job_summary.md.j2", JOB_SUMMARY_LIMIT),
    }
    try:
        texts = render_texts(report, limits, templates=templates, links=links)
    except RepogymError as error:
        p.problems.append(error)
        return None
    except Exception as error:  # a bug of ours in rendering: still publish, with less
        p.problems.append(RepogymError(f"rendering failed: {type(error).__name__}: {error}"))
        return None
    texts["comment"] = f"{marker}\n{texts['comment']}"
    return texts


def _plain(p: Publication, report: Report) -> dict[str, str]:
    """What is posted when even the built-in templates failed: the error, on one line."""
    line = one_line(report.error.message if report.error else "rendering failed", 1000)
    text = f"### ⚠️ repogym could not grade this change\n\n{md(line)}\n"
    texts = dict.fromkeys(("comment", "check_summary", "check_text", "job_summary"), text)
    marker, _ = comment_marker(p.settings.check_name, p.run_key)
    texts["comment"] = f"{marker}\n{text}"
    return texts


def _links(p: Publication) -> dict[str, str]:
    c = p.context
    links = {"workflow_run": c.run_url}
    if p.check is not None:
        links["check_run"] = p.check.html_url
    return links


def _commit_links(p: Publication, report: Report) -> dict[str, str]:
    base = f"{p.context.server_url}/{p.context.repository}/commit/"
    shas = {"base": report.base.sha, "merge_base": report.merge_base.sha, "head": report.head.sha}
    return {k: base + v for k, v in shas.items() if isinstance(v, str) and _SHA.fullmatch(v)}


def _known(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in ("base", "merge_base", "head") if k in report}


def _step(p: Publication, what: str, action: Any) -> None:
    try:
        action()
    except RepogymError as error:
        p.problems.append(error)
    except OSError as error:
        p.problems.append(RepogymError(f"{what}: {error.strerror or error}: {error.filename}"))


def _write_report(p: Publication, report: dict[str, Any]) -> None:
    # Root writes it, and the workspace is the pull request's checkout: no symlink of it
    # is followed, even one made since the input was checked (issue 19).
    path = p.settings.report_path(p.context.temp)
    try:
        write_atomic(path, to_json(report), tree=p.context.workspace)
    except LinkInTree as error:
        raise RepogymError(f"input `report`: {path}: {error.problem}") from None


def _write_outputs(p: Publication, graded: Graded) -> None:
    score = graded.model.score
    write_outputs(
        p.context.output_path,
        {
            "score": format_score(score, 3) if isinstance(score, (int, float)) else "",
            "passed": "true" if graded.passed else "false",
            "summary": graded.summary_line,
            "report": str(p.settings.report_path(p.context.temp)),
            "check-url": p.check.html_url if p.check is not None else "",
        },
    )


def _finish_check(p: Publication, graded: Graded, texts: dict[str, str]) -> None:
    assert p.check is not None
    made, left = to_annotations(graded.model)
    summary = f"{_graded_against(p, graded.model)}\n\n{texts['check_summary']}"
    if left:
        summary += (
            f"\n{left} more findings with a file are not annotations here; the report has them.\n"
        )
    conclusion: Conclusion = "success" if graded.passed else "failure"
    title = one_line(graded.summary_line, 255) or "repogym"
    retargeted = _retargeted(p)
    if retargeted is not None:
        # Withdrawn, not `neutral`: branch protection counts a neutral check as passing,
        # and the newest check run of a name is the one it reads (issue 19).
        conclusion, made = "cancelled", []
        title = one_line(f"repogym: stale, graded against {p.target.base_ref}", 255)
        summary = f"{retargeted}.\n\n{summary}"
    p.github.checks.finish_check(
        p.check,
        conclusion=conclusion,
        title=title,
        summary=summary,
        text=texts["check_text"],
        annotations=made,
    )


def _graded_against(p: Publication, report: Report) -> str:
    """The line that says which base the verdict belongs to."""
    ref = report.base.ref if report.base.ref is not None else p.target.base_ref
    sha = report.base.sha if report.base.sha is not None else p.target.base_sha
    at = f" at {code(sha[:12])}" if sha else ""
    return f"Graded against {code(ref, 255)}{at}, head {code(p.target.head_sha[:12])}."


def _retargeted(p: Publication, now: PullRequest | None = None) -> str | None:
    """Why this run's verdict no longer belongs to its pull request, when its base
    branch changed while it graded (read again unless ``now`` is given); else None.

    A pull request that cannot be read here is not called retargeted: the comment, which
    reads it again, reports that failure."""
    graded = p.target.pull
    if graded is None:
        return None
    if now is None:
        try:
            now = p.github.pull(graded.number)
        except ApiError:
            return None
    if now.base_ref == graded.base_ref:
        return None
    now_ref, then_ref = code(now.base_ref, 255), code(p.target.base_ref, 255)
    return (
        f"pull request #{graded.number} now targets {now_ref}: this run graded it "
        f"against {then_ref}, so its verdict is withdrawn; the run grading "
        f"against {now_ref} gives the verdict"
    )


def _comment_unless_read_only(p: Publication, body: str, out: Commands) -> None:
    try:
        _comment(p, body, out)
    except ApiError as error:
        if not error.read_only:
            raise
        out.notice(READ_ONLY.replace("check runs", "comments"))


def _comment(p: Publication, body: str, out: Commands) -> None:
    """The sticky comment, unless the pull request moved on while this run graded: then
    the run grading the newer head, or against the new base, writes it, and an old
    verdict never replaces a new one (issue 19 for the base)."""
    assert p.target.pull is not None
    number = p.target.pull.number
    now = p.github.pull(number)
    if now.head_sha != p.target.head_sha:
        out.notice(
            f"pull request #{number} moved on to {now.head_sha[:12]} while this run graded "
            f"{p.target.head_sha[:12]}: its comment is left to the run that grades the newer commit"
        )
        return
    retargeted = _retargeted(p, now)
    if retargeted is not None:
        out.notice(f"{retargeted}: the comment is left to that run")
        return
    graded_sha = p.target.pull.base_sha
    if now.base_sha != graded_sha:
        out.line(
            f"{now.base_ref} is now at {now.base_sha[:12]} (this run graded against "
            f"{graded_sha[:12]}): a commit on the base grades nothing again, so the verdict "
            "is posted, said against the base commit it graded"
        )
    marker, shared = comment_marker(p.settings.check_name, p.run_key)
    if p.settings.comment is CommentMode.NEW:
        url = p.github.new_comment(number, body, marker)
    else:
        url = p.github.update_comment(number, body, shared=shared, marker=marker)
    out.line(f"comment: {url}")
    if p.github.author_note is not None:
        out.notice(p.github.author_note)
