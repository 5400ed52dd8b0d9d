"""The task's environment: the image its commands run in, had once per grade (issue 20).

- ``dockerfile:`` is read at the rubric commit (the base's tip, where the task was read),
  never from the submission, and built with that commit's tree as context (its
  ``.dockerignore`` applied). The image is tagged ``repogym-env:<digest>``, the digest of
  what the build reads (the Dockerfile's path and the context's paths, modes and blob
  ids, from git), so a later grade finds it by that tag and reuses it while that is
  unchanged. Never by a label: a Dockerfile sets any label it likes, on every stage the
  classic builder keeps, and another task's could so pass for this one's (issue 44).
- An image that cannot be pulled, or a build that fails, because the engine could not
  reach the network (a registry's host not found, a connection refused or timed out) is
  an :class:`~repogym.errors.OutageError`: exit 3, not the task's to fix.
- ``image:`` is used as it is when the engine has it (an image built there), else pulled
  once; a name without a digest is allowed with a warning naming what it resolved to.

:func:`prepare` returns the :class:`Prepared` image and what the report records of it;
every way it can fail is an :class:`~repogym.errors.EngineError` raised before grading.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from repogym.errors import LOG_LINE, EngineError, OutageError
from repogym.run.container.engine import connect, docker_module
from repogym.run.container.episode import EpisodeRunner
from repogym.run.container.runner import ContainerRunner
from repogym.task import Task
from repogym.task._environment import EnvironmentConfig, Limits
from repogym.tree import git as _git

How = Literal["built", "reused", "pulled", "local"]
BUILD_LOG_LINES = 20  # lines of a failed build's log an error shows
IMAGE_LABEL = "repogym.environment"  # the digest of what a built image was built from


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """An image ready to run commands in, and how it was had."""

    config: EnvironmentConfig
    image: str  # what the task named: the Dockerfile's path or the image reference
    id: str  # the engine's image id, sha256:...
    digest: str | None  # a registry digest, name@sha256:..., when the image has one
    how: How
    seconds: float
    warnings: tuple[str, ...] = ()
    client: Any = field(default=None, repr=False, compare=False)
    limits: Limits = field(default_factory=Limits)  # the task's, wherever it wrote them

    def record(self) -> dict[str, Any]:
        """What the report says of the environment."""
        config = self.config
        return {
            "source": "dockerfile" if config.dockerfile is not None else "image",
            "image": self.image,
            "id": self.id,
            "digest": self.digest,
            "how": self.how,
            "seconds": round(self.seconds, 3),
            "network": config.network,
            "limits": self.limits.model_dump(mode="json"),
            "warnings": list(self.warnings),
        }

    def runner(self, task: Task) -> ContainerRunner:
        """A runner of the task's commands in containers of this image."""
        return ContainerRunner(
            self.client,
            self.id,
            name=self.image,
            limits=self.limits,
            network=self.config.network,
            pass_env=task.pass_env,
            set_env=task.env,
            record=self.record(),
        )

    def episode_runner(self, task: Task) -> EpisodeRunner:
        """A runner of RepoEnv's agent's commands in an episode's container of this
        image (issue 23)."""
        return EpisodeRunner(
            self.client,
            self.id,
            limits=self.limits,
            network=self.config.network,
            pass_env=task.pass_env,
            set_env=task.env,
        )


def prepare(task: Task, repo: Path, rubric: str) -> Prepared:
    """Have the image of ``task.environment``; ``repo`` and ``rubric`` (a commit) are
    where a Dockerfile and its context are read."""
    config = task.environment
    if config is None:
        raise ValueError("the task has no `environment`")
    client = connect()
    start = time.monotonic()
    if config.dockerfile is not None:
        image_id, how = _build(client, task, config.dockerfile, repo, rubric)
        return Prepared(
            config=config,
            image=config.dockerfile,
            id=image_id,
            digest=None,
            how=how,
            seconds=time.monotonic() - start,
            client=client,
            limits=task.command_limits,
        )
    assert config.image is not None
    found, how = _image(client, task, config.image)
    digests = found.attrs.get("RepoDigests") or []
    warnings = () if config.pinned else (_unpinned(task, config.image, found.id, digests),)
    return Prepared(
        config=config,
        image=config.image,
        id=found.id,
        digest=digests[0] if digests else None,
        how=how,
        seconds=time.monotonic() - start,
        warnings=warnings,
        client=client,
        limits=task.command_limits,
    )


