"""An episode's container: where the commands of RepoEnv's agent run when the task names an
``environment`` (issue 23).

Agent harnesses (SWE-agent's, OpenHands') give an episode one long-lived container and run
the agent's commands in it one after another: a file in ``/tmp``, a server started in the
background, an exported ``pip install --user`` stay from one command to the next.
:class:`EpisodeRunner` does that: :meth:`~EpisodeRunner.start` makes the episode's
container, each command is ``exec``'d in it, and :meth:`~EpisodeRunner.stop` removes the
container and its volume, so nothing of the episode is left in the engine.

- **The tree** is held in a volume of its own, in memory (a tmpfs of ``limits.disk``, the
  commands' user's), mounted at the tree's own path, copied in at the start; after each
  command it is copied back to the host (where ReadFile, WriteFile and the grade read it),
  and what WriteFile writes is copied into the volume through the engine, whose path
  resolution stays inside the container's read-only root and its volumes.
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
  background goes on running, as in a terminal, until the episode's end.

The grade of a Submit never runs here: its tests run in fresh containers of the grader
(:mod:`repogym.container.runner`), from the host's copy of the tree, which nothing left
running in the episode's container can reach.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym import progress
from repogym.container.archive import copy_in, copy_out, has_entries
from repogym.container.command import NAME, UID
from repogym.container.engine import (
    SHELL,
    close_attach,
    confined,
    docker_module,
    labels,
    sweep,
)
from repogym.container.keeper import KEEPER_LIFE, UNPACK_FROM, unpack
from repogym.errors import EngineError, EnvError
from repogym.runner import DEFAULT_OUTPUT_CAP, POLL_SLICE, CommandResult, check_timeout, keep_tail
from repogym.sandbox.process import leave_stop_signals_to_the_main_thread
from repogym.task._environment import Limits

HOLDER = UID + 1  # the user of the container's first process, out of the commands' reach
# The first line of a command's stdout is its shell's pid (its process group's, the exec
# being a session of its own), which the timeout kills; the rest is the command's.
_WRAP = 'echo "$$" && exec /bin/sh -c "$1"'
_HOLD = ["read -r _"]
_SETTLE = 10.0  # seconds the engine may take to record an exec's exit after its output


@dataclass(slots=True)
class _Episode:
    tree: Path
    volume: str
    container: str = ""
    attach: Any = None  # the socket whose end keeps the first process's stdin open


@dataclass(slots=True)
class EpisodeRunner:
    """Runs RepoEnv's agent's commands in its episode's container of ``image``; see the
    module docstring. Between :meth:`start` and :meth:`stop` it answers as a
    :class:`repogym.runner.Runner` does (``run``, ``add``, ``lock``)."""

    client: Any
    image: str
    limits: Limits = field(default_factory=Limits)
    network: str = "none"
    pass_env: Sequence[str] = ()
    set_env: Mapping[str, str] = field(default_factory=dict)
    output_cap: int = DEFAULT_OUTPUT_CAP
    _episode: _Episode | None = None

    def start(self, tree: Path) -> None:
        """The episode's container, started, with ``tree`` copied into its volume;
        :class:`EngineError` when the engine refuses, leaving nothing of it."""
        self.stop()
        sweep(self.client)
        scope = uuid.uuid4().hex
        volume = self.client.api.create_volume(
            name=f"repogym-{scope}-episode",
            driver="local",
            driver_opts={
                "type": "tmpfs",
                "device": "tmpfs",
                "o": f"size={self.limits.disk},uid={UID},gid={UID},mode=0755,nosuid,nodev",
            },
            labels=labels(KEEPER_LIFE),
        )
        self._episode = _Episode(tree=tree, volume=volume["Name"])
        try:
            self._start_container(self._episode)
            if not (
                has_entries(tree, UNPACK_FROM)
                and unpack(self.client, self.image, self.limits, "0", volume["Name"], tree)
            ):
                copy_in(self.client, self._episode.container, str(tree), tree, UID)
        except docker_module().errors.APIError as error:
            self.stop()
            said = str(getattr(error, "explanation", None) or error).splitlines()[0][:300]
            raise EngineError(
                f"the episode's container of {self.image} cannot start: {said}; check that "
                "the engine runs (docker info) and has room for environment.limits"
            ) from None
        except BaseException:
            self.stop()
            raise

    def _start_container(self, episode: _Episode) -> None:
        docker = docker_module()
        api = self.client.api
        mount = docker.types.Mount(
            target=str(episode.tree), source=episode.volume, type="volume", no_copy=True
        )
        network = "bridge" if self.network == "all" else "none"
        host = api.create_host_config(
            mounts=[mount], init=True, auto_remove=True, **confined(self.limits, network)
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
        patch): copy them into the episode's volume."""
        episode = self._current()
        if paths:
            copy_in(self.client, episode.container, str(episode.tree), tree, UID, paths)

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
    ) -> CommandResult:
        """Run ``command`` in the episode's container, in ``cwd`` (the tree), then copy
        the tree back to the host when it is in ``collect``. ``writable`` and
        ``network`` are a grade's: the tree is the command's to write, and the
        network is the task's for the whole episode."""
        check_timeout(timeout)
        episode = self._current()
        told = progress.current()
        if told is not None:
            told.command_started(command, cwd)
        variables = {**self.environment(), **(env or {})}
        result = _Exec(self.client.api, episode.container, self.output_cap).go(
            command, cwd, timeout, variables
        )
        if episode.tree in {Path(p) for p in collect}:
            left_out = copy_out(self.client.api, episode.container, episode.tree, self.limits.disk)
            if left_out:  # said as a grade's command's copy says it
                result = dataclasses.replace(result, stderr=result.stderr + left_out)
        if told is not None:
            told.command_finished(result)
        return result

    def _current(self) -> _Episode:
        if self._episode is None:
            raise EnvError("the episode's container is not running: call env.reset() first")
        return self._episode


