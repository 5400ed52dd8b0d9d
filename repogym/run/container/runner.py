"""Commands in containers of the task's environment, through the Docker Engine (issue 20).

:class:`ContainerRunner` runs a command as :class:`repogym.run.host.Runner` does (the same
arguments, the same :class:`~repogym.run.host.CommandResult`), in a fresh container:

- **The trees.** Each tree a command is given (its working directory, the trees it writes)
  is held by the engine in a volume of its own, in memory (a tmpfs of ``limits.disk``,
  owned by the command's user), mounted at the tree's own path, so the paths a grader puts
  in a command (``{junit}``, a bytecode cache) mean the same inside. A tree goes in as an
  archive the first time a command uses it; later commands of the runner find it as the
  earlier ones left it (``setup``'s install, then the tests). Nothing of the host is bound
  in, so the same code works from inside the Action's container and against a remote
  engine.
- **The keeper.** A tmpfs volume keeps its files only while some container has it
  mounted: one container that does nothing mounts the volumes of the runner until
  :meth:`ContainerRunner.close` (:mod:`repogym.run.container.keeper`). The first one starts as the
  runner opens, and the runner's first command need not wait for it
  (:class:`repogym.run.container.command.Early`).
- **A command's container**: user ``UID``, all capabilities dropped, ``no-new-privileges``,
  a read-only root file system with the trees and a ``/tmp`` tmpfs writable, the task's
  limits, no network unless the task gives it, no Docker socket, labelled with its owner
  and an expiry. Output is read through an attach socket up to the cap (nothing is
  logged by the engine); on timeout it is killed; afterwards what the grader must read
  (``collect=``) is copied out as an archive and unpacked without following a link, and
  the container is removed.
- **Time.** ``duration`` is the engine's record of the process's start and exit, not the
  grader's clock around the API calls: creating, starting and removing a container are
  not the command's time (the perf grader's ``wall``).
- **Leftovers.** Every container and volume is labelled with its owner (host name and
  pid namespace, pid and the pid's start time) and an expiry;
  :func:`repogym.run.container.engine.sweep`, run when a runner opens, removes those of owners that
  are gone from this host and those past their expiry.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shlex
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repogym import progress
from repogym.models import CommandResult
from repogym.run import notfound as _notfound
from repogym.run.container import measure as _measure
from repogym.run.container.archive import copy_in, has_entries, within
from repogym.run.container.command import NAME, UID, Command, Early, Setting
from repogym.run.container.engine import docker_module, sweep
from repogym.run.container.keeper import (
    UNPACK_FROM,
    Keeper,
    make_volumes,
    remove_keepers,
    start_keeper,
    unpack,
)
from repogym.run.protocol import DEFAULT_OUTPUT_CAP, check_timeout
from repogym.sandbox.output import POLL_SLICE
from repogym.sandbox.process import leave_stop_signals_to_the_main_thread
from repogym.task._environment import Limits


@dataclass(slots=True)
class ContainerRunner:
    """Runs the task's commands in containers of ``image`` (an image id); see the module
    docstring. ``network`` is the task's: ``none``, ``setup`` (for commands run with
    ``network=True``) or ``all``. Close it (or use it as a context manager) to remove
    its volumes and keeper."""

    client: Any
    image: str
    name: str = ""  # what the task named (a Dockerfile's path, an image), for messages
    limits: Limits = field(default_factory=Limits)
    network: str = "none"
    pass_env: Sequence[str] = ()
    set_env: Mapping[str, str] = field(default_factory=dict)
    output_cap: int = DEFAULT_OUTPUT_CAP
    scope: str = field(default_factory=lambda: uuid.uuid4().hex)  # one per runner
    record: Mapping[str, Any] | None = None  # what the report says of the image
    _volumes: dict[Path, str] = field(default_factory=dict)
    _keepers: list[Keeper] = field(default_factory=list)
    _cpuset: str = ""
    _warming: threading.Thread = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pooled: threading.Event = field(default_factory=threading.Event)  # first keeper's volumes
    _held: threading.Event = field(default_factory=threading.Event)  # first keeper started, or not

    def __post_init__(self) -> None:
        sweep(self.client)
        cpus = int(self.client.info().get("NCPU") or os.cpu_count() or 1)
        wanted = max(1, min(cpus, math.ceil(self.limits.cpus)))
        # The same CPUs for every command of the runner: the perf grader's two sides
        # alternate on one set (issue 20).
        self._cpuset = f"0-{wanted - 1}" if wanted > 1 else "0"
        # The first keeper starts now, beside what the grader does before its first
        # command (the other graders, the run's copy): a container's start is most of
        # what a command costs here (bench/environment.py).
        self._warming = threading.Thread(target=self._warm, daemon=True)
        self._warming.start()

    def _warm(self) -> None:
        """Start the first keeper: its volumes, then its container. If it fails, the
        first use of a tree starts one again and says why."""
        leave_stop_signals_to_the_main_thread()
        keeper = None
        try:
            with contextlib.suppress(Exception), self._lock:
                keeper = self._pool() if not self._keepers else None
        finally:
            self._pooled.set()
        try:
            if keeper is not None:
                start_keeper(self.client, self.image, keeper)
        except Exception:
            with self._lock:
                self._drop(keeper)
        finally:
            self._held.set()

    @property
    def path(self) -> str:
        """The image's PATH, which its commands get."""
        config = self.client.api.inspect_image(self.image).get("Config") or {}
        found = [v[5:] for v in config.get("Env") or [] if v.startswith("PATH=")]
        return found[0] if found else ""

    def has_program(self, program: str) -> bool:
        """Whether ``program`` is on the image's PATH: asked of a fresh container with no
        tree, when a command said it was not found (the output may have lied)."""
        where = Path(tempfile.mkdtemp(prefix="repogym-probe-"))
        try:
            probe = self.run(
                f"command -v {shlex.quote(program)}", where, timeout=60, writable=[where]
            )
        finally:
            shutil.rmtree(where, ignore_errors=True)
            self._volumes.pop(where, None)
        return probe.ok

    def __enter__(self) -> ContainerRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # The same questions a Runner answers.

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The variables a command gets on top of the image's own (its PATH is the
        image's): a throwaway HOME and TMPDIR in ``/tmp``, the task's."""
        source = os.environ if base is None else base
        env = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": NAME, "LOGNAME": NAME}
        env.update({k: source[k] for k in self.pass_env if k in source})
        env.update(self.set_env)
        return env

    def switches_user(self) -> bool:
        """Commands never run as the grader's user."""
        return True

    def lock(self, tree: Path) -> None:
        """Nothing to do: a tree is mounted read-only in every command not given it to
        write (a perf baseline, the tree of RepoEnv's agent in the tests' command)."""

    @property
    def where(self) -> str:
        return f"image {self.image}"

    @property
    def writes_in_place(self) -> bool:
        return False  # into the tree's volume; copied back when collected

    @property
    def links_dependencies(self) -> bool:
        return False  # the image's

    def found(self, result: CommandResult, key: str) -> CommandResult:
        """A program missing from the image: looked for in a fresh container of it, on
        the image's PATH, and the error names the image."""
        program = _notfound.missing_program(result, result.command, found=self.has_program)
        if program is not None:
            where = f"the environment's image {self.name}"
            raise _notfound.not_found(program, key, self.path, where=where)
        return result

    def measured(self, command: str, what: str) -> str:
        """``command`` run by :mod:`repogym.run.container.measure` as the container's first
        process."""
        return _measure.measured(command, what)

    def add(self, tree: Path, paths: Sequence[str]) -> None:
        """The grader wrote ``paths`` (relative) into the host's ``tree`` after a command
        used it (hidden tests after a networked setup): copy them
        into the tree's volume too. Through the keeper, whose root file system is
        read-only: a link a command planted on the way cannot take them out of the
        volume."""
        name = self._volumes.get(Path(tree))
        if name is None or not paths:
            return  # copied whole at the first command that uses it
        keeper = next(k for k in self._keepers if name in k.names)
        copy_in(self.client, keeper.container, keeper.at(name), tree, UID, paths)

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
        readable: Sequence[Path] = (),
    ) -> CommandResult:
        """Run ``command`` in ``cwd`` in a fresh container; ``writable`` trees are its to
        write, ``collect`` those copied back to the host after it (the grader reads them),
        ``readable`` those it only reads (mounted read-only, as every tree it is not given
        to write); ``network``: the command is the task's ``setup``."""
        check_timeout(timeout)
        told = progress.current()
        if told is not None:
            told.command_started(shown or command, cwd)
        trees = sorted({Path(cwd), *map(Path, writable), *map(Path, collect), *map(Path, readable)})
        writes = {Path(t) for t in writable}
        setting = Setting(
            api=self.client.api,
            image=self.image,
            limits=self.limits,
            cpuset=self._cpuset,
            networked=self.network == "all" or (self.network == "setup" and network),
            output_cap=self.output_cap,
        )
        variables = {**self.environment(), **(env or {})}
        make = functools.partial(Command, setting, command, Path(cwd), timeout, variables)
        result = self._go(make, trees, writes, collect)
        if shown is not None:
            result = replace(result, command=shown)
        if told is not None:
            told.command_finished(result)
        return result

    def _go(
        self,
        make: Callable[..., Command],
        trees: list[Path],
        writes: set[Path],
        collect: Sequence[Path],
    ) -> CommandResult:
        """Run the command ``make(mounts, early)`` makes: beside the first keeper's start
        where it can be, else (or when that one never reached the command) once the
        trees' volumes are there, a fresh one."""
        gathered = [Path(p) for p in collect]
        beside = self._early(trees, writes)
        if beside is not None:
            mounts = [self._mount(tree, read_only=tree not in writes) for tree in trees]
            result = make(mounts, beside[0]).go(gathered)
            if result is not None:
                return result
            self._after_early(*beside)
        mounts = [self._mount(tree, read_only=tree not in writes) for tree in trees]
        result = make(mounts).go(gathered)
        assert result is not None  # only an early command stops short
        return result

    def close(self) -> None:
        """Remove the keepers and every volume of this runner."""
        self._warming.join()
        remove_keepers(self.client, self._keepers)
        self._keepers.clear()
        self._volumes.clear()
        self.client.close()

    # The trees.

    def _mount(self, tree: Path, *, read_only: bool) -> Any:
        docker = docker_module()
        name = self._volumes.get(tree)
        if name is None:
            name = self._volume_for(tree)
        return docker.types.Mount(
            target=str(tree),
            source=name,
            type="volume",
            read_only=read_only,
            # Not the image's files at that path, nor their owner: a command that mounts
            # an empty volume the keeper holds would otherwise give its root to root.
            no_copy=True,
        )

    def _early(
        self, trees: list[Path], writes: set[Path]
    ) -> tuple[Early, Keeper, list[Path]] | None:
        """While the first keeper starts, the trees of a command that can run beside it
        (see repogym.run.container.command): their volumes taken from it now, the one with files in
        it (at most one, written by the command, its pages a small part of the memory
        the command is charged for) to be unpacked by the command's container."""
        if self._held.is_set():
            return None
        self._pooled.wait()
        with self._lock:
            keeper = next((k for k in self._keepers if not k.container), None)
            new = [tree for tree in trees if tree not in self._volumes]
            full = [tree for tree in new if any(tree.iterdir())]
            if keeper is None or not self._fits(keeper, new, full, writes):
                return None
            for tree in new:
                self._volumes[tree] = keeper.free.pop()
        early = Early(tree=full[0] if full else None, held=lambda: self._hold(keeper))
        return early, keeper, new

    def _fits(self, keeper: Keeper, new: list[Path], full: list[Path], writes: set[Path]) -> bool:
        """Whether ``keeper`` has a free volume for each of the ``new`` trees, and at most
        one of them (``full``) has files: one the command writes, small enough to unpack."""
        if not new or len(new) > len(keeper.free) or len(full) > 1:
            return False
        return not full or (full[0] in writes and within(full[0], self.limits.memory // 8))

    def _hold(self, keeper: Keeper) -> bool:
        """Wait for the first keeper's start (in slices: a cancel's signal is handled at
        once); whether it holds its volumes."""
        while not self._held.wait(POLL_SLICE):
            pass
        return bool(keeper.container)

    def _after_early(self, early: Early, keeper: Keeper, new: list[Path]) -> None:
        """An early command did not reach the command: if the keeper holds its volumes,
        the tree goes in as any other's (over what part of it got there), else the
        trees are given volumes again."""
        self._warming.join()
        if not keeper.container:  # dropped with its volumes
            for tree in new:
                self._volumes.pop(tree, None)
        elif early.tree is not None:
            at = keeper.at(self._volumes[early.tree])
            copy_in(self.client, keeper.container, at, early.tree, UID)

    def _volume_for(self, tree: Path) -> str:
        """A pool volume for ``tree``, with the host's tree copied in."""
        self._warming.join()
        with self._lock:
            keeper = next((k for k in self._keepers if k.free), None) or self._new_keeper()
            name = keeper.free.pop()
        large = has_entries(tree, UNPACK_FROM)
        if any(tree.iterdir()) and not (
            large and unpack(self.client, self.image, self.limits, self._cpuset, name, tree)
        ):
            copy_in(self.client, keeper.container, keeper.at(name), tree, UID)
        self._volumes[tree] = name
        return name

    def _new_keeper(self) -> Keeper:
        """Another keeper, started (the caller holds the lock)."""
        keeper = self._pool()
        try:
            start_keeper(self.client, self.image, keeper)
        except BaseException:
            self._drop(keeper)
            raise
        return keeper

    def _pool(self) -> Keeper:
        """A keeper's volumes, the keeper not yet started (the caller holds the lock)."""
        keeper = make_volumes(self.client, self.scope, len(self._keepers), self.limits)
        self._keepers.append(keeper)
        return keeper

    def _drop(self, keeper: Keeper | None) -> None:
        """A keeper that did not start, and its volumes (the caller holds the lock)."""
        if keeper is None or keeper not in self._keepers:
            return
        self._keepers.remove(keeper)
        for name in keeper.names:
            with contextlib.suppress(Exception):
                self.client.api.remove_volume(name, force=True)