def _unpinned(task: Task, name: str, image_id: str, digests: list[str]) -> str:
    resolved = digests[0] if digests else f"the local image {image_id}"
    pin = f"; pin it: `image: {name.split('@')[0]}@{digests[0].split('@')[1]}`" if digests else ""
    return (
        f"{task.source}: `environment.image` {name!r} names no digest, so it may change under "
        f"the task: it resolved to {resolved}{pin}"
    )


def _image(client: Any, task: Task, name: str) -> tuple[Any, How]:
    docker = docker_module()
    try:
        return client.images.get(name), "local"
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError as error:
        raise EngineError(f"{task.source}: `environment.image` {name!r}: {_said(error)}") from None
    repository, tag = _split(name)
    try:
        return client.images.pull(repository, tag=tag), "pulled"
    except docker.errors.APIError as error:
        said, unreached = _said(error), _unreached(str(error))
        if unreached is not None:
            raise OutageError(
                f"{task.source}: `environment.image` {name!r} cannot be pulled: {said}; "
                + _OUTAGE.format(unreached)
            ) from None
        raise EngineError(
            f"{task.source}: `environment.image` {name!r} cannot be pulled: {said}; "
            "check the name and that the engine can reach its registry, or build it there"
        ) from None


def _split(name: str) -> tuple[str, str | None]:
    """``repository`` and ``tag`` (or ``sha256:...``) of an image reference."""
    if "@" in name:
        repository, digest = name.split("@", 1)
        if ":" in repository.rsplit("/", 1)[-1]:
            repository = repository.rsplit(":", 1)[0]
        return repository, digest
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = name.rsplit(":", 1)
        return repository, tag
    return name, "latest"


def _said(error: Exception) -> str:
    explanation = getattr(error, "explanation", None) or str(error)
    return str(explanation).strip().splitlines()[0][:300]


# -- a Dockerfile of the base ----------------------------------------------------------------


def _build(client: Any, task: Task, dockerfile: str, repo: Path, rubric: str) -> tuple[str, How]:
    """The image built from ``dockerfile`` at ``rubric``, or the one built before from
    the same inputs."""
    entries = _context(task, dockerfile, repo, rubric)
    digest = _digest(dockerfile, entries)
    tag = f"repogym-env:{digest}"
    try:
        found = client.images.get(tag)
    except docker_module().errors.ImageNotFound:
        found = None
    if found is not None and (found.labels or {}).get(IMAGE_LABEL) == digest:
        return found.id, "reused"
    context = _archive(repo, entries)
    log: list[str] = []
    image_id = None
    try:
        for part in client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            tag=tag,
            labels={IMAGE_LABEL: digest, "repogym": "1"},
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        ):
            if "stream" in part:
                log += str(part["stream"]).splitlines()
            if "error" in part:
                raise _BuildFailed(str(part["error"]).strip())
            aux = part.get("aux")
            if isinstance(aux, dict) and "ID" in aux:
                image_id = aux["ID"]
    except _BuildFailed as failed:
        raise _build_error(task, dockerfile, rubric, str(failed), log) from None
    except docker_module().errors.APIError as error:
        raise _build_error(task, dockerfile, rubric, _said(error), log) from None
    if image_id is None:
        image_id = client.images.get(tag).id
    return image_id, "built"


class _BuildFailed(Exception):
    pass


def _build_error(task: Task, dockerfile: str, rubric: str, why: str, log: list[str]) -> EngineError:
    said = why.splitlines()[0] if why else "the build failed"
    tail = [x for x in log if x.strip()][-BUILD_LOG_LINES:]
    where = f"{task.source}: `environment.dockerfile` {dockerfile} (at {rubric[:12]})"
    unreached = _unreached("\n".join([why, *tail]))
    if unreached is not None:
        first = f"{where} could not be built: {said}; {_OUTAGE.format(unreached)}"
    else:
        first = f"{where} does not build: {said}; fix it on the base branch"
    lines = [first + (" (the build log's last lines follow)" if log else "")]
    lines += [f"{LOG_LINE}{line}" for line in tail]
    return (EngineError if unreached is None else OutageError)(*lines)


