"""A real "origin" for the Action's tests, and a workspace cloned from it the way
actions/checkout clones one for a pull request.

:class:`Origin` is a bare repository standing in for GitHub's copy: branches, and for an
open pull request ``refs/pull/N/head`` and ``refs/pull/N/merge`` (the test merge GitHub
makes, base first, head second). Commits are written with ``git fast-import``, so a
history hundreds of commits deep costs one process. :func:`actions_checkout` then makes
the workspace a ``pull_request`` job starts with: depth 1, the merge commit checked out
detached, the remote ``origin``, and the token's ``http.<url>.extraheader`` in
``.git/config`` (or, as actions/checkout v6 does, in a file that ``.git/config``
includes for that git directory).

Origins are addressed by ``file://`` URLs: git ignores ``--depth`` for a plain path.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.repo import IDENTITY as REPO_IDENTITY


@dataclass(frozen=True, slots=True)
class Symlink:
    """A symbolic link a commit writes (mode 120000), pointing at ``target``."""

    target: str


# What a commit writes: path -> content, None deletes the path.
Files = Mapping[str, str | bytes | Symlink | None]

# The tests' git identity (tests/support/repo.py), and no prompt for credentials.
IDENTITY = {**REPO_IDENTITY, "GIT_TERMINAL_PROMPT": "0"}

TOKEN = "ghs_fake"  # the token of a job that names none (FakeGitHub's default)


def extraheader(token: str = TOKEN) -> str:
    """The header actions/checkout writes for ``token``: basic auth of x-access-token."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return f"AUTHORIZATION: basic {basic}"


EXTRAHEADER = extraheader()


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run git in ``cwd`` with a fixed identity and no global config; its stdout."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **IDENTITY},
        input=stdin,
        capture_output=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {cwd}: {done.stderr.decode().strip()}")
    return done.stdout.decode()


@dataclass(frozen=True, slots=True, kw_only=True)
class Pull:
    """An open pull request as the origin holds it."""

    number: int
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    merge_sha: str


