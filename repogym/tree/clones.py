"""Clones of a repository at one commit: one that borrows the repository's objects (the
grader's own trees), and one that holds that commit's history alone (RepoEnv's agent's
workspace, which must not reach anything later: issue 43)."""

from __future__ import annotations

from pathlib import Path

from repogym.errors import WorkspaceError
from repogym.tree import git as _git

__all__ = ["clone_at", "own_history_at"]


def clone_at(
    repo: Path, commit: str, dest: Path, *, shared: bool = True, files: bool = True
) -> Path:
    """A git work tree at ``dest``, checked out (detached) at ``commit``; without
    ``files``, its index at ``commit`` and no file written (the caller writes them).

    It borrows ``repo``'s objects read-only (``--shared``) and has no remote, so nothing
    done in it, a ``git push`` included, reaches ``repo``. Without ``shared`` it has
    objects of its own (a tree that goes into a container, where ``repo`` is not).
    """
    how = "--shared" if shared else "--no-hardlinks"
    _git.git(["clone", how, "--no-checkout", "--quiet", "--", str(repo), str(dest)], repo)
    if files:
        _git.git(["checkout", "--quiet", "--detach", commit], dest)
    else:
        _git.git(["reset", "--quiet", commit], dest)
    _git.git(["remote", "remove", "origin"], dest)
    return dest


def own_history_at(repo: Path, commit: str, dest: Path) -> Path:
    """A git work tree at ``dest``, checked out (detached) at ``commit``, that holds
    ``commit``'s history and nothing else of ``repo`` (issue 43): objects of its own,
    those reachable from ``commit`` only (no later commit, no other branch's blob), no
    ref but ``HEAD``, no alternates, no remote, nothing that names ``repo``'s path.
    RepoEnv's agent reads its workspace's ``.git``: a clone that borrowed ``repo``'s
    objects showed it the commit with the fix (SWE-bench's published leak)."""
    _git.git(["init", "--quiet", "--", str(dest)], repo)
    packer = _git.start(["pack-objects", "--revs", "--stdout", "--quiet"], repo, env={})
    assert packer.stdin is not None and packer.stdout is not None
    packer.stdin.write(f"{commit}\n".encode())
    packer.stdin.close()
    try:
        indexed = _git.run(["index-pack", "--stdin"], dest, stdin=packer.stdout.read())
    finally:
        packer.stdout.close()
        packer.wait()
    if packer.returncode != 0 or indexed.returncode != 0:
        said = indexed.stderr.decode(errors="replace").strip()
        raise WorkspaceError(f"{repo}: could not copy the history of {commit[:12]}: {said}")
    _git.git(["checkout", "--quiet", "--detach", commit], dest)
    return dest
