"""The containers that hold a runner's volumes (issue 20), for
:class:`repogym.run.container.runner.ContainerRunner`.

A tree a command is given is held by the engine in a volume of its own, in memory (a tmpfs
of ``limits.disk``, owned by the commands' user). A tmpfs volume keeps its files only while
some container has it mounted: a **keeper** mounts ``POOL`` volumes at ``POOL_AT/<index>``
and does nothing else (``read`` on a stdin the grader holds open) until the runner closes.
If the grader dies, its end of that stdin closes, the keeper exits and the engine removes
it (``auto_remove``); its volumes then are the sweep's (:func:`repogym.run.container.engine.sweep`).
Its root file system is read-only, as a command's, so what the grader copies into a volume
through it (put_archive) cannot be led out of the volume by a link a command planted.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repogym.run.container.archive import tar
from repogym.run.container.command import UID
from repogym.run.container.engine import (
    SHELL,
    close_attach,
    confined,
    docker_module,
    labels,
    raw_socket,
)
from repogym.task._environment import Limits

POOL = 4  # volumes a keeper holds; a runner that needs more starts another keeper
KEEPER_LIFE = 24 * 3600.0  # seconds after which a keeper's volumes are anyone's to remove
# Entries from which a tree goes in through tar in a container of the image rather than
# the engine's put_archive: the engine unpacks at ~50 µs an entry (20,000 files: 0.9 s,
# 1.2 s of its CPU), tar at ~10 µs after a container start of ~0.2 s (bench/environment.py).
UNPACK_FROM = 8000
POOL_AT = "/repogym/pool"
_UNPACK_AT = "/repogym/into"
_KEEPER_COMMAND = ["read -r _"]


@dataclass(slots=True)
class Keeper:
    container: str  # "" until started
    attach: Any  # the socket whose end keeps the keeper's stdin open
    names: list[str]  # its volumes, mounted at POOL_AT/<index>
    free: list[str]  # those not yet given to a tree

    def at(self, volume: str) -> str:
        """Where the keeper mounts ``volume``."""
        return f"{POOL_AT}/{self.names.index(volume)}"


def make_volumes(client: Any, scope: str, index: int, limits: Limits) -> Keeper:
    """The volumes of a runner's keeper number ``index``, the keeper not yet started."""
    made = [
        tmpfs_volume(client, f"repogym-{scope}-{index}-{slot}", f"size={limits.disk}")
        for slot in range(POOL)
    ]
    return Keeper(container="", attach=None, names=made, free=made[::-1])


def tmpfs_volume(client: Any, name: str, room: str) -> str:
    """A volume ``name`` held in memory (``room``: its tmpfs size options), owned by the
    commands' user, labelled with its owner and expiry for the sweep; its name."""
    volume = client.api.create_volume(
        name=name,
        driver="local",
        driver_opts={
            "type": "tmpfs",
            "device": "tmpfs",
            "o": f"{room},uid={UID},gid={UID},mode=0755,nosuid,nodev",
        },
        labels=labels(KEEPER_LIFE),
    )
    return str(volume["Name"])


def start_keeper(client: Any, image: str, keeper: Keeper) -> None:
    """Start ``keeper``'s container in ``image``, its volumes mounted; raises what the
    engine said, leaving nothing of the container.

    It runs the image's shell on ``read`` and nothing else (not the image's entrypoint,
    not a file of the tree's), its stdin the grader's and empty; still, it is a binary
    of the task's image, so it runs as confined as a command without network (issue
    44): no network namespace of the host's (the ~0.15 s a namespace of its own costs
    is taken while the first command's container starts beside it)."""
    docker = docker_module()
    api = client.api
    host = api.create_host_config(
        mounts=[
            docker.types.Mount(target=f"{POOL_AT}/{i}", source=n, type="volume", no_copy=True)
            for i, n in enumerate(keeper.names)
        ],
        **confined(Limits(cpus=0.1, memory=16 << 20, pids=16, disk=1 << 20), "none"),
        auto_remove=True,
    )
    created = api.create_container(
        image,
        entrypoint=SHELL,
        command=_KEEPER_COMMAND,
        user=f"{UID}:{UID}",
        stdin_open=True,  # with detach=False (the default), stdin is closed once detached
        labels=labels(KEEPER_LIFE),
        host_config=host,
    )
    attach = api.attach_socket(created["Id"], params={"stdin": 1, "stream": 1})
    try:
        api.start(created["Id"])
    except BaseException:
        close_attach(attach)
        with contextlib.suppress(Exception):
            api.remove_container(created["Id"], force=True)
        raise
    keeper.attach = attach
    keeper.container = created["Id"]  # last: a keeper with a container is started


def remove_keepers(client: Any, keepers: list[Keeper]) -> None:
    """Remove ``keepers`` and then their volumes (free only once a keeper is gone)."""
    docker = docker_module()
    for keeper in keepers:
        close_attach(keeper.attach)
        if not keeper.container:
            continue
        with contextlib.suppress(docker.errors.APIError):
            client.api.remove_container(keeper.container, force=True)
        with contextlib.suppress(Exception):  # auto_remove may still be at it
            client.api.wait(keeper.container, timeout=10, condition="removed")
    for name in [v for k in keepers for v in k.names]:
        with contextlib.suppress(Exception):
            client.api.remove_volume(name, force=True)


def unpack(client: Any, image: str, limits: Limits, cpuset: str, volume: str, tree: Path) -> bool:
    """Unpack ``tree`` into ``volume`` with the image's own tar, in a container as
    confined as a command's (its writes to the tmpfs are charged to it: room for the
    whole tree); whether it did. Not when the image has no tar, or anything fails: the
    caller then copies the whole tree in over whatever part of it got there."""
    docker = docker_module()
    api = client.api
    room = Limits(cpus=limits.cpus, memory=limits.disk + (64 << 20), pids=64, disk=1 << 20)
    host = api.create_host_config(
        mounts=[docker.types.Mount(target=_UNPACK_AT, source=volume, type="volume", no_copy=True)],
        cpuset_cpus=cpuset,
        **confined(room, "none"),
    )
    ident = None
    try:
        ident = api.create_container(
            image,
            # umask 0: the modes of the archive, as put_archive makes them.
            entrypoint=SHELL,
            command=[f"umask 0 && exec tar -xf - -C {_UNPACK_AT}"],
            user=f"{UID}:{UID}",
            stdin_open=True,  # only stdin attached: its output goes to no log, unread
            labels=labels(KEEPER_LIFE),
            host_config=host,
        )["Id"]
        attach = api.attach_socket(ident, params={"stdin": 1, "stream": 1})
        try:
            api.start(ident)
            tar(tree, UID, into=raw_socket(attach))
            raw_socket(attach).shutdown(socket.SHUT_WR)
            return int(api.wait(ident).get("StatusCode", -1)) == 0
        finally:
            close_attach(attach)
    except (OSError, docker.errors.APIError):
        return False
    finally:
        if ident is not None:
            with contextlib.suppress(docker.errors.APIError):
                api.remove_container(ident, force=True)
