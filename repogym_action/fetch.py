"""The history a run grades, fetched from origin into the workspace.

actions/checkout fetches one commit; :func:`fetch_history` fetches the base and the head
and deepens the history (by 50, 100, ... commits, then all of it) until their merge base is
in it, falling back to refs that hold them for an origin that will not give a commit by its
sha, and says in one line why it cannot when it cannot. :func:`resolve_base` fetches the
branch or tag the `base` input names. Talking to origin is a step of its own, apart from
:mod:`repogym_action.checkout`, which checks the workspace before it and makes the private
clone after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from repogym_action.event import Target
from repogym_action.gitcall import (
    CREDENTIAL_KEYS,
    FETCH_TIMEOUT,
    HEX,
    CheckoutError,
    Git,
    git_reason,
)

__all__ = [
    "DEEPENINGS",
    "FIRST_DEPTH",
    "fallback_refs",
    "fetch_history",
    "has",
    "resolve_base",
]

FIRST_DEPTH = 50  # commits fetched below base and head at first
DEEPENINGS = 5  # deepenings (by 50, 100, ... 800 commits) before the whole history is fetched

# How git says that origin wanted credentials it did not get (LC_ALL=C).
_AUTH_FAILURE = re.compile(
    r"Authentication failed|could not read (Username|Password)|terminal prompts disabled"
    r"|Permission denied|Repository not found|Invalid username or password"
    r"|\b(401|403)\b",
    re.IGNORECASE,
)
# How git says that a ref it was asked for is not on origin.
_MISSING_REF = re.compile(r"couldn't find remote ref (\S+)")


class _RefMissing(CheckoutError):
    """A fallback ref (the base branch, ``refs/pull/N/head``) is not on origin."""

    def __init__(self, line: str, *, ref: str) -> None:
        super().__init__(line)
        self.ref = ref


def resolve_base(git: Git, name: str, log: Callable[[str], None]) -> str:
    """The commit the `base` input names: its tip on origin, else a local commit."""
    log(f"fetching the base `{name}` from origin")
    depth = [f"--depth={FIRST_DEPTH}"] if git.shallow() else []
    fetched = git.run(_fetch_command(depth, [name]), timeout=FETCH_TIMEOUT)
    if fetched.returncode == 0:
        return git.out(["rev-parse", "--verify", "FETCH_HEAD^{commit}"])
    local = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"])
    if local.returncode == 0:
        return local.stdout.strip()
    raise CheckoutError(
        f"input `base`: `{name}` names no branch, tag or commit of origin "
        f"({git_reason(fetched.stderr)}); set it to a branch name, a tag or a full sha"
    )


def _fetch_command(options: Sequence[str], wants: Sequence[str]) -> list[str]:
    """``git fetch`` of only ``wants`` from origin, into FETCH_HEAD: no tags, no
    remote-tracking refs written, and no want (a `base` input) read as an option."""
    no_more = ["--no-tags", "--refmap=", "--no-recurse-submodules"]
    return ["fetch", *no_more, *options, "--end-of-options", "origin", *wants]


def fallback_refs(target: Target) -> list[str]:
    """Refs that hold the target's commits, for an origin that will not give a commit
    by its sha (an older server): the base branch and the pull request's head."""
    refs = []
    if not HEX.fullmatch(target.base_ref) and not target.base_ref.startswith("refs/"):
        refs.append(f"refs/heads/{target.base_ref}")
    if target.pull is not None:
        refs.append(f"refs/pull/{target.pull.number}/head")
    return refs


def fetch_history(
    git: Git, base: str, head: str, fallback: Sequence[str], log: Callable[[str], None]
) -> str:
    """Fetch ``base``, ``head`` and the history down to their merge base; the merge
    base. Nothing is fetched when the workspace has it all (``fetch-depth: 0``)."""
    try:
        return _fetch_down_to_merge_base(git, base, head, fallback, log)
    except _RefMissing as missing:
        raise _gone(git, missing.ref, base, head) from None


