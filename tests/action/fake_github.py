"""A fake GitHub API: a real HTTP server on 127.0.0.1 that every test talking to GitHub uses.

It serves the endpoints the Action calls (tests/action/data/github-openapi.json lists them)
under a GHES-style prefix, `http://127.0.0.1:PORT/api/v3`, so a client that drops the path of
GITHUB_API_URL fails. It keeps what it is sent (comments, check runs, annotations across
updates), paginates like GitHub (per_page, page, a Link header), answers 401 to a missing or
wrong token, and checks every request against GitHub's OpenAPI description: a request that
breaks it is answered 422 (404 for an unknown route) and listed in `violations`, which tests
assert empty. Its own answers are checked against the response schemas too.

    with FakeGitHub() as fake:
        fake.add_pull(7, base_ref="main", base_sha=base, head_ref="fix", head_sha=head)
        client = Github(base_url=fake.url, auth=Auth.Token(fake.token),
                        seconds_between_requests=0, seconds_between_writes=0)
        ...
        assert fake.violations == []

(PyGithub 2 pauses 0.25 s between requests and 1 s after a write unless told otherwise.)

`fail(method, path_pattern, *responses)` makes the next matching requests fail (issue 12's
retries build on it). The token is never recorded: `requests` keeps no Authorization header.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.action import fake_objects as gh
from tests.action.fake_state import Response, State, error
from tests.action.openapi import Description

PREFIX = "/api/v3"


@functools.cache
def description() -> Description:
    """The trimmed OpenAPI description, loaded once per test session."""
    return Description()


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A request the fake received, and the status it answered."""

    method: str
    path: str  # relative to `url`: "/repos/octo-org/octo-repo/pulls/7"
    query: dict[str, list[str]]
    body: Any  # the parsed JSON, the text when it is not JSON, None when empty
    status: int  # 0: the connection was closed without an answer
    headers: dict[str, str]  # as sent, without Authorization


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """An answer `fail` puts in place of the fake's own."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None  # JSON for a dict or list, else text
    applied: bool = False  # the request still changes the state; only its answer is lost
    disconnect: bool = False  # close the connection without any answer
    hang: bool = False  # keep the connection open without an answer until the fake stops


class FakeGitHub:
    """GitHub's REST API for one repository, on 127.0.0.1; see the module docstring."""

    bot_login = gh.BOT_LOGIN

    def __init__(
        self,
        *,
        repository: str = "octo-org/octo-repo",
        token: str = "ghs_fake",
        user_login: str | None = None,
        app_slug: str = gh.ACTIONS_SLUG,
    ) -> None:
        """``user_login``: the token is that user's personal token (GET /user answers);
        ``app_slug``: else it is that GitHub App's installation token (the default: a
        workflow's GITHUB_TOKEN, the GitHub Actions app's), whose bot account
        ``<slug>[bot]`` writes the comments and whose app makes the check runs."""
        self.repository = repository
        self.token = token
        self.user_login = user_login
        self.app_slug = app_slug
        self.requests: list[Request] = []
        self.violations: list[str] = []
        self._faults: list[tuple[str, str, deque[Fault]]] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._state: State | None = None
        self._released = threading.Event()  # set when stopping: hung requests end

    # Running.

    def start(self) -> FakeGitHub:
        server = _Server(self)
        port = server.server_address[1]
        site = gh.Site(api=f"http://127.0.0.1:{port}{PREFIX}", html=f"http://127.0.0.1:{port}")
        self._state = State(
            site=site,
            repository=self.repository,
            user_login=self.user_login,
            app_slug=self.app_slug,
        )
        self._server = server
        # A short poll: stop() waits for the serving loop to notice, up to one interval.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-github"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._released.set()
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API root to give the client (GITHUB_API_URL)."""
        return self.state.site.api

    @property
    def server_url(self) -> str:
        """The web root (GITHUB_SERVER_URL): where html_url links point."""
        return self.state.site.html

    @property
    def state(self) -> State:
        if self._state is None:
            raise RuntimeError("FakeGitHub: call start() or use `with FakeGitHub() as fake`")
        return self._state

    # Setting the scene, and reading what the client did.

    def add_pull(
        self,
        number: int,
        *,
        base_ref: str,
        base_sha: str,
        head_ref: str,
        head_sha: str,
        head_repo: str | None = None,
        state: str = "open",
    ) -> None:
        """An open PR; head_repo ("owner/name") when it comes from a fork."""
        pull = gh.Pull(
            number=number,
            base_ref=base_ref,
            base_sha=base_sha,
            head_ref=head_ref,
            head_sha=head_sha,
            head_repo=head_repo or self.repository,
            state=state,
        )
        with self._lock:
            self.state.pulls[number] = pull

    def move_head(self, number: int, sha: str) -> None:
        """A new push to the PR's branch."""
        with self._lock:
            pull = self.state.pulls[number]
            pull.head_sha = sha
            pull.updated_at = gh.now()

    def set_files(self, number: int, files: list[str]) -> None:
        """What the PR changes (base...head), as its list of files shows it."""
        with self._lock:
            self.state.pulls[number].files = list(files)

    def retarget(self, number: int, *, base_ref: str, base_sha: str) -> None:
        """The PR's base branch changed (an `edited` event)."""
        with self._lock:
            pull = self.state.pulls[number]
            pull.base_ref, pull.base_sha = base_ref, base_sha
            pull.updated_at = gh.now()

    def add_comment(self, number: int, body: str, *, login: str, type: str = "User") -> int:
        """Someone else's comment on PR `number`; its id."""
        with self._lock:
            return self.state.add_comment(number, body, login=login, type=type).id

    def comments(self, number: int) -> list[dict[str, Any]]:
        """The PR's comments, oldest first, as GitHub would return them."""
        with self._lock:
            state = self.state
            return [
                gh.issue_comment(state.site, state.repository, comment)
                for comment in sorted(state.comments.values(), key=lambda c: c.id)
                if comment.number == number
            ]

    def check_runs(self, sha: str | None = None) -> list[dict[str, Any]]:
        """Check runs (on `sha`, or all), oldest first, with every annotation and `updates`."""
        with self._lock:
            return [
                {
                    **self.state.shown(run),
                    "annotations": list(run.annotations),
                    "updates": run.updates,
                }
                for run in sorted(self.state.runs.values(), key=lambda r: r.id)
                if sha is None or run.head_sha == sha
            ]

    def fail(
        self, method: str, path_pattern: str, *responses: Fault | tuple[int, Mapping[str, str], Any]
    ) -> None:
        """The next requests of `method` on a matching path get `responses`, one each, in order.

        path_pattern: an OpenAPI path template ("/repos/{owner}/{repo}/check-runs") or a glob
        on the path relative to `url` ("/repos/*/issues/7/comments"). A response is a Fault or
        a (status, headers, body) tuple. Afterwards the fake answers as usual again.
        """
        faults = deque(
            r if isinstance(r, Fault) else Fault(status=r[0], headers=r[1], body=r[2])
            for r in responses
        )
        with self._lock:
            self._faults.append((method.upper(), path_pattern, faults))

    # Serving.

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        """One request: parse, check, answer, record."""
        split = urlsplit(handler.path)
        query = parse_qs(split.query, keep_blank_values=True)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() != "authorization"}
        with self._lock:
            path, body, answer = self._answer(handler, split.path, query, raw)
            lost = isinstance(answer, Fault) and (answer.disconnect or answer.hang)
            status = 0 if lost else answer.status
            self.requests.append(
                Request(
                    method=handler.command,
                    path=path,
                    query=query,
                    body=body,
                    status=status,
                    headers=headers,
                )
            )
        if isinstance(answer, Fault) and answer.hang:
            self._released.wait()  # the client gives up first: a timeout
            handler.close_connection = True
            return
        _send(handler, answer)

    def _answer(
        self,
        handler: BaseHTTPRequestHandler,
        full_path: str,
        query: dict[str, list[str]],
        raw: bytes,
    ) -> tuple[str, Any, Response | Fault]:
        method = handler.command
        body, problems = _parse_body(raw, handler.headers.get("Content-Type", ""))
        if not full_path.startswith(PREFIX + "/"):
            self.violations.append(
                f"{method} {full_path}: not under {PREFIX} (GITHUB_API_URL's path)"
            )
            return full_path, body, error(404, "Not Found")
        path = full_path.removeprefix(PREFIX)
        operation, params, _ = description().operation(method, path)
        if operation is None:
            self.violations.append(f"{method} {path}: no such operation in GitHub's description")
            return path, body, error(404, "Not Found")
        unparsed = bool(problems)
        problems += description().check_parameters(operation, path_params=params, query=query)
        if not unparsed:
            problems += description().check_body(operation, body)
        self.violations += [f"{method} {path}: {problem}" for problem in problems]
        if not self._authorized(handler.headers.get("Authorization", "")):
            return path, body, error(401, "Bad credentials")
        if unparsed:
            return path, body, error(400, "Problems parsing JSON")
        if problems:
            errors = [{"resource": "Request", "code": "invalid", "message": p} for p in problems]
            return path, body, error(422, "Validation Failed", errors=errors)
        fault = self._fault(method, path, operation.template)
        if fault is not None and not fault.applied:
            return path, body, fault
        answer = self.state.answer(method, operation.template, params, query=query, body=body)
        self.violations += [f"{method} {path}: GitHub rejects it: {p}" for p in answer.problems]
        self.violations += [
            f"{method} {path}: the fake's own answer: {p}"
            for p in description().check_response(operation, answer.status, answer.body)
        ]
        return path, body, fault or answer

    def _authorized(self, header: str) -> bool:
        scheme, _, credential = header.partition(" ")
        return scheme.lower() in ("token", "bearer") and credential.strip() == self.token

    def _fault(self, method: str, path: str, template: str) -> Fault | None:
        for wanted, pattern, faults in self._faults:
            if faults and wanted == method and (pattern == template or fnmatchcase(path, pattern)):
                return faults.popleft()
        return None


