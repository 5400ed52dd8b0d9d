"""The commits a run grades, made ready in a private clone.

actions/checkout leaves the workspace with one commit: for a pull request the test merge
GitHub made (``refs/pull/N/merge``), fetched with depth 1. Grading needs more: the base
(where the task is read, issue 10: a pull request cannot change its own rubric), the head
(the tree that is graded) and their merge base (the baseline). :func:`prepare` fetches
them into the workspace from ``origin`` with whatever credentials actions/checkout left
there, deepening the history until the merge base is in it, then makes a private clone
that borrows the workspace's objects (``objects/info/alternates``) and has the head
checked out.

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
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import RepogymError, UsageError
from repogym.tree.git import run as run_git
from repogym_action.event import Target
from repogym_action.worktree import unlike_its_tree

FETCH_TIMEOUT = 900.0  # seconds for one fetch from origin, or the checkout of the head
LOCAL_TIMEOUT = 120.0  # seconds for a local git command
FIRST_DEPTH = 50  # commits fetched below base and head at first
DEEPENINGS = 5  # deepenings (by 50, 100, ... 800 commits) before the whole history is fetched

HEAD_REF = "refs/repogym/head"  # in the private clone; outside refs/heads, so no branch collides
BASE_REF = "repogym-base"  # the base's branch in the clone when its own name cannot serve

# The keys under which actions/checkout persists credentials: the token in a header, or
# the command that gives ssh its key.
_CREDENTIAL_KEYS = r"^(http\..*\.extraheader|core\.sshcommand)$"

# How git says that origin wanted credentials it did not get (LC_ALL=C).
_AUTH_FAILURE = re.compile(
    r"Authentication failed|could not read (Username|Password)|terminal prompts disabled"
    r"|Permission denied|Repository not found|Invalid username or password"
    r"|\b(401|403)\b",
    re.IGNORECASE,
)
_HEX = re.compile(r"[0-9a-f]{4,64}")
# How git says that a ref it was asked for is not on origin.
_MISSING_REF = re.compile(r"couldn't find remote ref (\S+)")


class CheckoutError(UsageError):
    """The commits to grade cannot be had: the workspace is not a checkout, origin
    refuses to give them, or its history stops short of the merge base."""


class _RefMissing(CheckoutError):
    """A fallback ref (the base branch, ``refs/pull/N/head``) is not on origin."""

    def __init__(self, line: str, *, ref: str) -> None:
        super().__init__(line)
        self.ref = ref


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
        base = target.base_sha or _resolve_base(git, target.base_ref, log)
        fallback = _fallback_refs(target)
        try:
            merge_base = _fetch_history(git, base, target.head_sha, fallback, log)
        except CheckoutError:
            if _base_input_sha(target) and not _has(git, base):
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


@dataclass(frozen=True, slots=True)
class _Git:
    """The engine's git (:func:`repogym.tree.git.run`) bound to the workspace, the runner's
    environment that git is given (``passed``) and our global ``config``; output as text."""

    workspace: Path
    passed: Mapping[str, str]
    config: Path

    def run(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        done = self.run_bytes(args, cwd=cwd, timeout=timeout)
        return subprocess.CompletedProcess(
            done.args, done.returncode, _text(done.stdout), _text(done.stderr)
        )

    def run_bytes(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> subprocess.CompletedProcess[bytes]:
        where = cwd or self.workspace
        own = {"GIT_CONFIG_GLOBAL": str(self.config)}
        try:
            return run_git(args, where, base=self.passed, env=own, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckoutError(
                f"{where}: `git {args[0]}` took longer than {timeout:.0f} s; "
                "re-run the job, or set `fetch-depth: 0` on actions/checkout"
            ) from None
        except RepogymError as error:  # git is not there
            raise CheckoutError(str(error)) from None

    def out(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> str:
        """stdout of a command that must succeed, stripped."""
        done = self.run(args, cwd=cwd, timeout=timeout)
        if done.returncode != 0:
            raise CheckoutError(
                f"{cwd or self.workspace}: `git {args[0]}` failed: {_reason(done.stderr)}"
            )
        return done.stdout.strip()

    def ok(self, args: Sequence[str]) -> bool:
        return self.run(args).returncode == 0

    def shallow(self) -> bool:
        return self.out(["rev-parse", "--is-shallow-repository"]) == "true"


def _text(output: bytes) -> str:
    """git's output as text, as ``subprocess.run(text=True)`` gives it: undecodable bytes
    replaced, line ends made ``\n``."""
    return output.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@contextmanager
def _workspace_git(workspace: Path, passed: Mapping[str, str]) -> Iterator[_Git]:
    """A :class:`_Git` whose global configuration is a temporary file of ours that lets
    git work in ``workspace`` (``safe.directory``); removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="repogym-git-") as private:
        config = Path(private) / "gitconfig"
        config.touch(mode=0o600)
        git = _Git(workspace, passed, config)
        for path in dict.fromkeys([str(workspace.absolute()), str(workspace.resolve())]):
            add = ["config", "--file", str(config), "--add", "safe.directory", path]
            git.out(add, cwd=Path(private))
        yield git