def _fetch_down_to_merge_base(
    git: Git, base: str, head: str, fallback: Sequence[str], log: Callable[[str], None]
) -> str:
    found = _merge_base(git, base, head)
    if found is not None:
        return found
    wants: Sequence[str] = [base, head]
    if not (has(git, base) and has(git, head)):
        depth = [f"--depth={FIRST_DEPTH}"] if git.shallow() else []
        note = f" ({FIRST_DEPTH} commits deep)" if depth else ""
        log(f"fetching base {base[:12]} and head {head[:12]} from origin{note}")
        wants = _fetch(git, wants, fallback, depth)
    # Deeper and deeper (50, 100, ... commits below the shallow boundary), then all.
    rounds = [f"--deepen={FIRST_DEPTH << n}" for n in range(DEEPENINGS)] + ["--unshallow"]
    for args in rounds:
        if _merge_base(git, base, head) is not None or not git.shallow():
            break
        log(
            f"deepening the history by {args.partition('=')[2]} commits to reach the merge base"
            if args != "--unshallow"
            else "fetching the whole history to reach the merge base"
        )
        wants = _fetch(git, wants, fallback, [args])
    found = _merge_base(git, base, head)
    if found is None:
        raise _no_merge_base(git, base, head)
    return found


def _fetch(
    git: Git, wants: Sequence[str], fallback: Sequence[str], args: Sequence[str]
) -> Sequence[str]:
    """Fetch ``wants`` (shas) from origin, else the ``fallback`` refs that hold them;
    what was fetched, to deepen the same way later."""
    done = git.run(_fetch_command(args, wants), timeout=FETCH_TIMEOUT)
    if done.returncode == 0:
        return wants
    if not fallback or wants == fallback or _AUTH_FAILURE.search(done.stderr):
        raise _fetch_failed(git, done.stderr)
    return _fetch(git, fallback, fallback, args)


def _fetch_failed(git: Git, stderr: str) -> CheckoutError:
    """The error for a fetch that failed: when origin wanted credentials, the setting
    that keeps actions/checkout's; else the one that makes fetching needless."""
    missing = _MISSING_REF.search(stderr)
    if missing is not None and not _AUTH_FAILURE.search(stderr):
        return _RefMissing(
            f"{git.workspace}: `git fetch origin` failed: {git_reason(stderr)}", ref=missing[1]
        )
    credentials = git.ok(["config", "--get-regexp", CREDENTIAL_KEYS])
    if _AUTH_FAILURE.search(stderr) or not credentials:
        fix = (
            "actions/checkout must leave its credentials for this step: keep "
            "`persist-credentials: true` (its default), or set `fetch-depth: 0` on it"
        )
    else:
        fix = "set `fetch-depth: 0` on actions/checkout so that the history is there"
    return CheckoutError(f"{git.workspace}: `git fetch origin` failed: {git_reason(stderr)}; {fix}")


def _merge_base(git: Git, base: str, head: str) -> str | None:
    """The merge base of ``base`` and ``head`` if the workspace holds them and the
    history down to it, else None."""
    if not (has(git, base) and has(git, head)):
        return None
    done = git.run(["merge-base", base, head])
    return done.stdout.strip() if done.returncode == 0 else None


def has(git: Git, sha: str) -> bool:
    return git.ok(["cat-file", "-e", f"{sha}^{{commit}}"])


def _gone(git: Git, ref: str, base: str, head: str) -> CheckoutError:
    """The error for an event whose commits origin gave neither by sha nor by ``ref``
    (the pull request's head, or the base branch): it changed since the event."""
    if ref.startswith("refs/pull/"):
        return CheckoutError(
            f"{git.workspace}: the head commit {head} is not on origin, nor is {ref} (was "
            "the pull request's branch force-pushed or deleted since the event?); re-run "
            "the workflow for the current commits"
        )
    return CheckoutError(
        f"{git.workspace}: origin gives neither the event's commits (base {base[:12]}, head "
        f"{head[:12]}) nor {ref} (was the base branch deleted or renamed since the event?); "
        "re-run the workflow for the current commits, or set the `base` input to the "
        "branch to grade against"
    )


def _no_merge_base(git: Git, base: str, head: str) -> CheckoutError:
    """Why the merge base is not there after fetching all origin would give."""
    for role, sha in (("base", base), ("head", head)):
        if not has(git, sha):
            return CheckoutError(
                f"{git.workspace}: the {role} commit {sha} is not on origin (was the branch "
                "force-pushed since the event?); re-run the workflow for the current commits"
            )
    if git.shallow():
        return CheckoutError(
            f"{git.workspace}: the history fetched from origin does not reach the merge base "
            f"of base {base[:12]} and head {head[:12]}; set `fetch-depth: 0` on "
            "actions/checkout"
        )
    return CheckoutError(
        f"{git.workspace}: base {base[:12]} and head {head[:12]} have no common ancestor "
        "(unrelated histories); set the `base` input to the branch the pull request "
        "was made from"
    )