def _parse_body(raw: bytes, content_type: str) -> tuple[Any, list[str]]:
    """The body as JSON, and what is wrong with it (GitHub takes JSON only)."""
    if not raw:
        return None, []
    text = raw.decode("utf-8", errors="replace")
    if content_type.split(";")[0].strip().lower() not in ("application/json", ""):
        return text, [f"the body is sent as {content_type!r}, not application/json"]
    try:
        return json.loads(text), []
    except ValueError as exc:
        return text, [f"the body is not JSON: {exc}"]


def _send(handler: BaseHTTPRequestHandler, answer: Response | Fault) -> None:
    if isinstance(answer, Fault) and answer.disconnect:
        handler.close_connection = True
        return
    body = answer.body
    is_json = isinstance(body, (dict, list))
    if is_json:
        data = json.dumps(body).encode()
    else:
        data = body if isinstance(body, bytes) else str(body or "").encode()
    handler.send_response(answer.status)
    kind = "application/json; charset=utf-8" if is_json else "text/plain; charset=utf-8"
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("X-GitHub-Media-Type", "github.v3; format=json")
    for name, value in answer.headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as GitHub: clients reuse the connection
    server: _Server

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for an access log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake
        self._connections: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End the kept-alive connections, so that their threads end with the server."""
        for connection in list(self._connections):
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)
