"""The few git plumbing calls repogym makes, with output that user config cannot alter."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from repogym.errors import UnknownRef, WorkspaceError

# Settings a gitconfig could set that would change what we parse, or that would run a
# command: a submission's code may have rewritten the work tree's .git/config by the time
# the grader calls git there (issue 3: the PR's code runs with no token in reach).
_PINNED_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.quotepath=off",
    "color.ui=never",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.external=",
    "core.pager=cat",
    "core.warnAmbiguousRefs=true",
    # Global and system files are ignored (GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM below);
    # their defaults under $HOME are too, so that a file the submission's code wrote
    # there cannot hide files from the grader or change what it reads.
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
)


def git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return its stdout; a failure is a WorkspaceError."""
    done = _run(args, cwd, env=env, stdin=stdin)
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        first = reason[0] if reason else f"exit code {done.returncode}"
        raise WorkspaceError(f"{cwd}: git {' '.join(args[:2])} failed: {first}")
    return done.stdout


def command(args: Sequence[str]) -> list[str]:
    """``git`` with the pinned settings, then ``args``."""
    line = ["git"]
    for setting in _PINNED_CONFIG:
        line += ["-c", setting]
    return line + list(args)


def _run(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    full_env = {**environment(), **(env or {})}
    try:
        return subprocess.run(
            command(args), cwd=cwd, env=full_env, input=stdin, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise WorkspaceError("git is not installed or not on PATH: install git") from None


def environment() -> dict[str, str]:
    """What git needs of our environment, and nothing else: no token reaches a command
    that a repository's config might make git run. No global or system config is read:
    the submission's code may have written ``$HOME/.gitconfig`` (a clean filter there
    would run in every later grade)."""
    keep = ("PATH", "HOME", "TMPDIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_ATTR_NOSYSTEM="1",
    )
    return env


def toplevel(path: Path) -> Path:
    """The root of the work tree that contains ``path``."""
    if not path.is_dir():
        raise WorkspaceError(f"{path}: not a directory; pass the root of a git work tree")
    try:
        out = git(["rev-parse", "--show-toplevel"], path)
    except WorkspaceError:
        raise WorkspaceError(
            f"{path}: not inside a git work tree; run `git init` or pass a checkout"
        ) from None
    return Path(out.decode().strip())


def resolve_commit(repo: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names; a name that two refs share (a branch
    and a tag called ``main``) is an error, not git's silent pick."""
    done = _run(["rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"], repo)
    if done.returncode != 0:
        raise UnknownRef(
            f"{repo}: `{ref}` does not name a commit; check the branch, tag or sha "
            "(fetch it first if it exists only on a remote)"
        )
    if b"is ambiguous" in done.stderr:
        names = _ambiguous_refs(repo, ref)
        if not names:  # a name that is also the start of some object's sha
            raise WorkspaceError(
                f"{repo}: git finds `{ref}` ambiguous; pass the full name of the ref you "
                "mean (refs/heads/..., refs/tags/...) or a full sha"
            )
        branch = f"refs/heads/{ref}"
        raise WorkspaceError(
            f"{repo}: `{ref}` is ambiguous: it names {' and '.join(names)}; pass the full "
            f"name of the one you mean, such as {branch if branch in names else names[0]}"
        )
    return done.stdout.decode().strip()


def merge_base(repo: Path, ref: str, ref_sha: str, head: str) -> str:
    """The best common ancestor of ``ref`` (``ref_sha``) and ``head``, or a WorkspaceError
    that says why there is none: most often a shallow clone."""
    done = _run(["merge-base", ref_sha, head], repo)
    if done.returncode == 0:
        return done.stdout.decode().strip()
    if done.returncode != 1:  # not "none found": a broken repository, say; git says why
        git(["merge-base", ref_sha, head], repo)
    shallow = _run(["rev-parse", "--is-shallow-repository"], repo).stdout.strip() == b"true"
    if shallow:
        raise WorkspaceError(
            f"{repo}: no common ancestor of `{ref}` and HEAD in this shallow clone: fetch "
            "more history (`git fetch --unshallow`, or `fetch-depth: 0` for actions/checkout)"
        )
    raise WorkspaceError(
        f"{repo}: `{ref}` and HEAD have no common ancestor (unrelated histories): pass a "
        "--base that HEAD was branched from"
    )


# Where git looks for a short ref name, in its order (git help revisions).
_REF_RULES = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}")


def _ambiguous_refs(repo: Path, ref: str) -> list[str]:
    """The full names of the refs that the short name ``ref`` matches."""
    candidates = [rule.format(ref) for rule in _REF_RULES]
    candidates.append(f"refs/remotes/{ref}/HEAD")
    out = git(["for-each-ref", "--format=%(refname)", *candidates], repo).decode()
    found = set(out.split())
    return [name for name in candidates if name in found]


def show_file(repo: Path, commit: str, path: str) -> bytes | None:
    """The content of ``path`` at ``commit``, or None if it is not there."""
    try:
        return git(["cat-file", "blob", f"{commit}:{path}"], repo)
    except WorkspaceError:
        return None


class TreeEntry(NamedTuple):
    """One entry of a commit's tree: ``mode`` as git writes it (``100644``, ``100755``,
    ``120000`` for a symlink, ``040000`` for a directory, ``160000`` for a submodule)."""

    mode: str
    type: str  # blob, tree or commit
    sha: str

    @property
    def executable(self) -> bool:
        return self.mode == "100755"

    @property
    def symlink(self) -> bool:
        return self.mode == "120000"


def tree_entry(repo: Path, commit: str, path: str) -> TreeEntry | None:
    """The entry of ``path`` in ``commit``'s tree, or None if it is not there."""
    out = git(["ls-tree", "-z", "--full-tree", commit, "--", path], repo)
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if name == os.fsencode(path):
            mode, kind, sha = meta.decode().split()
            return TreeEntry(mode, kind, sha)
    return None
