"""An agent's submission rebuilt where its grade can trust the base (issue 23).

RepoEnv's agent runs its commands in its workspace, ``.git`` included: it can write a
loose object there under the id of one of the base's blobs, with other bytes (git does
not check an object against its id when it reads it), and every later read of the base
through the workspace, the tests the grader puts back from the base among them, would
get its bytes. Found in review: a planted test file whose tests all pass scored 1.0.

So the grade never reads the workspace's git. :func:`rebuild` takes the submission as
the grade would (its snapshot: every file git lists, tracked or untracked and not
ignored, by content), and writes it into a fresh clone of the environment's own
repository at the base, whose objects no command writes: the base, the rubric and
everything put back from them come from there. The clone's index stays the base's; a
file the submission adds that git would ignore there (one the agent added by force) is
added to it, and so is a gitlink the agent changed, so that the clone's snapshot holds
exactly the workspace's files.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from repogym.errors import WorkspaceError
from repogym.grading import grade
from repogym.models import GradeResult
from repogym.task import Task
from repogym.tree import git as _git
from repogym.tree.clones import clone_at
from repogym.tree.store import GITLINK, SYMLINK, split_z
from repogym.workspace import Workspace


def grade_rebuilt(workspace: Workspace, repo: Path, task: Task) -> GradeResult:
    """The grade of ``workspace``'s submission, rebuilt in a clone of ``repo``."""
    with rebuilt(workspace, repo) as trusted:
        return grade(trusted.root, base=workspace.base, task=task).result


@contextlib.contextmanager
def rebuilt(workspace: Workspace, repo: Path) -> Iterator[Workspace]:
    """``workspace``'s submission rebuilt in a clone of ``repo``, as a Workspace to grade
    (a custom grade of RepoEnv's, docs/env.md); removed on the way out."""
    with tempfile.TemporaryDirectory(prefix="repogym-submit-") as holder:
        tree = rebuild(workspace, repo, Path(holder) / "repo")
        trusted = Workspace(tree, workspace.base, workspace.task, base_ref=workspace.base_ref)
        try:
            yield trusted
        finally:
            trusted.close()


def rebuild(workspace: Workspace, repo: Path, dest: Path) -> Path:
    """``workspace``'s submission in a new clone of ``repo`` at ``dest`` (see the module);
    ``dest``."""
    check_git_dir(workspace.root)
    if _git.toplevel(workspace.root) != workspace.root:  # a tree broken beyond grading
        raise WorkspaceError(
            f"{workspace.root}: its git names another work tree (core.worktree or a .git "
            "file): grading reads the workspace only"
        )
    snapshot = workspace.snapshot()
    entries = dict(snapshot.entries)
    files = dest.parent / f"{dest.name}-files"
    workspace.copy(files)
    clone_at(repo, workspace.base, dest, files=False)
    for child in files.iterdir():
        child.rename(dest / child.name)
    files.rmdir()
    listed = _git.git(["ls-files", "-z", "--others", "--ignored", "--exclude-standard"], dest)
    forced = [p for p in split_z(listed) if p in entries and entries[p].mode != GITLINK]
    links = [p for p, e in entries.items() if e.mode == GITLINK]
    index = [_raw_blob(dest, p, entries[p].mode) for p in forced]
    index += [f"{GITLINK} {entries[p].sha}\t{p}" for p in links]
    if index:
        info = "".join(f"{line}\0" for line in index).encode("utf-8", "surrogateescape")
        _git.git(["update-index", "-z", "--add", "--index-info"], dest, stdin=info)
    return dest


# Files of the workspace's .git that reading its files makes git open: each must be a
# regular file, or a read of a FIFO would wait for ever (issue 43).
_READ = ("config", "HEAD", "index", "info/exclude")


def check_git_dir(root: Path) -> None:
    """Refuse a workspace whose ``.git`` would make the grader's git wait or read
    elsewhere: ``.git`` not a directory of its own, a file git reads that is not a regular
    file, or a configuration that includes another file (git opens what an include
    names, a FIFO included, and would wait on it for ever). The agent wrote all of it;
    a :class:`WorkspaceError` scores its Submit 0."""
    git_dir = root / ".git"
    try:
        mode = git_dir.lstat().st_mode
    except FileNotFoundError:
        raise WorkspaceError(f"{root}: not inside a git work tree (its .git is gone)") from None
    if not stat.S_ISDIR(mode):
        raise WorkspaceError(f"{git_dir}: not a directory; grading reads a workspace's own .git")
    for name in _READ:
        try:
            info = (git_dir / name).lstat()
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f"{git_dir / name}: not a regular file; grading does not read it")
    # From outside any repository, or git would read the workspace's config (and what it
    # includes) to set itself up before reading the file.
    config = ["config", "--no-includes", "--file", str(git_dir / "config"), "--name-only", "--list"]
    listed = _git.git(config, Path("/"))
    includes = [k for k in listed.decode(errors="replace").split() if k.startswith("include")]
    if includes:
        raise WorkspaceError(
            f"{git_dir / 'config'}: `{includes[0]}` includes another file, which grading "
            "does not read; remove it"
        )


def _raw_blob(repo: Path, path: str, mode: str) -> str:
    """``path``'s bytes as a blob of ``repo``'s own, no attribute converting them (its id
    is that of the bytes: nothing written so can stand in for another); its index line."""
    file = repo / path
    data = os.fsencode(file.readlink()) if mode == SYMLINK else file.read_bytes()
    written = _git.git(["hash-object", "-w", "--no-filters", "--stdin"], repo, stdin=data)
    return f"{mode} {written.decode().strip()}\t{path}"
