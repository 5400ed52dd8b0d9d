"""The fake GitHub API's state and endpoints: what each call does, as GitHub does it.

`State` keeps one repository's pulls, comments and check runs and answers the operations of
the trimmed OpenAPI description (its path templates are the keys of `State.routes`). The
rules GitHub enforces beyond the schema (a comment of at most 65,536 characters, annotation
sizes, a conclusion when completed) answer 422 and name the rule, as `Response.problems`.
Requests arrive here already checked against the description and authenticated
(tests/action/fake_github.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from tests.action import fake_objects as gh
from tests.action.fake_objects import CheckRun, Comment, Pull, Site

DOCS = "https://docs.github.com/rest"
COMMENT_LIMIT = 65536
ANNOTATION_TEXT_LIMIT = 64 * 1024  # bytes, for message and raw_details
ANNOTATION_TITLE_LIMIT = 255


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    status: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # the GitHub rules a request broke (a 422)


def error(status: int, message: str, **more: Any) -> Response:
    """GitHub's error body: message, documentation_url, status."""
    body = {"message": message, "documentation_url": DOCS, "status": str(status), **more}
    return Response(status=status, body=body)


def rejected(*problems: str) -> Response:
    """422 Validation Failed for rules GitHub checks beyond the schema."""
    errors = [{"resource": "Request", "code": "invalid", "message": p} for p in problems]
    response = error(422, "Validation Failed", errors=errors)
    return Response(status=422, body=response.body, problems=problems)


Handler = Callable[[Mapping[str, str], Mapping[str, list[str]], Any], Response]


