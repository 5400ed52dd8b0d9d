"""The Docker Engine as repogym uses it (issue 20): the SDK, imported only when a task
names an environment; the engine at ``DOCKER_HOST`` or the default socket, with one-line
errors; and the labels by which the containers and volumes of a grader that died are
found and removed (:func:`sweep`); and what every container of repogym's shares: its
confinement (:func:`confined`), the wait on its exit in slices a cancel's signal gets
through, and its duration as the engine recorded it.

Every container and volume is labelled with its owner (host name and pid namespace, pid
and the pid's start time) and an expiry; a sweep removes those of owners that are gone
from this host and those past their expiry (an owner elsewhere cannot be asked).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import socket
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from repogym.errors import EngineError
from repogym.sandbox.output import POLL_SLICE
from repogym.task._environment import Limits

LABEL = "repogym"  # every container and volume repogym makes carries it
# Every container's entrypoint, its command the script and the script's arguments: an
# image's own ENTRYPOINT (a wrapper script, or a program such as `node`) is not run, so
# a command means the same in any image and nothing of the image's runs but its shell.
SHELL = ["/bin/sh", "-c"]


def docker_module() -> Any:
    """The Docker SDK for Python, imported when an environment is used, not before."""
    try:
        return importlib.import_module("docker")
    except ImportError:
        raise EngineError(
            "the task names an environment, and running it needs the Docker SDK for Python: "
            "pip install 'repogym[docker]'"
        ) from None


def engine_errors() -> tuple[type[BaseException], ...]:
    """What a call to the engine raises when the engine refuses or cannot be reached: the
    SDK's errors, and the HTTP client's (a socket that closed, a read that timed out),
    which the SDK lets through."""
    requests = importlib.import_module("requests")
    return (docker_module().errors.DockerException, requests.exceptions.RequestException)


def said(error: BaseException) -> str:
    """The first line of what the engine said, for a one-line error."""
    text = str(getattr(error, "explanation", None) or error) or type(error).__name__
    return text.splitlines()[0][:300]


def connect() -> Any:
    """A client of the engine at ``DOCKER_HOST``, else the default socket, checked to
    answer; :class:`EngineError` naming the socket and the fix otherwise."""
    docker = docker_module()
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    socket = where.removeprefix("unix://") if where.startswith("unix://") else None
    if socket is not None and not os.path.exists(socket):  # noqa: PTH110
        # Said before a client is made: the SDK's own attempt leaves its socket open.
        raise EngineError(_unreachable(where, FileNotFoundError(f"No such file: {socket}")))
    client = None
    try:
        client = docker.from_env(timeout=3600)
        client.ping()
    except docker.errors.DockerException as error:
        if client is not None:
            client.close()  # its socket, or a warning at exit
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


# -- containers ------------------------------------------------------------------------------


def confined(
    limits: Limits, network: str, *, tmp: int | None = None, inodes: int | None = None
) -> dict[str, Any]:
    """The host config every container of repogym's gets: see the module docstring.
    ``/tmp`` holds ``tmp`` bytes (default: ``limits.disk``) in at most ``inodes``
    entries when given."""
    docker = docker_module()
    room = f"size={limits.disk if tmp is None else tmp}"
    if inodes is not None:
        room += f",nr_inodes={inodes}"
    return {
        "network_mode": network,
        "read_only": True,
        "tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,{room}"},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,
        "pids_limit": limits.pids,
        "nano_cpus": int(limits.cpus * 1e9),
        "log_config": docker.types.LogConfig(type="none"),
        "ipc_mode": "private",
    }


def close_attach(attach: Any) -> None:
    """Close an attach stream and the socket under it (the SDK's wrapper leaves it open):
    the container's stdin ends."""
    raw = raw_socket(attach)
    with contextlib.suppress(OSError):
        raw.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        attach.close()
    with contextlib.suppress(OSError):
        raw.close()


def raw_socket(attach: Any) -> Any:
    """The socket under the SDK's wrapper of an attach stream."""
    return getattr(attach, "_sock", attach)


def wait_exit(api: Any, ident: str, reader: threading.Thread, deadline: float) -> bool:
    """Wait for the container to exit by ``deadline`` (monotonic); whether it did. In
    slices, so that a cancel's signal is handled at once (see repogym.sandbox.output.POLL_SLICE)."""
    while reader.is_alive():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        reader.join(min(POLL_SLICE, left))
    # Its output ended: the process exited, or closed its output and goes on.
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            api.wait(ident, timeout=max(1, math.ceil(min(POLL_SLICE, left))))
            return True
        except Exception as error:  # the request's read timed out: still running
            said = f"{type(error).__name__} {error}".lower()
            if "timed out" not in said and "timeout" not in said:
                raise


def duration(state: Mapping[str, Any]) -> float | None:
    """Seconds from the process's start to its exit as the engine recorded them."""
    started, finished = _instant(state.get("StartedAt")), _instant(state.get("FinishedAt"))
    if started is None or finished is None or finished < started:
        return None
    return (finished - started) / 1e9


def _instant(text: Any) -> int | None:
    """An RFC 3339 time of the engine's, with its nanoseconds, in ns since the epoch."""
    if not isinstance(text, str) or not text.endswith("Z") or text.startswith("0001-"):
        return None
    whole, _, fraction = text[:-1].partition(".")
    try:
        moment = datetime.fromisoformat(whole).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    nanos = int((fraction + "000000000")[:9]) if fraction.isdigit() else 0
    return int(moment.timestamp()) * 1_000_000_000 + nanos
