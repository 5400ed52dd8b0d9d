"""How a job of tests/action/job.py runs ``repogym-action``: as a process on this machine,
or as the Actions runner runs a Docker container action (``docker run`` of the image with
the runner's mounts, working directory, environment and ownership).

Both lay a run out as the runner does on its own disk (``_temp`` beside the workspace,
with ``_github_home``, ``_github_workflow`` and ``_runner_file_commands`` in it), and each
says how a path of that layout reads where the program runs (:meth:`Runner.path`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# The runner's own uid on GitHub-hosted machines: the workspace and the file-command
# files are the runner's, while a container action runs as root.
RUNNER_UID = 1001
TIMEOUT = 900  # seconds; a run of the examples takes a few
# Called with the program's process once it is started, while the run goes on (its output
# is read meanwhile): what the runner does to a running step, e.g. signal it (a cancel).
OnStarted = Callable[["subprocess.Popen[str]"], None]
# The variables that tell a Docker client which engine to use (the step's, not the CLI's).
ENGINE_VARIABLES = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONTEXT")


class Layout:
    """A run's directories and files, as the runner lays them out under its work folder."""

    def __init__(self, root: Path, *, remotes: tuple[Path, ...] = ()) -> None:
        self.root = root
        # Repositories the workspace fetches from: GitHub's side, which the program
        # reaches over the network on a runner and at the same path here.
        self.remotes = remotes
        self.workspace = root / "workspace"
        self.temp = root / "_temp"
        self.home = self.temp / "_github_home"
        self.workflow = self.temp / "_github_workflow"
        self.event = self.workflow / "event.json"
        self.file_commands = self.temp / "_runner_file_commands"
        suffix = uuid.uuid4()
        self.commands = {
            name: self.file_commands / f"{prefix}_{suffix}"
            for name, prefix in (
                ("output", "set_output"),
                ("summary", "step_summary"),
                ("env", "set_env"),
                ("path", "add_path"),
                ("state", "save_state"),
            )
        }
        for directory in (self.home, self.workflow, self.file_commands):
            directory.mkdir(parents=True)
        for path in self.commands.values():
            path.touch()


class Runner(Protocol):
    def path(self, layout: Layout, host: Path) -> str:
        """``host``, a path of ``layout``, as the program sees it."""

    def execute(
        self, layout: Layout, env: Mapping[str, str], *, on_started: OnStarted | None = None
    ) -> tuple[int, str]:
        """Run the program with ``env``: its exit code and its log (stdout and stderr).
        ``on_started``: see :data:`OnStarted`."""


class Process:
    """``repogym-action`` of this environment, a child process in the workspace."""

    command = Path(sys.executable).with_name("repogym-action")

    def path(self, layout: Layout, host: Path) -> str:
        return str(host)

    def execute(
        self, layout: Layout, env: Mapping[str, str], *, on_started: OnStarted | None = None
    ) -> tuple[int, str]:
        # As the Actions runner starts a step: SIGINT and SIGTERM at their defaults (pytest
        # may run with SIGINT ignored, which a child would inherit); the launcher execs the
        # program, which keeps the pid a test signals.
        launch = (
            "import os, signal, sys\n"
            "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)\n"
            "os.execv(sys.argv[1], sys.argv[1:])\n"
        )
        return _run(
            [sys.executable, "-c", launch, str(self.command)],
            env={"PATH": os.environ["PATH"], **env},
            cwd=layout.workspace,
            on_started=on_started,
        )


@dataclass
class DockerAction:
    """``image`` started the way the Actions runner starts a Docker container action:
    ``--workdir /github/workspace``, the runner's directories mounted at ``/github/...``
    (``RUNNER_TEMP`` at ``/github/runner_temp``, as runners that map it do), the Docker
    socket mounted, every variable passed by name (``-e NAME``), root in the container
    while the mounted files are the runner's uid. ``--network host`` lets it reach the
    fake API on 127.0.0.1."""

    image: str
    # Runners that predate the /github/runner_temp mount pass the host's RUNNER_TEMP,
    # which the container does not have (tests/container/test_image.py).
    map_runner_temp: bool = True

    MOUNTS = (
        ("home", "/github/home"),
        ("workflow", "/github/workflow"),
        ("file_commands", "/github/file_commands"),
        ("workspace", "/github/workspace"),
        ("temp", "/github/runner_temp"),
    )
    SOCKET = "/var/run/docker.sock"

    def path(self, layout: Layout, host: Path) -> str:
        # The first mount that holds ``host``: the runner's temp directory holds the
        # others and comes last.
        for attribute, inside in self._mounts():
            mounted: Path = getattr(layout, attribute)
            if host == mounted or mounted in host.parents:
                return str(Path(inside, host.relative_to(mounted)))
        if host == layout.temp:  # not mapped: the host's path, as such runners pass it
            return str(host)
        raise AssertionError(f"{host} is in no directory the runner mounts")

    def _mounts(self) -> tuple[tuple[str, str], ...]:
        return tuple(m for m in self.MOUNTS if self.map_runner_temp or m[0] != "temp")

    def execute(
        self, layout: Layout, env: Mapping[str, str], *, on_started: OnStarted | None = None
    ) -> tuple[int, str]:
        name = f"repogym-test-{uuid.uuid4().hex[:12]}"
        command = ["docker", "run", "--name", name, "--label", "repogym-test", "--rm"]
        command += ["--workdir", "/github/workspace", "--network", "host"]
        # An engine variable is given to the container alone: the docker command of the
        # test talks to this machine's engine, whatever engine the step is told to use.
        for variable, value in env.items():
            command += ["-e", f"{variable}={value}" if variable in ENGINE_VARIABLES else variable]
        cli_env = {**os.environ, **{k: v for k, v in env.items() if k not in ENGINE_VARIABLES}}
        if Path(self.SOCKET).exists():
            command += ["-v", f"{self.SOCKET}:{self.SOCKET}"]
        for attribute, inside in self._mounts():
            command += ["-v", f"{getattr(layout, attribute)}:{inside}"]
        for remote in layout.remotes:  # GitHub's copy, where the network would be
            command += ["-v", f"{remote}:{remote}:ro"]
        command.append(self.image)
        if os.geteuid() == 0:
            _chown(layout.root, RUNNER_UID)
        try:
            # The docker CLI proxies the signals it gets into the container, as the
            # runner's cancel relies on.
            return _run(command, env=cli_env, on_started=on_started)
        finally:
            subprocess.run(["docker", "rm", "--force", name], capture_output=True, check=False)


def _run(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    on_started: OnStarted | None = None,
) -> tuple[int, str]:
    """``command`` run to its end (killed after TIMEOUT), ``on_started`` called with it
    while a thread reads its output; its exit code and output. A failing ``on_started``
    kills it."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
    )
    output: list[str] = []
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: output.append(stdout.read()), daemon=True)
    reader.start()
    try:
        if on_started is not None:
            on_started(process)
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join()
        stdout.close()
    return process.returncode, "".join(output)


def _chown(root: Path, uid: int) -> None:
    for directory, dirnames, filenames in os.walk(root):
        os.chown(directory, uid, uid)
        for name in dirnames + filenames:
            os.chown(Path(directory, name), uid, uid, follow_symlinks=False)
