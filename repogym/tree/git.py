"""The one way repogym runs git, engine and Action alike, with output that user config
cannot alter: :func:`run` (and :func:`git`, which also checks the exit code; :func:`start`
for a process that serves many requests). Every call gets the pinned settings below
and an environment of our choosing (:func:`environment`), never the whole of ours."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from repogym.errors import UnknownRef, WorkspaceError

__all__ = [
    "NOT_INSTALLED",
    "TreeEntry",
    "command",
    "environment",
    "git",
    "merge_base",
    "resolve_commit",
    "run",
    "show_file",
    "start",
    "toplevel",
    "tree_entry",
    "trusted_directories",
]

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
    done = run(args, cwd, env=env, stdin=stdin)
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        first = reason[0] if reason else f"exit code {done.returncode}"
        raise WorkspaceError(f"{cwd}: git {' '.join(args[:2])} failed: {first}")
    return done.stdout


def command(args: Sequence[str]) -> list[str]:
    """``git`` with the pinned settings and the user's ``safe.directory``, then ``args``."""
    line = ["git"]
    for setting in _PINNED_CONFIG:
        line += ["-c", setting]
    for directory in trusted_directories():
        line += ["-c", f"safe.directory={directory}"]
    return line + list(args)


@functools.cache
def trusted_directories() -> tuple[str, ...]:
    """The user's own ``safe.directory`` entries, of their system and global git config,
    in git's order (an empty one clears those before it).

    The only setting of those files that the grader's git takes, passed on its command
    line, where git honours it (issue 19: a tree owned by another uid, such as an
    unpacked tarball, was refused although the user had trusted it). Read once, on first
    use, before any of the submission's code runs: a file that code wrote under $HOME
    later is never read."""
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env["LC_ALL"] = "C"
    found: list[str] = []
    for scope in ("--system", "--global"):
        try:
            done = subprocess.run(
                ["git", "config", scope, "--get-all", "safe.directory"],
                cwd="/",
                env=env,
                capture_output=True,
                check=False,
            )
        except FileNotFoundError:
            return ()
        if done.returncode == 0:
            found += done.stdout.decode("utf-8", "surrogateescape").splitlines()
    return tuple(found)


# What would make `git config` read a repository's file, or settings of the command line.
_REPOSITORY_VARIABLES = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG"}
)


def run(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    base: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` in ``cwd``, finished, whatever its exit code. Its environment is
    :func:`environment` of ``base``, then ``env``. A ``timeout`` that expires raises
    :class:`subprocess.TimeoutExpired` (the process is killed)."""
    full_env = {**environment(base), **(env or {})}
    try:
        return subprocess.run(
            command(args),
            cwd=cwd,
            env=full_env,
            input=stdin,
            capture_output=True,
            check=False,
            timeout=timeout,
        )
    except FileNotFoundError:
        raise WorkspaceError(NOT_INSTALLED) from None


NOT_INSTALLED = "git is not installed or not on PATH: install git"


def start(args: Sequence[str], cwd: Path, *, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """``git ARGS`` in ``cwd`` as a process that reads its stdin and writes its stdout as
    they come (``cat-file --batch``); its stderr is dropped."""
    return subprocess.Popen(
        command(args),
        cwd=cwd,
        env={**environment(), **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """What git gets of an environment: ``base`` (default: our ``PATH``, ``HOME`` and
    ``TMPDIR``, and nothing else, so no token reaches a command that a repository's config
    might make git run), with no global or system config read: the submission's code may
    have written ``$HOME/.gitconfig`` (a clean filter there would run in every later
    grade). A caller that needs a global config of its own sets ``GIT_CONFIG_GLOBAL`` in
    the ``env`` of :func:`run`."""
    keep = ("PATH", "HOME", "TMPDIR")
    if base is None:
        env = {name: os.environ[name] for name in keep if name in os.environ}
    else:
        env = dict(base)
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
    done = run(["rev-parse", "--show-toplevel"], path)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace")
        if "dubious ownership" in said:
            raise WorkspaceError(_dubious(path, said))
        raise WorkspaceError(
            f"{path}: not inside a git work tree; run `git init` or pass a checkout"
        )
    return Path(done.stdout.decode().strip())


def _dubious(path: Path, said: str) -> str:
    """The error for a tree git refuses because another user owns it: git's own words,
    and its fix (which the grade honours: :func:`trusted_directories`)."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    first = lines[0].removeprefix("fatal: ") if lines else "detected dubious ownership"
    advice = re.search(r"safe\.directory (.+)$", said, re.MULTILINE)
    top = advice[1].strip() if advice else str(path)
    return (
        f"{path}: git refuses to work there: {first} (another user owns it); if you trust "
        f"it, run `git config --global --add safe.directory {top}` and run again"
    )


def resolve_commit(repo: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names; a name that two refs share (a branch
    and a tag called ``main``) is an error, not git's silent pick."""
    done = run(["rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"], repo)
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
    done = run(["merge-base", ref_sha, head], repo)
    if done.returncode == 0:
        return done.stdout.decode().strip()
    if done.returncode != 1:  # not "none found": a broken repository, say; git says why
        git(["merge-base", ref_sha, head], repo)
    shallow = run(["rev-parse", "--is-shallow-repository"], repo).stdout.strip() == b"true"
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
