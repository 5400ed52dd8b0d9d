"""The batch jobs of :class:`repogym.env.gym.VectorRepoEnv` (issue 23): what an env's Submit is
as a job of :func:`repogym.batch.grade_many`, and the GradeResult of the job's line.

A job's submission is exactly what the env's own grade takes: its workspace's snapshot
(tracked files and untracked ones git does not ignore, read as the env's Workspace reads
them), checked out into a ``tree`` of its own. An untracked nested repository, the
workspace's ``.git/info/exclude``, its index: none of them reaches the job but through
that snapshot. What a ``tree`` job cannot carry (a gitlink the agent changed, a file it
tracks that git ignores, a HEAD off ``base``'s history) is left to the env's own grade.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.env.episode import RepoEnv
from repogym.errors import EnvError, RepogymError
from repogym.models import Finding, GradeComponent, GradeResult, Role
from repogym.task import parse_task
from repogym.tree import git as _git
from repogym.tree.store import GITLINK, split_z
from repogym.workspace import Workspace


def task_file(number: int, env: RepoEnv, path: Path) -> str:
    """Write ``env``'s task into ``path`` for its jobs: the bytes it was read from, or,
    for a task built in code, its JSON (a task file's YAML) when that reads back as the
    same task; :class:`EnvError` in one line when it does not."""
    data = env.task.raw
    if not data:
        data = env.task.model_dump_json(exclude_defaults=True).encode()
        try:
            same = parse_task(data).model_dump() == env.task.model_dump()
        except RepogymError:
            same = False
        if not same:
            raise EnvError(
                f"VectorRepoEnv: environment {number}'s task was built in code and does "
                "not read back from a task file: pass RepoEnv the task file's path"
            )
    path.write_bytes(data)
    return str(path)


def job_of(env: RepoEnv, task: str, tree: Path) -> dict[str, str] | None:
    """The batch job of ``env``'s workspace, its snapshot checked out into ``tree``; None
    when its grade is not one (see the module)."""
    workspace = env.workspace
    root = workspace.root
    try:
        head = _git.resolve_commit(root, "HEAD")
        if _git.merge_base(root, env.base, env.base, head) != env.base:
            return None
        snapshot = workspace.snapshot()
        try:
            if not _carried(workspace, snapshot.entries):
                return None
            workspace.copy(tree)
        finally:
            snapshot.close()
    except RepogymError:
        return None
    return {"repo": str(env.repo), "base": env.base, "tree": str(tree), "task": task}


def _carried(workspace: Workspace, entries: Mapping[str, Any]) -> bool:
    """Whether a ``tree`` job grades ``entries`` as the workspace does: a clone at the
    base, its files replaced by them, reads back the same entries only if no gitlink
    differs from the base's and no file outside the base is one git ignores (a tracked
    one is the submission's, an untracked one in the job is not)."""
    listed = _git.git(["ls-tree", "-r", "-z", "--full-tree", workspace.base], workspace.root)
    base: dict[str, str] = {}
    for record in split_z(listed):
        fields, _, path = record.partition("\t")
        mode, _, sha = fields.split()
        base[path] = f"{mode} {sha}"
    links = {p: f"{e.mode} {e.sha}" for p, e in entries.items() if e.mode == GITLINK}
    if links != {p: kept for p, kept in base.items() if kept.startswith(GITLINK)}:
        return False
    ignored = split_z(
        _git.git(["ls-files", "-z", "--cached", "--ignored", "--exclude-standard"], workspace.root)
    )
    return all(path in base for path in ignored if path in entries)


def result_of(line: Mapping[str, Any], patch: str) -> GradeResult:
    """The GradeResult of a job's report line (docs/report.md)."""
    components = tuple(
        GradeComponent(
            name=c["name"],
            score=c["score"],
            passed=c["passed"],
            role=Role(c["role"]),
            details=c.get("details") or {},
            messages=tuple(c.get("messages") or ()),
            findings=tuple(Finding(**f) for f in c.get("findings") or ()),
            weight=c.get("weight", 0.0),
        )
        for c in line["components"]
    )
    return GradeResult(
        score=line["score"],
        passed=line["passed"],
        components=components,
        patch=patch,
        files_changed=tuple(line.get("files_changed") or ()),
    )