def _check_workspace(git: _Git) -> None:
    """The workspace must be a clone with the remote ``origin``."""
    if not git.workspace.is_dir():
        raise CheckoutError(
            f"{git.workspace}: the workspace is not a directory; check out the repository "
            "with actions/checkout before this step"
        )
    done = git.run(["rev-parse", "--show-toplevel"])
    if done.returncode != 0 or Path(done.stdout.strip()) != git.workspace.resolve():
        reason = _reason(done.stderr) if done.returncode else "it is inside another one"
        raise CheckoutError(
            f"{git.workspace}: not the top of a git checkout ({reason}); check out the "
            "repository with actions/checkout (without `path`) before this step"
        )
    if not git.ok(["config", "--get", "remote.origin.url"]):
        raise CheckoutError(
            f"{git.workspace}: the checkout has no remote `origin` to fetch the pull "
            "request's commits from; check it out with actions/checkout"
        )


def _close_credentials(git: _Git) -> None:
    """Make each config file that holds a credential (the workspace's ``.git/config``,
    the file under RUNNER_TEMP that actions/checkout v6 includes) readable by its owner
    only. actions/checkout writes them readable by all; the submission's commands run
    as another user (repogym.sandbox.users) and must not read the token there. They stay so:
    the runner's later steps run as their owner, and a file with a token in it is its
    owner's alone."""
    listed = ["config", "--null", "--show-origin", "--name-only", "--get-regexp"]
    done = git.run([*listed, _CREDENTIAL_KEYS])
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


def _resolve_base(git: _Git, name: str, log: Callable[[str], None]) -> str:
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
        f"({_reason(fetched.stderr)}); set it to a branch name, a tag or a full sha"
    )


def _fetch_command(options: Sequence[str], wants: Sequence[str]) -> list[str]:
    """``git fetch`` of only ``wants`` from origin, into FETCH_HEAD: no tags, no
    remote-tracking refs written, and no want (a `base` input) read as an option."""
    no_more = ["--no-tags", "--refmap=", "--no-recurse-submodules"]
    return ["fetch", *no_more, *options, "--end-of-options", "origin", *wants]


def _fallback_refs(target: Target) -> list[str]:
    """Refs that hold the target's commits, for an origin that will not give a commit
    by its sha (an older server): the base branch and the pull request's head."""
    refs = []
    if not _HEX.fullmatch(target.base_ref) and not target.base_ref.startswith("refs/"):
        refs.append(f"refs/heads/{target.base_ref}")
    if target.pull is not None:
        refs.append(f"refs/pull/{target.pull.number}/head")
    return refs


def _fetch_history(
    git: _Git, base: str, head: str, fallback: Sequence[str], log: Callable[[str], None]
) -> str:
    """Fetch ``base``, ``head`` and the history down to their merge base; the merge
    base. Nothing is fetched when the workspace has it all (``fetch-depth: 0``)."""
    try:
        return _fetch_down_to_merge_base(git, base, head, fallback, log)
    except _RefMissing as missing:
        raise _gone(git, missing.ref, base, head) from None


