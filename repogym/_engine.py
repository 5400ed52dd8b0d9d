"""The Docker Engine as repogym uses it (issue 20): the SDK, imported only when a task
names an environment; the engine at ``DOCKER_HOST`` or the default socket, with one-line
errors; and the labels by which the containers and volumes of a grader that died are
found and removed (:func:`sweep`).

Every container and volume is labelled with its owner (host name and pid namespace, pid
and the pid's start time) and an expiry; a sweep removes those of owners that are gone
from this host and those past their expiry (an owner elsewhere cannot be asked).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repogym.errors import EngineError

LABEL = "repogym"  # every container and volume repogym makes carries it


def docker_module() -> Any:
    """The Docker SDK for Python, imported when an environment is used, not before."""
    try:
        return importlib.import_module("docker")
    except ImportError:
        raise EngineError(
            "the task names an environment, and running it needs the Docker SDK for Python: "
            "pip install 'repogym[docker]'"
        ) from None


def connect() -> Any:
    """A client of the engine at ``DOCKER_HOST``, else the default socket, checked to
    answer; :class:`EngineError` naming the socket and the fix otherwise."""
    docker = docker_module()
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=3600)
        client.ping()
    except docker.errors.DockerException as error:
        raise EngineError(_unreachable(where, error)) from None
    return client


def _unreachable(where: str, error: Exception) -> str:
    text = str(error)
    if "PermissionError" in text or "Permission denied" in text:
        return (
            f"the Docker engine's socket {where} is closed to this user (permission denied): "
            "add the user to the socket's group (docker), or run as root"
        )
    if "FileNotFoundError" in text or "No such file" in text:
        return (
            f"no Docker engine at {where}: start one (dockerd), or set DOCKER_HOST to the "
            "engine's address; the task's `environment` runs its commands there"
        )
    return (
        f"the Docker engine at {where} does not answer ({text.splitlines()[0][:200]}): "
        "start it, or set DOCKER_HOST to the engine's address"
    )


# -- owners and leftovers ------------------------------------------------------------------


def _start_time(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ('' when unknown): a pid that
    was reused is another process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _host() -> str:
    """This host's name and the pid namespace this process is in, ``vm[4026531836]``: a
    pid means something only within its namespace, and a grader in a container started
    with the host's network (``--network host``) has the host's name with pids of its own.
    Without the namespace, it and a grader on the host took each other's pids for gone
    and swept each other's containers in the middle of a grade."""
    try:
        namespace = str(Path("/proc/self/ns/pid").readlink()).removeprefix("pid:")
    except OSError:
        namespace = "[?]"
    return f"{socket.gethostname()}{namespace}"


HOST = _host()
OWNER = f"{HOST}/{os.getpid()}/{_start_time(os.getpid())}"


def labels(life: float) -> dict[str, str]:
    """The labels of a container or volume this process makes, gone by ``life`` seconds."""
    return {LABEL: "1", f"{LABEL}.owner": OWNER, f"{LABEL}.expires": str(int(time.time() + life))}


def _abandoned(found: Mapping[str, str]) -> bool:
    """Whether a labelled container or volume is no live grader's: its owner on this host
    (and in this pid namespace) is gone, or it is past its expiry (an owner elsewhere
    cannot be asked)."""
    try:
        if int(found.get(f"{LABEL}.expires", "0")) < time.time():
            return True
    except ValueError:
        return True
    host, _, rest = found.get(f"{LABEL}.owner", "").partition("/")
    pid, _, started = rest.partition("/")
    if host != HOST or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


def sweep(client: Any) -> int:
    """Remove the containers, then the volumes, that graders left behind (killed ones);
    how many. A volume still in use is left for a later sweep."""
    docker = docker_module()
    removed = 0
    for found in client.api.containers(all=True, filters={"label": LABEL}):
        if _abandoned(found.get("Labels") or {}) and f"{LABEL}.owner" in (found["Labels"] or {}):
            with contextlib.suppress(docker.errors.APIError):
                client.api.remove_container(found["Id"], force=True, v=True)
                removed += 1
    listed = client.api.volumes(filters={"label": LABEL}).get("Volumes") or []
    for volume in listed:
        if _abandoned(volume.get("Labels") or {}):
            with contextlib.suppress(docker.errors.APIError):
                client.api.remove_volume(volume["Name"])
                removed += 1
    return removed
