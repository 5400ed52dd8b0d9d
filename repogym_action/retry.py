"""Waiting on GitHub, and failing well: retries of reads and PATCHes after server errors
and rate limits, a POST sent again only when the failed one made nothing, all drawing on
one budget of waiting per run, each wait said in the log; a request that fails in the end
is one :class:`ApiError` line that says what to fix.

GitHub answers a rate limit with 403 or 429, often with ``Retry-After``; without it, it
asks for at least a minute before the next try of a secondary limit. A run waits at most
:data:`MAX_WAIT` seconds in all; a request that would need more fails with one line.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import requests
from github import GithubException, GithubRetry
from urllib3.util.retry import Retry

from repogym.errors import RepogymError

# How many times a read or a PATCH is sent again after a server error or a rate limit,
# and how many times the POST-safe loop sends a POST at most; between two sends of a POST
# after a server error or a lost answer it waits BACKOFF, doubling (0.5, 1, 2, 4 s), so
# that a burst of errors of a few seconds is waited out as it is for reads.
RETRIES = 4
ATTEMPTS = RETRIES + 1
BACKOFF = 0.5
MAX_WAIT = 300.0  # seconds of waiting, in all, per run
SECONDARY_WAIT = 60.0  # a secondary rate limit without Retry-After


T = TypeVar("T")


class ApiError(RepogymError):
    """A request to GitHub's API failed: one line saying which and how to fix it;
    ``status`` is GitHub's answer (None when there was none)."""

    def __init__(self, line: str, *, status: int | None = None, read_only: bool = False) -> None:
        super().__init__(line)
        self.status = status
        # No answer, or a server error, after every retry: GitHub's failure, not the user's.
        self.users_to_fix = status is not None and status < 500
        # The token may not write here: a pull request from a fork gets a read-only one.
        self.read_only = read_only


class WaitTooLong(Exception):
    """Waiting as GitHub asks would pass what a run may wait in all."""


@dataclass
class WaitBudget:
    """The waiting a run may still do, and where to say it waits."""

    total: float = MAX_WAIT
    log: Callable[[str], None] = field(default=lambda line: None)
    spent: float = 0.0

    def wait(self, seconds: float, why: str) -> None:
        """Wait ``seconds`` for ``why``, or fail at once when the budget is spent."""
        seconds = max(0.0, seconds)
        if self.spent + seconds > self.total:
            raise WaitTooLong(
                f"{why}: waiting {seconds:.0f} s more would pass the {self.total:.0f} s "
                "a run may wait for GitHub"
            )
        if seconds:
            self.log(f"GitHub: {why}; waiting {seconds:.1f} s (waited {self.spent:.1f} s so far)")
            time.sleep(seconds)
        self.spent += seconds


class BudgetRetry(GithubRetry):
    """PyGithub's retry (which knows GitHub's rate-limit answers), for reads and PATCH
    only, sleeping through a :class:`WaitBudget`."""

    def __init__(self, *, budget: WaitBudget, **kwargs: Any) -> None:
        self.budget = budget
        kwargs.setdefault("allowed_methods", Retry.DEFAULT_ALLOWED_METHODS | {"GET", "PATCH"})
        kwargs["allowed_methods"] = frozenset(kwargs["allowed_methods"]) - {"POST"}
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> BudgetRetry:
        kw["budget"] = self.budget
        made: BudgetRetry = super().new(**kw)
        return made

    def sleep(self, response: Any = None) -> None:
        after = self.get_retry_after(response) if response is not None else None
        seconds = after if after is not None else self.get_backoff_time()
        status = getattr(response, "status", None)
        why = f"answered {status}" if status else "no answer"
        self.budget.wait(seconds, why)