def _fetch_down_to_merge_base(
    git: _Git, base: str, head: str, fallback: Sequence[str], log: Callable[[str], None]
) -> str:
    found = _merge_base(git, base, head)
    if found is not None:
        return found
    wants: Sequence[str] = [base, head]
    if not (_has(git, base) and _has(git, head)):
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
    git: _Git, wants: Sequence[str], fallback: Sequence[str], args: Sequence[str]
) -> Sequence[str]:
    """Fetch ``wants`` (shas) from origin, else the ``fallback`` refs that hold them;
    what was fetched, to deepen the same way later."""
    done = git.run(_fetch_command(args, wants), timeout=FETCH_TIMEOUT)
    if done.returncode == 0:
        return wants
    if not fallback or wants == fallback or _AUTH_FAILURE.search(done.stderr):
        raise _fetch_failed(git, done.stderr)
    return _fetch(git, fallback, fallback, args)


def _fetch_failed(git: _Git, stderr: str) -> CheckoutError:
    """The error for a fetch that failed: when origin wanted credentials, the setting
    that keeps actions/checkout's; else the one that makes fetching needless."""
    missing = _MISSING_REF.search(stderr)
    if missing is not None and not _AUTH_FAILURE.search(stderr):
        return _RefMissing(
            f"{git.workspace}: `git fetch origin` failed: {_reason(stderr)}", ref=missing[1]
        )
    credentials = git.ok(["config", "--get-regexp", _CREDENTIAL_KEYS])
    if _AUTH_FAILURE.search(stderr) or not credentials:
        fix = (
            "actions/checkout must leave its credentials for this step: keep "
            "`persist-credentials: true` (its default), or set `fetch-depth: 0` on it"
        )
    else:
        fix = "set `fetch-depth: 0` on actions/checkout so that the history is there"
    return CheckoutError(f"{git.workspace}: `git fetch origin` failed: {_reason(stderr)}; {fix}")


def _merge_base(git: _Git, base: str, head: str) -> str | None:
    """The merge base of ``base`` and ``head`` if the workspace holds them and the
    history down to it, else None."""
    if not (_has(git, base) and _has(git, head)):
        return None
    done = git.run(["merge-base", base, head])
    return done.stdout.strip() if done.returncode == 0 else None


def _has(git: _Git, sha: str) -> bool:
    return git.ok(["cat-file", "-e", f"{sha}^{{commit}}"])


def _gone(git: _Git, ref: str, base: str, head: str) -> CheckoutError:
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


def _no_merge_base(git: _Git, base: str, head: str) -> CheckoutError:
    """Why the merge base is not there after fetching all origin would give."""
    for role, sha in (("base", base), ("head", head)):
        if not _has(git, sha):
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


def _clone(git: _Git, into: Path, name: str, base: str, head: str) -> str:
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
        raise CheckoutError(f"{into}: `git checkout` failed: {_reason(done.stderr)}")
    _check_work_tree(git, into, head, done.stderr)
    return branch if branch != BASE_REF else base


def _check_work_tree(git: _Git, into: Path, head: str, stderr: str) -> None:
    """Every path of ``head``'s tree is in the work tree as the tree says (issue 19; see
    :mod:`repogym_action.worktree`)."""
    # Bytes: a name that is not UTF-8 must be looked up as it is.
    listed = git.run_bytes(["ls-tree", "-r", "-z", "--full-tree", head], cwd=into)
    if listed.returncode != 0:
        reason = _reason(listed.stderr.decode(errors="replace"))
        raise CheckoutError(f"{into}: `git ls-tree` failed: {reason}")
    problem = unlike_its_tree(listed.stdout, into, stderr)
    if problem is not None:
        raise CheckoutError(problem)


def _base_branch(git: _Git, name: str) -> str:
    """The base's branch name in the clone: its own name when that is a branch name that
    cannot be taken for a sha, else :data:`BASE_REF`."""
    name = name.removeprefix("refs/heads/")
    if _HEX.fullmatch(name) or name.startswith(("refs/", "-")):
        return BASE_REF
    valid = git.ok(["check-ref-format", f"refs/heads/{name}"])
    return name if valid and name != "HEAD" else BASE_REF


def _reason(stderr: str) -> str:
    """git's reason for a failure, in one line: its first ``fatal:`` or ``error:`` line
    (the cause; what follows is consequence and advice), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
    reason = causes[0] if causes else lines[-1] if lines else "no message"
    return reason.rstrip(".")
