"""The commits a run grades, made ready in a private clone.

actions/checkout leaves the workspace with one commit: for a pull request the test merge
GitHub made (``refs/pull/N/merge``), fetched with depth 1. Grading needs more: the base
(where the task is read, issue 10: a pull request cannot change its own rubric), the head
(the tree that is graded) and their merge base (the baseline). :func:`prepare` fetches
them into the workspace from ``origin`` with whatever credentials actions/checkout left
there, deepening the history until the merge base is in it, then makes a private clone
that borrows the workspace's objects (``objects/info/alternates``) and has the head
checked out. The fetching is :mod:`repogym_action.fetch`'s; the git both run, and the
error both raise, are :mod:`repogym_action.gitcall`'s.

Git runs with a configuration of our own: the workspace is mounted from the runner and
belongs to another uid than the container's, which git refuses to work in unless
``safe.directory`` names it. That setting lives in a temporary file that
``GIT_CONFIG_GLOBAL`` points at, so the user's own global configuration is neither read
nor written. The private clone has no remote and no credentials: the submission's code
runs in it later, and must find no token there. Nor in the workspace: the files that hold
what actions/checkout persisted are made readable by their owner only, since the
submission's code runs as another user who could otherwise read them there.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from repogym_action.event import Target
from repogym_action.fetch import fallback_refs, fetch_history, has, resolve_base
from repogym_action.gitcall import (
    CREDENTIAL_KEYS,
    FETCH_TIMEOUT,
    HEX,
    CheckoutError,
    Git,
    git_reason,
)
from repogym_action.worktree import unlike_its_tree

HEAD_REF = "refs/repogym/head"  # in the private clone; outside refs/heads, so no branch collides
BASE_REF = "repogym-base"  # the base's branch in the clone when its own name cannot serve


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkout:
    """A private clone with the head checked out (detached), ready to grade with
    ``repogym.grade(tree, base=base_ref)``."""

    tree: Path
    base_ref: str  # a branch in ``tree`` at ``base`` (the base's own name), else the sha
    base: str
    head: str
    merge_base: str


def prepare(
    workspace: Path,
    target: Target,
    *,
    into: Path,
    log: Callable[[str], None],
    env: Mapping[str, str],
) -> Checkout:
    """Fetch what ``target`` needs into ``workspace`` (actions/checkout's clone) and make
    the private clone ``into`` (a new or empty directory) with its head checked out.

    ``log`` gets one line per step that talks to origin (they can take a while); ``env``
    is what git gets of the runner's environment (:attr:`RunContext.git_env`).

    Raises:
        CheckoutError: one line saying what is missing and which setting to change.
    """
    with _workspace_git(workspace, env) as git:
        _check_workspace(git)
        _close_credentials(git)
        base = target.base_sha or resolve_base(git, target.base_ref, log)
        fallback = fallback_refs(target)
        try:
            merge_base = fetch_history(git, base, target.head_sha, fallback, log)
        except CheckoutError:
            if _base_input_sha(target) and not has(git, base):
                raise CheckoutError(
                    f"input `base`: commit {base} is not on origin; set it to a branch "
                    "name, a tag or the full sha of a commit of origin"
                ) from None
            raise
        log(f"base {base[:12]}, head {target.head_sha[:12]}, merge base {merge_base[:12]}")
        base_ref = _clone(git, into, target.base_ref, base, target.head_sha)
    return Checkout(
        tree=into.resolve(),
        base_ref=base_ref,
        base=base,
        head=target.head_sha,
        merge_base=merge_base,
    )


def _base_input_sha(target: Target) -> bool:
    """Whether the base is a sha the `base` input gave (the event's has a branch name)."""
    return target.base_sha is not None and target.base_ref.lower() == target.base_sha


@contextmanager
def _workspace_git(workspace: Path, passed: Mapping[str, str]) -> Iterator[Git]:
    """A :class:`Git` whose global configuration is a temporary file of ours that lets
    git work in ``workspace`` (``safe.directory``); removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="repogym-git-") as private:
        config = Path(private) / "gitconfig"
        config.touch(mode=0o600)
        git = Git(workspace, passed, config)
        for path in dict.fromkeys([str(workspace.absolute()), str(workspace.resolve())]):
            add = ["config", "--file", str(config), "--add", "safe.directory", path]
            git.out(add, cwd=Path(private))
        yield git


def _check_workspace(git: Git) -> None:
    """The workspace must be a clone with the remote ``origin``."""
    if not git.workspace.is_dir():
        raise CheckoutError(
            f"{git.workspace}: the workspace is not a directory; check out the repository "
            "with actions/checkout before this step"
        )
    done = git.run(["rev-parse", "--show-toplevel"])
    if done.returncode != 0 or Path(done.stdout.strip()) != git.workspace.resolve():
        reason = git_reason(done.stderr) if done.returncode else "it is inside another one"
        raise CheckoutError(
            f"{git.workspace}: not the top of a git checkout ({reason}); check out the "
            "repository with actions/checkout (without `path`) before this step"
        )
    if not git.ok(["config", "--get", "remote.origin.url"]):
        raise CheckoutError(
            f"{git.workspace}: the checkout has no remote `origin` to fetch the pull "
            "request's commits from; check it out with actions/checkout"
        )


def _close_credentials(git: Git) -> None:
    """Make each config file that holds a credential (the workspace's ``.git/config``,
    the file under RUNNER_TEMP that actions/checkout v6 includes) readable by its owner
    only. actions/checkout writes them readable by all; the submission's commands run
    as another user (repogym.sandbox.users) and must not read the token there. They stay so:
    the runner's later steps run as their owner, and a file with a token in it is its
    owner's alone."""
    listed = ["config", "--null", "--show-origin", "--name-only", "--get-regexp"]
    done = git.run([*listed, CREDENTIAL_KEYS])
    origins = done.stdout.split("\0")[0::2] if done.returncode == 0 else []
    for origin in dict.fromkeys(origins):
        if not origin.startswith("file:"):
            continue  # the command line or standard input: nothing on disk
        path = git.workspace / origin.removeprefix("file:")  # relative: to the workspace
        try:
            mode = path.stat().st_mode
            if stat.S_ISREG(mode) and mode & 0o077:
                path.chmod(stat.S_IMODE(mode) & ~0o077)
        except OSError as error:
            if os.geteuid() != 0:
                continue  # not root: the commands run as this user, who reads it anyway
            raise CheckoutError(
                f"{path}: holds the credentials actions/checkout persisted and cannot be "
                f"made readable by its owner only ({error.strerror}); check out the "
                "repository to a writable workspace"
            ) from None


def _clone(git: Git, into: Path, name: str, base: str, head: str) -> str:
    """Make the private clone ``into`` with ``head`` checked out; the base's ref there."""
    if into.exists() and (not into.is_dir() or any(into.iterdir())):
        raise CheckoutError(f"{into}: exists and is not an empty directory; remove it first")
    into.mkdir(parents=True, exist_ok=True)
    object_format = git.out(["rev-parse", "--show-object-format"])
    git.out(["init", "--quiet", "--template=", f"--object-format={object_format}"], cwd=into)
    objects = git.workspace / git.out(["rev-parse", "--git-path", "objects"])
    alternates = into / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(f"{objects.resolve()}\n")
    shallow = git.workspace / git.out(["rev-parse", "--git-path", "shallow"])
    if shallow.is_file():
        shutil.copyfile(shallow, into / ".git" / "shallow")
    branch = _base_branch(git, name)
    git.out(["update-ref", f"refs/heads/{branch}", base], cwd=into)
    git.out(["update-ref", HEAD_REF, head], cwd=into)
    checkout = ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", head]
    done = git.run(checkout, cwd=into, timeout=FETCH_TIMEOUT)  # a large tree takes a while
    if done.returncode != 0:
        raise CheckoutError(f"{into}: `git checkout` failed: {git_reason(done.stderr)}")
    _check_work_tree(git, into, head, done.stderr)
    return branch if branch != BASE_REF else base


def _check_work_tree(git: Git, into: Path, head: str, stderr: str) -> None:
    """Every path of ``head``'s tree is in the work tree as the tree says (issue 19; see
    :mod:`repogym_action.worktree`)."""
    # Bytes: a name that is not UTF-8 must be looked up as it is.
    listed = git.run_bytes(["ls-tree", "-r", "-z", "--full-tree", head], cwd=into)
    if listed.returncode != 0:
        reason = git_reason(listed.stderr.decode(errors="replace"))
        raise CheckoutError(f"{into}: `git ls-tree` failed: {reason}")
    problem = unlike_its_tree(listed.stdout, into, stderr)
    if problem is not None:
        raise CheckoutError(problem)


def _base_branch(git: Git, name: str) -> str:
    """The base's branch name in the clone: its own name when that is a branch name that
    cannot be taken for a sha, else :data:`BASE_REF`."""
    name = name.removeprefix("refs/heads/")
    if HEX.fullmatch(name) or name.startswith(("refs/", "-")):
        return BASE_REF
    valid = git.ok(["check-ref-format", f"refs/heads/{name}"])
    return name if valid and name != "HEAD" else BASE_REF
