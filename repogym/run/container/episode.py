"""An episode's container: where the commands of RepoEnv's agent run when the task names an
``environment`` (issue 23).

Agent harnesses (SWE-agent's, OpenHands') give an episode one long-lived container and run
the agent's commands in it one after another: a file in ``/tmp``, a server started in the
background, an exported ``pip install --user`` stay from one command to the next.
:class:`EpisodeRunner` does that: :meth:`~EpisodeRunner.start` makes the episode's
container, each command is ``exec``'d in it, and :meth:`~EpisodeRunner.stop` removes the
container and its volume, so nothing of the episode is left in the engine.

- **The tree** is held in a volume of its own, in memory (a tmpfs, the commands' user's),
  mounted at the tree's own path, copied in at the start. When the host's copy is next
  read after a command (:meth:`~EpisodeRunner.sync`: ReadFile, WriteFile, the workspace,
  Submit), the container is paused and the tree copied back into a fresh directory that
  replaces the host's only once whole; what WriteFile writes is copied into the volume
  through the engine (the container paused too), whose path resolution stays inside the
  container's read-only root and its volumes. The tree's volume and ``/tmp`` hold at
  most :data:`EPISODE_ENTRIES` entries each, and together at most three quarters of
  ``limits.memory`` (:func:`rooms`): their pages are the container's memory, and filling
  them says "no space left" rather than having the first process killed.
- **The container** is confined as a grade's command's is (:func:`confined`): all
  capabilities dropped, ``no-new-privileges``, a read-only root with the tree and a
  ``/tmp`` tmpfs writable, the task's limits (for the whole episode: every command and
  what it left running), no network unless the task gives it to every command
  (``network: all``), labelled with its owner and an expiry for the sweep.
- **Its first process** is the engine's init (it reaps what the commands leave behind),
  running the shell on ``read`` of a stdin the grader holds open, as :data:`HOLDER`, a
  user other than the commands' (:data:`UID`): a command cannot kill it, and the container
  exits (and the engine removes it) when the grader dies.
- **A command** runs as :data:`UID` in the tree, with the variables a grade's command
  gets, in a session of its own; its output is read up to the cap. At its timeout its
  process group is killed (from another ``exec``); when it ends, what it started in the
  background goes on running, as in a terminal, until the episode's end
  (:mod:`repogym.run.container.episode_exec`). A container that stopped, or whose command
  could not be killed, is an :class:`EpisodeLost`.

The grade of a Submit never runs here: its tests run in fresh containers of the grader
(:mod:`repogym.run.container.runner`), from the host's copy of the tree, which nothing left
running in the episode's container can reach.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from repogym import progress
from repogym.errors import EngineError, EpisodeLost
from repogym.models import CommandResult
from repogym.run.container.archive import copy_in, has_entries, swap_out
from repogym.run.container.command import NAME, UID
from repogym.run.container.engine import (
    SHELL,
    close_attach,
    confined,
    docker_module,
    engine_errors,
    labels,
    said,
    sweep,
)
from repogym.run.container.episode_exec import Exec
from repogym.run.container.keeper import KEEPER_LIFE, UNPACK_FROM, tmpfs_volume, unpack
from repogym.run.protocol import DEFAULT_OUTPUT_CAP, check_timeout
from repogym.task._environment import Limits

HOLDER = UID + 1  # the user of the container's first process, out of the commands' reach
# Entries the tree's volume and /tmp may each hold, and the most a copy back takes: a
# flood of empty files takes no room and would keep the grader unpacking (issue 23).
EPISODE_ENTRIES = 100_000
_HOLD = ["read -r _"]


def rooms(limits: Limits) -> tuple[int, int]:
    """The bytes of the tree's volume and of ``/tmp``: tmpfs both, whose pages are the
    container's memory, so together at most three quarters of ``limits.memory`` (and
    each at most ``limits.disk``): filled, they say "no space left on device", and the
    memory limit never kills the container's first process (issue 23)."""
    return min(limits.disk, limits.memory // 2), min(limits.disk, limits.memory // 4)


@dataclass(slots=True)
class _Episode:
    tree: Path
    volume: str
    container: str = ""
    attach: Any = None  # the socket whose end keeps the first process's stdin open
    dirty: bool = False  # a command ran since the tree was last copied back
    paused: bool = False


@dataclass(slots=True)
class EpisodeRunner:
    """Runs RepoEnv's agent's commands in its episode's container of ``image``; see the
    module docstring. Between :meth:`start` and :meth:`stop` it answers as a
    :class:`repogym.run.host.Runner` does (``run``, ``add``, ``lock``)."""

    client: Any
    image: str
    limits: Limits = field(default_factory=Limits)
    network: str = "none"
    pass_env: Sequence[str] = ()
    set_env: Mapping[str, str] = field(default_factory=dict)
    output_cap: int = DEFAULT_OUTPUT_CAP
    entries: int = EPISODE_ENTRIES
    _episode: _Episode | None = None
    _lost: str = ""  # why the episode's container was lost, until the next start

    def start(self, tree: Path) -> None:
        """The episode's container, started, with ``tree`` copied into its volume;
        :class:`EngineError` when the engine refuses or cannot be reached, leaving
        nothing of it."""
        self.stop()
        self._lost = ""
        try:
            sweep(self.client)
            self._episode = _Episode(tree=tree, volume=self._volume())
            self._start_container(self._episode)
            if not (
                has_entries(tree, UNPACK_FROM)
                and unpack(self.client, self.image, self.limits, "0", self._episode.volume, tree)
            ):
                copy_in(self.client, self._episode.container, str(tree), tree, UID)
        except engine_errors() as error:
            self.stop()
            raise EngineError(
                f"the episode's container of {self.image} cannot start: {said(error)}; check "
                "that the engine runs (docker info) and has room for environment.limits"
            ) from None
        except BaseException:
            self.stop()
            raise

    def _volume(self) -> str:
        room = f"size={rooms(self.limits)[0]},nr_inodes={self.entries}"
        return tmpfs_volume(self.client, f"repogym-{uuid.uuid4().hex}-episode", room)

    def _start_container(self, episode: _Episode) -> None:
        docker = docker_module()
        api = self.client.api
        mount = docker.types.Mount(
            target=str(episode.tree), source=episode.volume, type="volume", no_copy=True
        )
        network = "bridge" if self.network == "all" else "none"
        tmp = rooms(self.limits)[1]
        host = api.create_host_config(
            mounts=[mount],
            init=True,
            auto_remove=True,
            **confined(self.limits, network, tmp=tmp, inodes=self.entries),
        )
        created = api.create_container(
            self.image,
            entrypoint=SHELL,
            command=_HOLD,
            user=f"{HOLDER}:{HOLDER}",
            stdin_open=True,  # with detach=False (the default), stdin is closed once detached
            labels=labels(KEEPER_LIFE),
            host_config=host,
        )
        episode.container = created["Id"]
        episode.attach = api.attach_socket(episode.container, params={"stdin": 1, "stream": 1})
        api.start(episode.container)

    def stop(self) -> None:
        """Remove the episode's container, then its volume (free once the container is
        gone). Calling it again does nothing."""
        episode, self._episode = self._episode, None
        if episode is None:
            return
        api = self.client.api
        if episode.attach is not None:
            close_attach(episode.attach)
        if episode.container:
            with contextlib.suppress(Exception):
                api.remove_container(episode.container, force=True)
            with contextlib.suppress(Exception):  # auto_remove may still be at it
                api.wait(episode.container, timeout=10, condition="removed")
        with contextlib.suppress(Exception):
            api.remove_volume(episode.volume, force=True)

    def close(self) -> None:
        """Stop the episode and let the engine's client go."""
        self.stop()
        with contextlib.suppress(Exception):
            self.client.close()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The episode's container frozen (``docker pause``, the cgroup freezer) while
        the block runs, thawed after it however it ends: nothing the agent left running
        takes a step meanwhile. Raises what the engine said when it cannot pause."""
        episode = self._episode
        if episode is None or episode.paused:
            yield
            return
        self.client.api.pause(episode.container)
        episode.paused = True
        try:
            yield
        finally:
            episode.paused = False
            with contextlib.suppress(*engine_errors()):
                self.client.api.unpause(episode.container)

    @contextlib.contextmanager
    def isolated(self) -> Iterator[None]:
        """:meth:`paused`, and off the engine's bridge (``network: all``) while the block
        runs: a frozen process takes no step, but the kernel still sends the connects it
        had begun, and one reached a grade's test listening on the bridge (issue 23).
        Back on the bridge after it (maybe at another address), then thawed."""
        with self.paused():
            episode = self._episode
            if episode is None or self.network != "all":
                yield
                return
            api = self.client.api
            api.disconnect_container_from_network(episode.container, "bridge", force=True)
            try:
                yield
            finally:
                with contextlib.suppress(*engine_errors()):
                    api.connect_container_to_network(episode.container, "bridge")

    def sync(self) -> str:
        """Copy the tree back to the host when a command ran since the last copy: the
        container paused, the copy swapped in whole (issue 23). What was left out of it
        ('' when nothing); :class:`EpisodeLost` when it cannot be had, the host's tree
        then as the last copy left it."""
        episode = self._episode
        if self._lost:
            raise EpisodeLost(self._lost)
        if episode is None or not episode.dirty:
            return ""
        cap = rooms(self.limits)[0]
        failures: tuple[type[BaseException], ...] = (*engine_errors(), tarfile.TarError, OSError)
        try:
            with self.paused():
                left_out = swap_out(
                    self.client.api, episode.container, episode.tree, cap, self.entries
                )
        except failures as error:
            self._lose(f"its tree could not be copied back ({said(error)})")
        episode.dirty = False
        return left_out.strip()

    # The questions a Runner answers.

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables a command gets on top of the image's own, as a grade's."""
        source = os.environ if base is None else base
        env = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": NAME, "LOGNAME": NAME}
        env.update({k: source[k] for k in self.pass_env if k in source})
        env.update(self.set_env)
        return env

    def switches_user(self) -> bool:
        return True

    def lock(self, tree: Path) -> None:
        """Nothing to do: the grade's commands never mount the episode's volume."""

    def add(self, tree: Path, paths: Sequence[str]) -> None:
        """The grader wrote ``paths`` (relative) into the host's tree (WriteFile, a
        patch), synced first: copy them into the episode's volume, with the directories
        on their way, all the commands' user's (issue 23)."""
        episode = self._current()
        if not paths:
            return
        try:
            with self.paused():
                copy_in(
                    self.client, episode.container, str(episode.tree), tree, UID, _parents(paths)
                )
        except engine_errors() as error:
            self._lose(f"a file could not be copied into it ({said(error)})")

    def run_agent(
        self, command: str, tree: Path, *, timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """One of the agent's commands in the episode's container, its bytecode in the
        container's /tmp; the tree comes back to the host when it is next read (ReadFile,
        WriteFile, the workspace, Submit: :meth:`sync`), not after each command."""
        variables = {"PYTHONPYCACHEPREFIX": "/tmp/pycache", **(env or {})}
        return self.run(
            command, tree, timeout=timeout, env=variables, writable=[tree], collect=[tree]
        )

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        writable: Sequence[Path] = (),
        collect: Sequence[Path] = (),
        network: bool = False,
        shown: str | None = None,
    ) -> CommandResult:
        """Run ``command`` in the episode's container, in ``cwd`` (the tree); the tree
        is copied back to the host when it is next read (:meth:`sync`). ``writable``,
        ``collect`` and ``network`` are a grade's: the tree is the command's to write,
        and the network is the task's for the whole episode."""
        check_timeout(timeout)
        episode = self._current()
        told = progress.current()
        if told is not None:
            told.command_started(shown or command, cwd)
        variables = {**self.environment(), **(env or {})}
        episode.dirty = True
        try:
            result = Exec(self.client.api, episode.container, self.output_cap).go(
                command, cwd, timeout, variables
            )
        except EpisodeLost as lost:
            self._lose(str(lost))
        if shown is not None:
            result = replace(result, command=shown)
        if told is not None:
            told.command_finished(result)
        return result

    def _current(self) -> _Episode:
        if self._episode is None:  # removed by an earlier failure, or by a Submit's grade
            self._lose("it is no longer running")
        return self._episode

    def _lose(self, why: str) -> NoReturn:
        """The episode's container is of no more use: removed, and said."""
        self.stop()
        self._lost = (
            f"the episode's container is lost: {why}; the episode ends, truncated: call "
            "env.reset() for a new one"
        )
        raise EpisodeLost(self._lost)


def _parents(paths: Sequence[str]) -> list[str]:
    """``paths`` with every directory on their way, each once, a directory before what
    is in it."""
    listed: dict[str, None] = {}
    for path in paths:
        parts = PurePosixPath(path).parts
        for end in range(1, len(parts) + 1):
            listed.setdefault("/".join(parts[:end]))
    return list(listed)