class State:
    """One repository on the fake GitHub, and who the token is: a personal token's user
    (``user_login``), a GitHub App's installation token (``app_slug``), else a workflow's
    GITHUB_TOKEN (the GitHub Actions app)."""

    def __init__(
        self,
        *,
        site: Site,
        repository: str,
        user_login: str | None,
        app_slug: str = gh.ACTIONS_SLUG,
    ) -> None:
        self.site = site
        self.repository = repository
        self.user_login = user_login
        self.app_slug = app_slug
        self.pulls: dict[int, Pull] = {}
        self.comments: dict[int, Comment] = {}
        self.runs: dict[int, CheckRun] = {}
        self._next_comment = 1_000_001
        self._next_run = 2_000_001
        self.routes: dict[tuple[str, str], Handler] = {
            ("GET", "/repos/{owner}/{repo}"): self.get_repository,
            ("GET", "/repos/{owner}/{repo}/pulls"): self.list_pulls,
            ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"): self.get_pull,
            ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files"): self.list_pull_files,
            ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): self.list_comments,
            ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): self.create_comment,
            ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): self.update_comment,
            ("GET", "/user"): self.get_user,
            ("POST", "/repos/{owner}/{repo}/check-runs"): self.create_check_run,
            ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"): self.update_check_run,
            ("GET", "/repos/{owner}/{repo}/commits/{ref}"): self.get_commit,
            ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"): self.list_check_runs,
        }

    @property
    def author(self) -> tuple[str, str]:
        """Who the token writes as: the PAT's user, else the app's bot account,
        ``<slug>[bot]`` (github-actions[bot] for GITHUB_TOKEN)."""
        if self.user_login:
            return self.user_login, "User"
        return f"{self.app_slug}[bot]", "Bot"

    def answer(
        self,
        method: str,
        template: str,
        params: Mapping[str, str],
        *,
        query: Mapping[str, list[str]],
        body: Any,
    ) -> Response:
        """The answer to an operation of the description; 404 for another repository."""
        named = f"{params.get('owner')}/{params.get('repo')}"
        if "owner" in params and named.lower() != self.repository.lower():
            return error(404, "Not Found")
        return self.routes[(method, template)](params, query, body)

    def add_comment(self, number: int, body: str, *, login: str, type: str) -> Comment:
        if number not in self.pulls:
            raise ValueError(f"pull {number}: add_pull({number}, ...) first")
        comment = Comment(id=self._next_comment, number=number, body=body, login=login, type=type)
        self._next_comment += 1
        self.comments[comment.id] = comment
        return comment

    # The endpoints, in the order of State.routes.

    def get_repository(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        return Response(status=200, body=gh.repository(self.site, self.repository))

    def list_pulls(
        self, params: Mapping[str, str], query: Mapping[str, list[str]], body: Any
    ) -> Response:
        """Open pull requests, newest first (GitHub's default sort: created, desc)."""
        state = query.get("state", ["open"])[0]
        shown = [
            gh.pull_request(self.site, self.repository, pull)
            for number, pull in sorted(self.pulls.items(), reverse=True)
            if state in ("all", getattr(pull, "state", "open"))
        ]
        return self.page(f"/repos/{self.repository}/pulls", query, shown, lambda items: items)

    def get_pull(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        pull = self.pulls.get(int(params["pull_number"]))
        if pull is None:
            return error(404, "Not Found")
        return Response(status=200, body=gh.pull_request(self.site, self.repository, pull))

    def list_pull_files(
        self, params: Mapping[str, str], query: Mapping[str, list[str]], body: Any
    ) -> Response:
        """The files a pull request changes, 30 a page, at most 3,000 as GitHub lists."""
        number = int(params["pull_number"])
        pull = self.pulls.get(number)
        if pull is None:
            return error(404, "Not Found")
        shown = [gh.diff_entry(self.site, self.repository, pull, p) for p in pull.files[:3000]]
        path = f"/repos/{self.repository}/pulls/{number}/files"
        return self.page(path, query, shown, lambda items: items)

    def list_comments(
        self, params: Mapping[str, str], query: Mapping[str, list[str]], body: Any
    ) -> Response:
        number = int(params["issue_number"])
        if number not in self.pulls:
            return error(404, "Not Found")
        since = query.get("since", [""])[0]
        shown = [
            gh.issue_comment(self.site, self.repository, comment)
            for comment in sorted(self.comments.values(), key=lambda c: c.id)
            if comment.number == number and comment.updated_at >= since
        ]
        path = f"/repos/{self.repository}/issues/{number}/comments"
        return self.page(path, query, shown, lambda items: items)

    def create_comment(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        number = int(params["issue_number"])
        if number not in self.pulls:
            return error(404, "Not Found")
        if len(body["body"]) > COMMENT_LIMIT:
            return rejected(f"body is too long (maximum is {COMMENT_LIMIT} characters)")
        login, type = self.author
        comment = self.add_comment(number, body["body"], login=login, type=type)
        shown = gh.issue_comment(self.site, self.repository, comment)
        return Response(status=201, body=shown, headers={"Location": shown["url"]})

    def update_comment(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        comment = self.comments.get(int(params["comment_id"]))
        if comment is None:
            return error(404, "Not Found")
        if len(body["body"]) > COMMENT_LIMIT:
            return rejected(f"body is too long (maximum is {COMMENT_LIMIT} characters)")
        comment.body = body["body"]
        comment.updated_at = gh.now()
        return Response(status=200, body=gh.issue_comment(self.site, self.repository, comment))

    def get_user(self, params: Any, query: Any, body: Any) -> Response:
        if self.user_login is None:  # an installation token, as GITHUB_TOKEN is
            return error(403, "Resource not accessible by integration")
        return Response(status=200, body=gh.private_user(self.site, self.user_login))

    def create_check_run(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        if self.user_login is not None:  # only a GitHub App may write check runs
            return error(403, "You must authenticate via a GitHub App.")
        problems = _check_run_rules(body)
        if problems:
            return rejected(*problems)
        run = CheckRun(
            id=self._next_run,
            head_sha=body["head_sha"],
            name=body["name"],
            status=body.get("status", "queued"),
            conclusion=None,
            started_at=body.get("started_at", gh.now()),
            completed_at=None,
            details_url=body.get("details_url"),
            external_id=body.get("external_id"),
            app_slug=self.app_slug,
        )
        self._next_run += 1
        self.runs[run.id] = run
        _apply(run, body)
        return Response(status=201, body=self.shown(run))

    def update_check_run(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        run = self.runs.get(int(params["check_run_id"]))
        if run is None:
            return error(404, "Not Found")
        problems = _check_run_rules(body)
        if problems:
            return rejected(*problems)
        run.updates += 1
        _apply(run, body)
        return Response(status=200, body=self.shown(run))

    def get_commit(self, params: Mapping[str, str], query: Any, body: Any) -> Response:
        sha = self.resolve(params["ref"])
        if sha is None:
            return error(422, f"No commit found for SHA: {params['ref']}")
        return Response(status=200, body=gh.commit(self.site, self.repository, sha))

    def list_check_runs(
        self, params: Mapping[str, str], query: Mapping[str, list[str]], body: Any
    ) -> Response:
        sha = self.resolve(params["ref"])
        if sha is None:
            return error(422, f"No commit found for SHA: {params['ref']}")
        runs = [run for run in self.runs.values() if run.head_sha == sha]
        for key in ("check_name", "status"):
            if key in query:
                wanted = query[key][0]
                runs = [run for run in runs if getattr(run, key.removeprefix("check_")) == wanted]
        if query.get("filter", ["latest"])[0] == "latest":  # the newest run of each name
            newest = {run.name: run for run in sorted(runs, key=lambda r: r.id)}
            runs = list(newest.values())
        # Newest first: GitHub does not document an order; a client must not rely on one.
        shown = [self.shown(run) for run in sorted(runs, key=lambda r: r.id, reverse=True)]
        path = f"/repos/{self.repository}/commits/{params['ref']}/check-runs"
        return self.page(
            path, query, shown, lambda items: {"total_count": len(shown), "check_runs": items}
        )

    # Helpers.

    def shown(self, run: CheckRun) -> dict[str, Any]:
        return gh.check_run(self.site, self.repository, run, list(self.pulls.values()))

    def resolve(self, ref: str) -> str | None:
        """A ref as GitHub resolves it: a full sha, or a branch (`heads/` optional) of a PR."""
        if len(ref) == 40 and all(c in "0123456789abcdef" for c in ref):
            return ref
        branch = ref.removeprefix("refs/").removeprefix("heads/")
        for pull in self.pulls.values():
            if pull.head_ref == branch and pull.head_repo == self.repository:
                return pull.head_sha
            if pull.base_ref == branch:
                return pull.base_sha
        return None

    def page(
        self,
        path: str,
        query: Mapping[str, list[str]],
        items: list[dict[str, Any]],
        wrap: Callable[[list[dict[str, Any]]], Any],
    ) -> Response:
        """One page of `items` and GitHub's Link header (prev, next, last, first)."""
        per_page = min(max(int(query.get("per_page", ["30"])[0]), 1), 100)
        page = max(int(query.get("page", ["1"])[0]), 1)
        last = max(math.ceil(len(items) / per_page), 1)
        params = {key: values[0] for key, values in query.items() if key != "page"}

        def link(number: int, rel: str) -> str:
            return f'<{self.site.api}{path}?{urlencode({**params, "page": number})}>; rel="{rel}"'

        links = []
        if page > 1:
            links.append(link(min(page - 1, last), "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {"Link": ", ".join(links)} if links else {}
        return Response(status=200, body=wrap(chunk), headers=headers)


def _check_run_rules(body: Mapping[str, Any]) -> list[str]:
    """What GitHub rejects in a check run's body that its schema lets through."""
    problems = []
    if (body.get("status") == "completed" or "completed_at" in body) and "conclusion" not in body:
        problems.append("conclusion must be given when status is completed or completed_at set")
    if body.get("conclusion") == "stale":
        problems.append("conclusion `stale` can only be set by GitHub")
    for index, note in enumerate(body.get("output", {}).get("annotations", [])):
        where = f"output.annotations[{index}]"
        for key in ("message", "raw_details"):
            if len(note.get(key, "").encode()) > ANNOTATION_TEXT_LIMIT:
                problems.append(f"{where}.{key} is more than {ANNOTATION_TEXT_LIMIT} bytes")
        if len(note.get("title", "")) > ANNOTATION_TITLE_LIMIT:
            problems.append(f"{where}.title is more than {ANNOTATION_TITLE_LIMIT} characters")
        columns = "start_column" in note or "end_column" in note
        if columns and note["start_line"] != note["end_line"]:
            problems.append(f"{where}: columns are only allowed when start_line == end_line")
    return problems


def _apply(run: CheckRun, body: Mapping[str, Any]) -> None:
    """A check run's body applied: fields replaced, annotations appended (as GitHub does)."""
    for key in ("name", "details_url", "external_id", "started_at", "status"):
        if key in body:
            setattr(run, key, body[key])
    if "conclusion" in body:  # a conclusion completes the run
        run.conclusion = body["conclusion"]
        run.status = "completed"
        run.completed_at = body.get("completed_at", gh.now())
    output = body.get("output")
    if output is not None:
        for key in ("title", "summary", "text"):
            if key in output:
                setattr(run, key, output[key])
        run.annotations.extend(dict(note) for note in output.get("annotations", []))
