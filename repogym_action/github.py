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

The check runs are :mod:`repogym_action.checks`'s: :class:`GitHub`, the one client the rest
of the Action uses, holds them as ``checks`` (a :class:`~repogym_action.checks.Checks` over
the same repository object), and learns from the check run started there which app's bot
account writes its comments.
"""

from __future__ import annotations

import logging
import urllib.parse
from typing import Any

from github import Auth, Github, GithubException
from github.Issue import Issue
from github.IssueComment import IssueComment

from repogym_action.checks import Checks
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

# Who writes with a workflow's GITHUB_TOKEN (an installation token, which GET /user refuses).
ACTIONS_BOT = "github-actions[bot]"


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
        # Its check runs: the app GitHub names as their maker is whose bot account writes
        # this token's comments (account()).
        self.checks = Checks(
            self._repo,
            api_url=api_url.rstrip("/"),
            token=token,
            repository=repository,
            budget=self._budget,
            secondary_wait=secondary_wait,
        )
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
        slug = self._app_slug or self.checks.app_slug
        if slug is not None and not isinstance(self._login, str):
            # It made a check run, which only an app's token may: no need to ask.
            return f"{slug}[bot]", "Bot"
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