# What the engine, or a program a build runs, says when the network is not there (in
# lower case: matched whatever the case of the message).
_UNREACHED = (
    "no such host",
    "temporary failure in name resolution",
    "could not resolve host",
    "name or service not known",
    "i/o timeout",
    "connection refused",
    "network is unreachable",
    "tls handshake timeout",
    "client.timeout exceeded",
)
_OUTAGE = (
    "the engine could not reach the network ({}): not the task's to fix, grade again once "
    "it can (a registry's name that does not exist is said so too: check it)"
)


def _unreached(text: str) -> str | None:
    """What in ``text`` says the network could not be reached, if anything does."""
    lowered = text.lower()
    return next((marker for marker in _UNREACHED if marker in lowered), None)


@dataclass(frozen=True, slots=True)
class _Entry:
    path: str
    mode: str  # git's: 100644, 100755, 120000
    blob: str


def _context(task: Task, dockerfile: str, repo: Path, rubric: str) -> list[_Entry]:
    """The files of ``rubric`` a build of ``dockerfile`` reads: the tree less what its
    ``.dockerignore`` leaves out (the Dockerfile itself always in)."""
    entries = list(_tree(repo, rubric))
    paths = {e.path for e in entries}
    if dockerfile not in paths:
        raise EngineError(
            f"{task.source}: `environment.dockerfile` {dockerfile} is not in the base commit "
            f"{rubric[:12]}: commit it to the base branch (the pull request's copy is never used)"
        )
    ignore = next((e for e in entries if e.path == ".dockerignore"), None)
    if ignore is None:
        return entries
    patterns = _git.git(["cat-file", "blob", ignore.blob], repo).decode("utf-8", "replace")
    build = docker_module().utils.build
    lines = [p.strip() for p in patterns.splitlines() if p.strip() and not p.startswith("#")]
    matcher = build.PatternMatcher(lines)
    return [e for e in entries if e.path == dockerfile or not matcher.matches(e.path)]


def _tree(repo: Path, commit: str) -> Iterator[_Entry]:
    out = _git.git(["ls-tree", "-r", "-z", "--full-tree", commit], repo)
    for item in out.split(b"\0"):
        if not item:
            continue
        meta, _, name = item.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        if kind == "blob":
            yield _Entry(name.decode("utf-8", "surrogateescape"), mode, blob)


def _digest(dockerfile: str, entries: list[_Entry]) -> str:
    hashed = hashlib.sha256(f"dockerfile {dockerfile}\n".encode())
    for entry in sorted(entries, key=lambda e: e.path):
        line = f"{entry.mode} {entry.blob} {entry.path}\0"
        hashed.update(line.encode("utf-8", "surrogateescape"))
    return hashed.hexdigest()


def _archive(repo: Path, entries: list[_Entry]) -> io.BytesIO:
    """The build context as a tar, from the commit's blobs: the same bytes for the same
    entries (no time, no owner of this machine's)."""
    buffer = io.BytesIO()
    blobs = _blobs(repo, [e.blob for e in entries])
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(entries, key=lambda e: e.path):
            data = blobs[entry.blob]
            info = tarfile.TarInfo(str(PurePosixPath(entry.path)))
            info.mtime = 0
            if entry.mode == "120000":
                info.type = tarfile.SYMTYPE
                info.linkname = data.decode("utf-8", "surrogateescape")
                archive.addfile(info)
                continue
            info.mode = 0o755 if entry.mode == "100755" else 0o644
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _blobs(repo: Path, shas: list[str]) -> dict[str, bytes]:
    """The contents of ``shas``, read by one ``git cat-file --batch``."""
    wanted = sorted(set(shas))
    out = _git.git(["cat-file", "--batch"], repo, stdin="".join(f"{s}\n" for s in wanted).encode())
    found: dict[str, bytes] = {}
    at = 0
    for sha in wanted:
        end = out.index(b"\n", at)
        size = int(out[at:end].split()[2])
        found[sha] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found
