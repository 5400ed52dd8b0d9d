"""The check runs the Action makes, through PyGithub: started ``in_progress``, then
completed with their annotations (50 a request), or as ``cancelled`` when the run is cut
short.

A module of its own, apart from the pull requests and the sticky comment
(:mod:`repogym_action.github`): :class:`~repogym_action.github.GitHub`, which the rest of
the Action uses, hands its check-run methods to a :class:`Checks` over its own repository
object, and learns from the check run started which app's bot account writes its comments.

:class:`Checks` remembers the check runs it started and has not completed, so that a run
cut short (a cancelled job) can complete them as ``cancelled``: :meth:`Checks.cancel_checks`,
with requests of their own that wait for nothing (no retry, a short timeout).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from github import Auth, Github
from github.CheckRun import CheckRun
from github.Repository import Repository

from repogym_action.retry import ApiError, WaitBudget, call_api, post_once

# GitHub: at most 50 annotations per request; more are sent by further updates.
ANNOTATIONS_PER_REQUEST = 50
# A cancelled run's requests (the runner kills the step a few seconds after the cancel):
# each may take this long, in seconds, and is sent once.
CANCEL_TIMEOUT = 3

T = TypeVar("T")
# How a check run this Action makes is completed.
Conclusion = Literal["success", "failure", "cancelled"]


@dataclass(frozen=True, slots=True)
class CheckRef:
    """A check run the Action made: its id and page."""

    id: int
    html_url: str
    app_slug: str | None = None  # the GitHub App GitHub says made it (the token's)


@dataclass(slots=True)
class _OpenCheck:
    """A check run this client started and has not completed; ``ref`` is None while
    the POST that makes it has no answer yet."""

    name: str
    head_sha: str
    external_id: str
    ref: CheckRef | None = None


class Checks:
    """The check runs of ``repo`` (``repository``, ``owner/name``, on the API at ``api_url``
    as ``token`` sees it) that this Action makes."""

    def __init__(
        self,
        repo: Repository,
        *,
        api_url: str,
        token: str,
        repository: str,
        budget: WaitBudget,
        secondary_wait: float,
    ) -> None:
        self._repo = repo
        self._api_url = api_url
        self._token = token
        self.repository = repository
        self._budget = budget
        self._secondary_wait = secondary_wait
        self._open: list[_OpenCheck] = []
        self.app_slug: str | None = None  # the app GitHub names as the maker of a check run

    def start_check(
        self, *, name: str, head_sha: str, external_id: str, details_url: str
    ) -> CheckRef:
        """A check run ``name`` on ``head_sha``, ``in_progress`` from now on.

        ``external_id`` (the workflow run and attempt) finds it again when the POST
        failed after GitHub made it.
        """
        started = datetime.datetime.now(datetime.timezone.utc)
        opened = _OpenCheck(name=name, head_sha=head_sha, external_id=external_id)

        def create() -> CheckRun:
            return self._repo.create_check_run(
                name=name,
                head_sha=head_sha,
                status="in_progress",
                started_at=started,
                external_id=external_id,
                details_url=details_url,
            )

        def find() -> CheckRun | None:
            runs = self._repo.get_commit(head_sha).get_check_runs(check_name=name)
            return next((r for r in runs if r.external_id == external_id), None)

        self._open.append(opened)  # from before the POST: a cancel may come during it
        try:
            run = post_once(
                f"create check run {name!r}",
                create,
                find,
                budget=self._budget,
                secondary_wait=self._secondary_wait,
            )
        except ApiError:
            self._open.remove(opened)
            raise
        slug = run.app.slug if run.app is not None else None  # set by the answer: no request
        opened.ref = CheckRef(id=run.id, html_url=run.html_url, app_slug=slug)
        if isinstance(slug, str) and slug:
            self.app_slug = slug  # whose bot account writes this token's comments
        return opened.ref

    def finish_check(
        self,
        check: CheckRef,
        *,
        conclusion: Conclusion,
        title: str,
        summary: str,
        text: str,
        annotations: Sequence[dict[str, Any]],
    ) -> None:
        """Complete ``check`` with ``conclusion``; its annotations sent 50 per request,
        the last batch with the completion, so the check is done only with all of them."""
        run = self._repo.get_check_run(check.id)
        batches = list(_batches(annotations, ANNOTATIONS_PER_REQUEST)) or [[]]
        output = {"title": title, "summary": summary, "text": text}
        last = {**output, "annotations": batches[-1]} if batches[-1] else output
        try:
            for batch in batches[:-1]:
                call_api(
                    "update check run",
                    functools.partial(run.edit, output={**output, "annotations": batch}),
                )
            self._complete(run, conclusion, last)
        except ApiError as error:
            # Never leave the check spinning: complete it with what surely fits, then
            # still report the failure.
            short = {
                "title": title,
                "summary": f"The full report could not be sent to GitHub ({error.lines[0]}); "
                "the workflow run's job summary has it.",
            }
            with contextlib.suppress(ApiError):
                self._complete(run, conclusion, short)
                self._completed(check)
            raise
        self._completed(check)

    def _completed(self, check: CheckRef) -> None:
        self._open = [o for o in self._open if o.ref is None or o.ref.id != check.id]

    @staticmethod
    def _complete(run: CheckRun, conclusion: Conclusion, output: dict[str, Any]) -> None:
        done = datetime.datetime.now(datetime.timezone.utc)
        call_api(
            "complete check run",
            lambda: run.edit(
                status="completed", conclusion=conclusion, completed_at=done, output=output
            ),
        )

    def cancel_checks(
        self, *, title: str, summary: str, conclusion: Conclusion = "cancelled"
    ) -> tuple[int, list[str]]:
        """Complete every check run this client started and has not completed as
        ``cancelled`` (or ``conclusion``: ``failure`` after an error nothing else caught,
        issue 19), with ``title`` and ``summary``: how many it completed, and a line for
        each it could not.

        For a cancelled run, so bounded: a client of its own (the run's may be midway
        through a request), no retry, no wait, :data:`CANCEL_TIMEOUT` seconds a request.
        One PATCH each; a check run whose POST had no answer yet is looked for first
        (by name and ``external_id``), and left alone when it is not there.
        """
        client = Github(
            base_url=self._api_url,
            auth=Auth.Token(self._token),
            retry=0,
            timeout=CANCEL_TIMEOUT,
            lazy=True,
            seconds_between_requests=None,
            seconds_between_writes=None,
            user_agent="repogym-action",
        )
        done, problems = 0, []
        try:
            repo = client.get_repo(self.repository)
            for opened in list(self._open):
                try:
                    run = self._cancel_one(repo, opened, title, summary, conclusion)
                except ApiError as error:
                    problems.append(error.lines[0])
                    continue
                self._open.remove(opened)
                done += run
        finally:
            client.close()
        return done, problems

    @staticmethod
    def _cancel_one(
        repo: Any, opened: _OpenCheck, title: str, summary: str, conclusion: Conclusion
    ) -> int:
        """``opened`` completed as ``conclusion``: 1, or 0 when it turns out never made."""
        if opened.ref is not None:
            run = repo.get_check_run(opened.ref.id)  # lazy: no request
        else:
            runs = call_api(
                "look for the check run",
                lambda: list(
                    repo.get_commit(opened.head_sha).get_check_runs(check_name=opened.name)
                ),
            )
            found = [r for r in runs if r.external_id == opened.external_id]
            if not found:
                return 0
            run = found[0]
        done = datetime.datetime.now(datetime.timezone.utc)
        output = {"title": title, "summary": summary}
        call_api(
            f"complete check run as {conclusion}",
            lambda: run.edit(
                status="completed", conclusion=conclusion, completed_at=done, output=output
            ),
        )
        return 1


def _batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
