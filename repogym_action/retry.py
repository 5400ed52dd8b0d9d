"""Waiting on GitHub: retries of reads and PATCHes after server errors and rate limits,
all drawing on one budget of waiting per run, each wait said in the log.

GitHub answers a rate limit with 403 or 429, often with ``Retry-After``; without it, it
asks for at least a minute before the next try of a secondary limit. A run waits at most
:data:`MAX_WAIT` seconds in all; a request that would need more fails with one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from github import GithubException, GithubRetry
from urllib3.util.retry import Retry

MAX_WAIT = 300.0  # seconds of waiting, in all, per run
SECONDARY_WAIT = 60.0  # a secondary rate limit without Retry-After


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
