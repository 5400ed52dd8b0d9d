"""Rendering templates that are not repogym's own under a deadline, in a process of its own.

A template directory is code: Jinja's sandbox keeps it from Python's internals, not from
looping forever (``{% for i in range(99999) %}`` three deep), from recursing, from asking
for a terabyte (``"x" * 2 ** 40``) or from dividing by zero; and the report it loops over
is the submission's. Issue 19: any of them left a traceback, exit 3 and a check run in
progress forever. So :func:`render_texts` renders in a child Python (``-I``: nothing of the
working directory, which is the pull request's checkout, nor ``PYTHON*`` variables, is
imported or read) with an empty environment (no token to print), a memory limit and a CPU
limit, killed at :data:`SECONDS`; whatever happens is one :class:`UsageError` line naming
the template. The built-in templates are rendered in this process (:func:`render`
directly): they are repogym's.

The child reads one JSON request on stdin and writes one JSON answer on stdout; the name
of each template it starts goes to stderr, so that a template that never ends is named.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from repogym.errors import UsageError
from repogym.report.render import render

__all__ = [
    "MEMORY",
    "SECONDS",
    "render_texts",
]

SECONDS = 15.0  # for all the texts of one publication; they take milliseconds each
MEMORY = 1024 * 1024 * 1024  # bytes of address space for the child
_STARTED = "rendering "


def render_texts(
    report: Mapping[str, Any],
    texts: Mapping[str, tuple[str, int]],
    *,
    templates: Mapping[str, str] | None,
    links: Mapping[str, str] | None = None,
    seconds: float = SECONDS,
) -> dict[str, str]:
    """Each key of ``texts``, ``(template name, max_bytes)``, rendered from ``report``
    with ``templates`` replacing built-in ones (:func:`repogym.report.render.render`); in this
    process when there are no ``templates``, else in a child under ``seconds``.

    Raises:
        UsageError: one line naming the template that failed, did not finish in
            ``seconds`` or took the child down, and what happened.
    """
    if not templates:
        return {
            key: render(report, name, max_bytes=limit, links=links)
            for key, (name, limit) in texts.items()
        }
    request = {
        "report": report,
        "texts": {key: list(job) for key, job in texts.items()},
        "templates": dict(templates),
        "links": dict(links or {}),
        "seconds": seconds,
    }
    # ensure_ascii: a lone surrogate (an undecodable byte of a file name) goes as \udcff.
    data = json.dumps(request, default=str).encode("ascii")
    with tempfile.TemporaryDirectory(prefix="repogym-render-") as cwd:
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-m", "repogym.report.render_process"],
                input=data,
                capture_output=True,
                timeout=seconds,
                env={"LC_ALL": "C.UTF-8"},
                cwd=cwd,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            name = _last_started(expired.stderr)
            raise UsageError(
                f"template {name}: did not finish in {seconds:g} s; a template must end "
                "(look for a loop over a huge range)"
            ) from None
    return _answer(done)


def _last_started(stderr: bytes | None) -> str:
    names = [
        line.removeprefix(_STARTED)
        for line in (stderr or b"").decode("utf-8", "replace").splitlines()
        if line.startswith(_STARTED)
    ]
    return names[-1] if names else "(before the first)"


def _answer(done: subprocess.CompletedProcess[bytes]) -> dict[str, str]:
    name = _last_started(done.stderr)
    if done.returncode != 0:
        if done.returncode < 0:
            how = f"was killed by {signal.Signals(-done.returncode).name}"
        else:
            how = f"exited with code {done.returncode}"
        if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            how += " (out of CPU time)"
        raise UsageError(f"template {name}: the renderer {how}; make the template do less")
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        raise UsageError(f"template {name}: the renderer's answer is not JSON") from None
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        raise UsageError(answer["error"])
    texts = answer.get("texts") if isinstance(answer, dict) else None
    if not isinstance(texts, dict) or not all(isinstance(t, str) for t in texts.values()):
        raise UsageError(f"template {name}: the renderer's answer has no texts")
    return texts


def _child() -> int:
    """The child's side: limits first, then the request, one answer."""
    request = json.loads(sys.stdin.buffer.read())
    seconds = int(request["seconds"]) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    texts = {}
    try:
        for key, (name, limit) in request["texts"].items():
            sys.stderr.write(f"{_STARTED}{name}\n")
            sys.stderr.flush()
            texts[key] = render(
                request["report"],
                name,
                templates=request["templates"],
                max_bytes=limit,
                links=request["links"],
            )
    except UsageError as error:
        answer: dict[str, Any] = {"error": error.lines[0]}
    else:
        answer = {"texts": texts}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(_child())
