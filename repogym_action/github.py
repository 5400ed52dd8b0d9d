"""What the Action reads from and writes to GitHub, through PyGithub.

Every request goes to ``GITHUB_API_URL`` (GitHub Enterprise Server included) with the
token only; the token is never logged. Requests that read, and PATCHes (which set a
state, so sending one twice does no harm), are retried on a server error; a POST never
is blindly: a POST that failed may have been done, so before sending it again the
Action looks for what it would have made (its comment by the marker, its check run by
name and ``external_id``), and sends it again only when that is not there.

The sticky comment is the Action's own only when its author is exactly the account the
token writes as (issue 19): the user of a personal token (``GET /user``), else the bot
account of the GitHub App whose installation token it is, ``<slug>[bot]``: the app GitHub
names as the maker of the check run this run started, or, with no check run,
``github-actions[bot]`` (a workflow's ``GITHUB_TOKEN``; an installation token cannot ask
who it is). A comment of any other account, a bot's included, is never taken for its own.

The client remembers the check runs it started and has not completed, so that a run
cut short (a cancelled job) can complete them as ``cancelled``: :meth:`GitHub.cancel_checks`,
with requests of their own that wait for nothing (no retry, a short timeout).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import logging
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from github import Auth, Github, GithubException
from github.CheckRun import CheckRun
from github.Issue import Issue
from github.IssueComment import IssueComment

from repogym_action.event import PullRequest
from repogym_action.retry import (
    RETRIES,
    SECONDARY_WAIT,
    ApiError,
    BudgetRetry,
    WaitBudget,
    call_api,
    post_once,
)

# GitHub: at most 50 annotations per request; more are sent by further updates.
ANNOTATIONS_PER_REQUEST = 50
# A cancelled run's requests (the runner kills the step a few seconds after the cancel):
# each may take this long, in seconds, and is sent once.
CANCEL_TIMEOUT = 3
# Who writes with a workflow's GITHUB_TOKEN (an installation token, which GET /user refuses).
ACTIONS_BOT = "github-actions[bot]"

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


def comment_marker(check_name: str, run: str) -> tuple[str, str]:
    """The hidden first line of the Action's comment, and the part of it every run of
    this configuration shares (what ``update`` finds a comment by).

    The line names the check, so that two configurations on one repository (two check
    names) keep a comment each, and the run, so that a POST that failed can be looked for.
    Both are percent-encoded: they can neither end the HTML comment nor fake another one.
    """
    shared = f'<!-- repogym-action:comment check="{urllib.parse.quote(check_name, safe="")}" '
    return f'{shared}run="{urllib.parse.quote(run, safe="")}" -->', shared


class GitHub:
    """The repository ``owner/name`` on the API at ``api_url``, as ``token`` sees it."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        repository: str,
        seconds_between_writes: float = 1.0,
        timeout: int = 30,
        budget: WaitBudget | None = None,
        secondary_wait: float = SECONDARY_WAIT,
    ) -> None:
        # GitHub asks for a pause between writes; PyGithub keeps it. Its default retry also
        # retries POST, which could post a comment twice: here only reads and PATCH are.
        self._budget = budget or WaitBudget()
        self._secondary_wait = secondary_wait
        self._api_url = api_url.rstrip("/")
        self._token = token
        self._open: list[_OpenCheck] = []
        retry = BudgetRetry(
            budget=self._budget,
            total=RETRIES,
            backoff_factor=0.5,
            secondary_rate_wait=secondary_wait,
        )
        self._github = Github(
            base_url=api_url.rstrip("/"),
            auth=Auth.Token(token),
            retry=retry,
            timeout=timeout,
            per_page=100,
            lazy=True,
            seconds_between_writes=seconds_between_writes,
            user_agent="repogym-action",
        )
        # PyGithub logs a refused request (GET /user with an installation token is
        # expected to be): the Action says itself what failed, in one line.
        logging.getLogger("github").addHandler(logging.NullHandler())
        logging.getLogger("github").propagate = False
        self.repository = repository
        self._repo = self._github.get_repo(repository)
        self._login: str | bool | None = False  # a personal token's user; False: not asked yet
        self._app_slug: str | None = None  # the app of an installation token, once known
        # Set when a posted comment's author was not the account expected (no check run).
        self.author_note: str | None = None

    def close(self) -> None:
        self._github.close()

    # -- pull requests --------------------------------------------------------------

    def pull(self, number: int) -> PullRequest:
        """The pull request ``number`` as it is now."""
        try:
            return call_api(
                f"GET pull request #{number}", lambda: _pull_request(self._repo.get_pull(number))
            )
        except ApiError as error:
            if error.status != 404:
                raise
            raise ApiError(
                f"GitHub API: GET pull request #{number} answered 404: {self.repository} has "
                f"no pull request #{number} that this token can read; check the number (the "
                "`pull-request` input, or the workflow's dispatch input) and the "
                "`github-token` input",
                status=404,
            ) from None

    def find_pulls(self, head_sha: str, head_repository: str) -> list[PullRequest]:
        """The open pull requests whose head is ``head_sha`` from ``head_repository``
        (``owner/name``, a fork's included): several when one head is proposed to
        several bases."""

        def find() -> list[PullRequest]:
            found = []
            for pull in self._repo.get_pulls(state="open"):
                repo = pull.head.repo
                same = repo is not None and repo.full_name.lower() == head_repository.lower()
                if pull.head.sha == head_sha and same:
                    found.append(_pull_request(pull))
            return found

        return call_api("list open pull requests", find)

    def pull_files(self, number: int) -> tuple[list[str], int]:
        """The paths pull request ``number`` changes, as GitHub lists them (at most 3,000),
        and how many files it changes in all."""

        def read() -> tuple[list[str], int]:
            pull = self._repo.get_pull(number)
            return [file.filename for file in pull.get_files()], pull.changed_files

        return call_api(f"list the files of pull request #{number}", read)

    # -- check runs -----------------------------------------------------------------

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
            self._app_slug = slug  # whose bot account writes this token's comments
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

    # -- the sticky comment ---------------------------------------------------------

    def find_comment(self, number: int, marker: str) -> IssueComment | None:
        """The last comment on ``number`` that starts with ``marker`` and was written by
        whoever the token acts as; comments are read through every page, oldest first."""
        issue = self._repo.get_issue(number)
        found = None
        for comment in call_api("list comments", lambda: list(issue.get_comments())):
            body = comment.body or ""
            if body.startswith(marker) and self._written_by_us(comment):
                found = comment
        return found

    def update_comment(self, number: int, body: str, *, shared: str, marker: str) -> str:
        """Edit the last comment that starts with ``shared`` to ``body``, or post ``body``
        (which starts with ``marker``) when there is none; the comment's URL."""
        existing = self.find_comment(number, shared)
        if existing is not None:
            call_api("update comment", lambda: existing.edit(body))
            return str(existing.html_url)
        return self.new_comment(number, body, marker)

    def new_comment(self, number: int, body: str, marker: str) -> str:
        """Post ``body`` (which starts with ``marker``, unique to this run) as a new
        comment; the comment's URL."""
        issue: Issue = self._repo.get_issue(number)

        def find() -> IssueComment | None:
            return self.find_comment(number, marker)

        made = post_once(
            "post comment",
            lambda: issue.create_comment(body),
            find,
            budget=self._budget,
            secondary_wait=self._secondary_wait,
        )
        if made.user is not None:
            self.author_note = self._learn_author(made.user.login)
        return str(made.html_url)

    def account(self) -> tuple[str, str]:
        """The account this token writes as, ``(login, type)``: a personal token's user
        (``GET /user``); for an installation token, which ``GET /user`` refuses, the bot
        account of its app, ``<slug>[bot]``, the app known from the check run this run
        made, else the workflow token's ``github-actions[bot]``."""
        if self._app_slug is not None and not isinstance(self._login, str):
            # It made a check run, which only an app's token may: no need to ask.
            return f"{self._app_slug}[bot]", "Bot"
        if self._login is False:
            try:
                self._login = self._github.get_user().login
            except GithubException:
                self._login = None
        if isinstance(self._login, str):
            return self._login, "User"
        return ACTIONS_BOT, "Bot"

    def _written_by_us(self, comment: IssueComment) -> bool:
        """Whether ``comment`` was written by exactly this token's account (issue 19: any
        Bot account used to count, so another app echoing a contributor's text, marker
        and all, had the sticky comment)."""
        user = comment.user
        if user is None:
            return False
        login, kind = self.account()
        return bool(user.login == login and user.type == kind)

    def _learn_author(self, login: str) -> str | None:
        """The author of the comment this token just posted, ``login``: when it is not
        the account :meth:`account` said (an app's token in a run without a check run),
        it is from now on, and the line saying so is returned."""
        expected, _ = self.account()
        if login == expected or isinstance(self._login, str) or not login.endswith("[bot]"):
            return None
        self._app_slug = login.removesuffix("[bot]")
        return (
            f"the token writes as {login}, not {expected}: with `check-run: false` the Action "
            "cannot tell an app's account before it posts, so this run's earlier comments "
            "were not found and a new one was posted; keep `check-run: true` with an app's token"
        )


def _pull_request(pull: Any) -> PullRequest:
    """PyGithub's pull request as the Action's."""
    return PullRequest(
        number=pull.number,
        base_ref=pull.base.ref,
        base_sha=pull.base.sha,
        head_ref=pull.head.ref,
        head_sha=pull.head.sha,
        base_repo=pull.base.repo.full_name,
        head_repo=pull.head.repo.full_name if pull.head.repo is not None else None,
        html_url=pull.html_url,
        state=pull.state,
        default_branch=pull.base.repo.default_branch,
    )


def _batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