@dataclass(slots=True)
class _Exec:
    """One command ``exec``'d in the episode's container."""

    api: Any
    container: str
    output_cap: int
    pid: bytearray = field(default_factory=bytearray)  # the first line of the stdout
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    cut: list[int] = field(default_factory=lambda: [0, 0])

    def go(self, command: str, cwd: Path, timeout: float, env: dict[str, str]) -> CommandResult:
        api = self.api
        try:
            ident = api.exec_create(
                self.container,
                [*SHELL, _WRAP, NAME, command],
                user=f"{UID}:{UID}",
                workdir=str(cwd),
                environment=env,
            )["Id"]
            stream = api.exec_start(ident, socket=True)
        except docker_module().errors.APIError as error:
            raise EnvError(
                "the episode's container is gone (a command stopped it, or the engine "
                f"removed it: {str(error).splitlines()[0][:200]}): call env.reset() for a new "
                "episode"
            ) from None
        start = time.monotonic()
        reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        reader.start()
        timed_out = not _joined(reader, start + timeout)
        if timed_out:
            self._kill()
            reader.join(5)
        close_attach(stream)
        elapsed = time.monotonic() - start
        code = None if timed_out else self._exit_code(ident)
        return CommandResult(
            command=command,
            exit_code=code,
            timed_out=timed_out,
            duration=elapsed,
            stdout=self.stdout.decode("utf-8", "replace"),
            stderr=self.stderr.decode("utf-8", "replace"),
            stdout_cut=self.cut[0],
            stderr_cut=self.cut[1],
        )

    def _exit_code(self, ident: str) -> int:
        """The exec's exit code: the engine sets it just after the output ends (-1 if
        it does not within a few seconds)."""
        deadline = time.monotonic() + _SETTLE
        while True:
            found = self.api.exec_inspect(ident)
            code = found.get("ExitCode")
            if not found.get("Running") and code is not None:
                return int(code)
            if time.monotonic() > deadline:
                return -1
            time.sleep(POLL_SLICE / 10)

    def _kill(self) -> None:
        """Kill the command's process group, from another exec of the same user."""
        pid = self.pid.decode(errors="replace").strip()
        if not pid.isdigit():
            return
        with contextlib.suppress(Exception):
            ident = self.api.exec_create(
                self.container, [*SHELL, f"kill -9 -{pid} || kill -9 {pid}"], user=f"{UID}:{UID}"
            )["Id"]
            self.api.exec_start(ident)

    def _read(self, stream: Any) -> None:
        leave_stop_signals_to_the_main_thread()
        frames = docker_module().utils.socket.frames_iter(stream, tty=False)
        with contextlib.suppress(Exception):
            for kind, data in frames:
                if kind == 2:
                    self.cut[1] += keep_tail(self.stderr, data, self.output_cap)
                    continue
                if not self.pid.endswith(b"\n"):  # still the wrapper's first line
                    head, newline, data = data.partition(b"\n")
                    self.pid += head + newline
                self.cut[0] += keep_tail(self.stdout, data, self.output_cap)


def _joined(reader: threading.Thread, deadline: float) -> bool:
    """Wait for the output's end until ``deadline`` in slices (a cancel's signal is
    handled at once); whether it ended."""
    while reader.is_alive():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        reader.join(min(POLL_SLICE, left))
    return True