def rate_limit_wait(error: Exception, secondary: float = SECONDARY_WAIT) -> float | None:
    """How long to wait before sending again a request that ``error`` refused for a rate
    limit (it was not done), or None when ``error`` is no rate limit."""
    if not isinstance(error, GithubException) or error.status not in (403, 429):
        return None
    headers = {k.lower(): v for k, v in (error.headers or {}).items()}
    after = headers.get("retry-after", "")
    if after.isdigit():
        return float(after)
    message = error.data.get("message", "") if isinstance(error.data, dict) else ""
    if error.status == 429 or "rate limit" in str(message).lower():
        if (
            headers.get("x-ratelimit-remaining") == "0"
            and headers.get("x-ratelimit-reset", "").isdigit()
        ):
            return max(1.0, float(headers["x-ratelimit-reset"]) - time.time() + 1)
        return secondary
    return None


def post_once(
    what: str,
    create: Callable[[], T],
    find: Callable[[], T | None],
    *,
    budget: WaitBudget,
    secondary_wait: float = SECONDARY_WAIT,
) -> T:
    """``create()`` (a POST), sent again after a failure only when ``find()`` says that
    the failed one made nothing: a server error or a lost answer may come after the
    work was done. A rate limit refused it before doing it: sent again after the wait
    GitHub asks for, drawn from ``budget``."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return create()
        except (GithubException, requests.RequestException, WaitTooLong) as error:
            wait = rate_limit_wait(error, secondary_wait)
            if wait is not None and attempt <= RETRIES:
                call_api(what, functools.partial(budget.wait, wait, f"{what}: rate limited"))
                continue
            if not _maybe_done(error) or attempt >= ATTEMPTS:
                raise api_error(what, error) from None
            status = error.status if isinstance(error, GithubException) else None
            why = f"{what} answered {status}" if status else f"{what}: no answer"
        made = call_api(f"{what} (looking for it after a failure)", find)
        if made is not None:
            return made
        call_api(what, functools.partial(budget.wait, BACKOFF * 2 ** (attempt - 1), why))


def _maybe_done(error: Exception) -> bool:
    """Whether a failed POST may still have been done: no answer, or a server error."""
    if isinstance(error, GithubException):
        return error.status >= 500
    return True


def call_api(what: str, action: Callable[[], T]) -> T:
    """``action()`` with API failures as one :class:`ApiError` line."""
    try:
        return action()
    except (GithubException, requests.RequestException, WaitTooLong) as error:
        raise api_error(what, error) from None


# What to change when GitHub refuses, by status.
_FIXES = {
    401: "the token is not valid: check the `github-token` input",
    403: "the token may not do this: give the job `permissions:` with `checks: write` and "
    "`pull-requests: write` (a pull request from a fork gets a read-only token)",
    404: "not found with this token: check the repository and the `github-token` input",
    422: "GitHub refused the content",
}


def api_error(what: str, error: Exception) -> ApiError:
    """``error`` of the request ``what`` as one :class:`ApiError` line."""
    if isinstance(error, GithubException):
        message = error.data.get("message") if isinstance(error.data, dict) else ""
        read_only = error.status == 403 and "not accessible by integration" in str(message)
        return ApiError(error_line(what, error), status=error.status, read_only=read_only)
    return ApiError(error_line(what, error))


def error_line(what: str, error: Exception) -> str:
    """What went wrong with the request ``what``, and how to fix it, in one line."""
    if isinstance(error, GithubException):
        message = error.data.get("message") if isinstance(error.data, dict) else None
        fix = _FIXES.get(error.status, "")
        said = f": {message}" if message else ""
        return f"GitHub API: {what} answered {error.status}{said}" + (f"; {fix}" if fix else "")
    if isinstance(error, requests.exceptions.RetryError):
        # urllib3 gave up retrying: the answers were server errors every time.
        cause = error.args[0] if error.args else error
        reason = getattr(cause, "reason", None) or cause
        return f"GitHub API: {what} failed after {RETRIES + 1} attempts: {reason}"
    if isinstance(error, WaitTooLong):
        return f"GitHub API: {what} failed: {error}"
    return f"GitHub API: {what} failed: {type(error).__name__}: {error}"