class Origin:
    """A bare repository standing in for GitHub's copy of the repository."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "--quiet", "--bare", "--initial-branch=main")
        self._clock = 1_700_000_000  # commit times one minute apart: deterministic shas
        self._pulls: dict[int, tuple[str, str]] = {}

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def sha(self, ref: str) -> str:
        return git(self.path, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()

    def has(self, ref: str) -> bool:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            cwd=self.path,
            env={**os.environ, **IDENTITY},
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def commit(
        self,
        branch: str,
        files: Files | None = None,
        *,
        message: str = "change",
        count: int = 1,
        start: str | None = None,
        blobs: Mapping[str, str] | None = None,
    ) -> str:
        """Add ``count`` commits to ``branch`` (made from ``start``, default its tip or
        nothing), the first writing ``files``; the new tip's sha. The branch's pull
        requests get a new ``refs/pull/N/head`` and test merge, as GitHub's do.

        ``blobs`` maps more paths to blobs already in the origin, by sha (a large file
        written once with :meth:`blob`, never held in memory)."""
        ref = f"refs/heads/{branch}"
        parent = start if start is not None else (self.sha(ref) if self.has(ref) else None)
        stream = bytearray()
        for index in range(count):
            stream += self._commit_command(
                ref,
                message if count == 1 else f"{message} ({index + 1}/{count})",
                parent if index == 0 else None,
                files if index == 0 else None,
                blobs if index == 0 else None,
            )
        git(self.path, "fast-import", "--quiet", "--force", stdin=bytes(stream))
        self._refresh_pulls()
        return self.sha(ref)

    def _commit_command(
        self,
        ref: str,
        message: str,
        parent: str | None,
        files: Files | None,
        blobs: Mapping[str, str] | None = None,
    ) -> bytes:
        self._clock += 60
        who = f"test <test@example.invalid> {self._clock} +0000"
        lines = [f"commit {ref}".encode(), f"author {who}".encode(), f"committer {who}".encode()]
        lines += _data(message.encode())
        if parent is not None:
            lines.append(f"from {parent}".encode())
        for path, content in (files or {}).items():
            if content is None:
                lines.append(b"D " + _quoted(path))
                continue
            if isinstance(content, Symlink):
                lines.append(b"M 120000 inline " + _quoted(path))
                lines += _data(content.target.encode())
                continue
            raw = content.encode() if isinstance(content, str) else content
            lines.append(b"M 100644 inline " + _quoted(path))
            lines += _data(raw)
        for path, sha in (blobs or {}).items():
            lines.append(f"M 100644 {sha} ".encode() + _quoted(path))
        return b"\n".join(lines) + b"\n\n"

    def blob(self, path: Path) -> str:
        """The file ``path`` written into the origin as a blob, streamed; its sha."""
        return git(self.path, "hash-object", "-w", "--", str(path.resolve())).strip()

    def open_pull(self, number: int, *, head: str, base: str = "main") -> Pull:
        """Open pull request ``number`` from branch ``head`` into ``base``: its
        ``refs/pull/N/head`` and ``refs/pull/N/merge``."""
        self._pulls[number] = (base, head)
        self._refresh_pulls()
        return self.pull(number)

    def retarget(self, number: int, base: str) -> Pull:
        """Pull request ``number`` now into ``base`` (its base branch changed): a new test
        merge."""
        self._pulls[number] = (base, self._pulls[number][1])
        self._refresh_pulls()
        return self.pull(number)

    def pull(self, number: int) -> Pull:
        base, head = self._pulls[number]
        return Pull(
            number=number,
            base_ref=base,
            base_sha=self.sha(f"refs/heads/{base}"),
            head_ref=head,
            head_sha=self.sha(f"refs/pull/{number}/head"),
            merge_sha=self.sha(f"refs/pull/{number}/merge"),
        )

    def _refresh_pulls(self) -> None:
        for number, (base, head) in self._pulls.items():
            base_sha = self.sha(f"refs/heads/{base}")
            head_sha = self.sha(f"refs/heads/{head}")
            # Unrelated histories too: GitHub keeps a pull request whose base was
            # force-pushed to a new root.
            merge_tree = ["merge-tree", "--write-tree", "--allow-unrelated-histories"]
            tree = git(self.path, *merge_tree, base_sha, head_sha).split()[0]
            merge = git(
                self.path,
                "commit-tree",
                tree,
                "-p",
                base_sha,
                "-p",
                head_sha,
                "-m",
                f"Merge {head_sha} into {base_sha}",
            ).strip()
            git(self.path, "update-ref", f"refs/pull/{number}/head", head_sha)
            git(self.path, "update-ref", f"refs/pull/{number}/merge", merge)


def files_of(directory: Path) -> dict[str, str | bytes | Symlink | None]:
    """Every file under ``directory`` by its path relative to it, to commit: an example's
    ``repo`` as the base, its ``solution`` as a pull request."""
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _quoted(path: str) -> bytes:
    """``path`` as fast-import reads it: as it is, or C-quoted when it holds a control
    character or starts with a double quote (a name with a line break, a tab). Lone
    surrogates stand for bytes that are not UTF-8, as in :func:`os.fsencode`."""
    raw = path.encode("utf-8", "surrogateescape")
    if not path.startswith('"') and all(c >= 0x20 and c != 0x7F for c in raw):
        return raw
    escapes = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\t"): b"\\t"}
    out = bytearray(b'"')
    for c in raw:
        if c in escapes:
            out += escapes[c]
        elif c < 0x20 or c == 0x7F:
            out += b"\\%03o" % c
        else:
            out.append(c)
    return bytes(out + b'"')


def _data(raw: bytes) -> list[bytes]:
    return [f"data {len(raw)}".encode(), raw]


def actions_checkout(
    origin: Origin,
    number: int,
    workspace: Path,
    *,
    persist_credentials: bool = True,
    credentials_file: Path | None = None,
    token: str = TOKEN,
) -> str:
    """Clone pull request ``number`` of ``origin`` into ``workspace`` as actions/checkout
    does for a ``pull_request`` event: its test merge, checked out detached; that
    merge commit's sha (``GITHUB_SHA``).

    With ``credentials_file``, the extraheader goes in that file and ``.git/config``
    includes it for this git directory (actions/checkout v6); else it is in
    ``.git/config`` itself (v4, v5). ``persist_credentials=False`` leaves none. The
    header carries ``token``, the job's ``github-token``."""
    return checkout_ref(
        origin,
        f"refs/pull/{number}/merge",
        workspace,
        persist_credentials=persist_credentials,
        credentials_file=credentials_file,
        token=token,
    )


def checkout_ref(
    origin: Origin,
    ref: str,
    workspace: Path,
    *,
    persist_credentials: bool = True,
    credentials_file: Path | None = None,
    token: str = TOKEN,
) -> str:
    """Clone ``ref`` of ``origin`` (``refs/pull/N/merge``, ``refs/heads/...``) into
    ``workspace`` as actions/checkout does, depth 1; the sha checked out."""
    sha = origin.sha(ref)
    # Where actions/checkout keeps it: refs/remotes/origin/<branch>, refs/remotes/pull/N/merge.
    if ref.startswith("refs/heads/"):
        tracking = "refs/remotes/origin/" + ref.removeprefix("refs/heads/")
    else:
        tracking = "refs/remotes/" + ref.removeprefix("refs/")
    workspace.mkdir(parents=True, exist_ok=True)
    git(workspace, "init", "--quiet")
    git(workspace, "remote", "add", "origin", origin.url)
    if persist_credentials:
        _persist_credentials(origin, workspace, credentials_file, extraheader(token))
    fetch = ["fetch", "--no-tags", "--prune", "--no-recurse-submodules", "--depth=1"]
    git(workspace, "-c", "protocol.version=2", *fetch, "origin", f"+{sha}:{tracking}")
    git(workspace, "checkout", "--quiet", "--force", tracking)
    return sha


def _persist_credentials(
    origin: Origin, workspace: Path, credentials_file: Path | None, header: str
) -> None:
    key = f"http.{origin.url}/.extraheader"
    if credentials_file is None:
        git(workspace, "config", "--local", key, header)
        return
    git(workspace, "config", "--file", str(credentials_file), key, header)
    include = f"includeIf.gitdir:{(workspace / '.git').resolve()}.path"
    git(workspace, "config", "--local", include, str(credentials_file))
