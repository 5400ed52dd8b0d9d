"""The runner of untrusted commands: real processes, real signals, real /proc."""

from __future__ import annotations

import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

import repogym.run.host
import repogym.sandbox.output
from repogym.models import CommandResult
from repogym.run.host import Runner


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_exit_code_output_and_duration(tmp_path: Path) -> None:
    result = Runner().run("echo out; echo err >&2; exit 7", tmp_path, timeout=10)
    assert (result.exit_code, result.timed_out, result.ok) == (7, False, False)
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    assert 0 < result.duration < 10
    assert result.describe().startswith("exit code 7 after ")


def test_runs_in_the_given_directory(tmp_path: Path) -> None:
    assert Runner().run("pwd", tmp_path, timeout=10).stdout.strip() == str(tmp_path)


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    started = time.monotonic()
    result = Runner().run(
        f"sleep 300 & echo $! >> {pids}; (sleep 300 & echo $! >> {pids}; wait) & sleep 300",
        tmp_path,
        timeout=1,
    )
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 30
    assert result.describe() == "timed out after 1 s"
    assert all(not alive(int(pid)) for pid in pids.read_text().split())


def test_background_processes_and_daemons_do_not_outlive_the_command(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    written = tmp_path / "written"
    os.mkfifo(written)
    # A plain background job, a daemon that left the process group with setsid, and one
    # that also cleared its environment (so only re-parenting can find it). Each daemon
    # says on a FIFO that its pid is written, and the command exits once both have.
    command = (
        f"exec 3<> {written}; "
        f"sleep 300 & echo $! >> {pids}; "
        f"setsid sh -c 'echo $$ >> {pids}; echo >&3; exec sleep 300' & "
        f"setsid env -i sh -c 'echo $$ >> {pids}; echo >&3; exec sleep 300' & "
        "read a <&3; read b <&3; exit 0"
    )
    result = Runner().run(command, tmp_path, timeout=30)
    assert result.exit_code == 0
    found = [int(pid) for pid in pids.read_text().split()]
    assert len(found) == 3
    assert [pid for pid in found if alive(pid)] == []


def test_the_graders_own_children_outlive_a_command_and_its_daemons(tmp_path: Path) -> None:
    """A process that grades in-process (a training loop, a batch's one worker) keeps
    the children it started before (a pool's workers, multiprocessing's resource
    tracker): only the command's leftovers are killed, one that cleared its environment
    too."""
    own = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        pids = tmp_path / "pids"
        written = tmp_path / "written"
        os.mkfifo(written)
        command = (
            f"exec 3<> {written}; "
            f"setsid env -i sh -c 'echo $$ >> {pids}; echo >&3; exec sleep 300' & "
            "read a <&3; exit 0"
        )
        assert Runner().run(command, tmp_path, timeout=30).exit_code == 0
        [daemon] = [int(pid) for pid in pids.read_text().split()]
        assert not alive(daemon)
        assert alive(own.pid) and own.poll() is None
    finally:
        own.kill()
        own.wait()


class Interrupted(Exception):
    """Stands for the exception the CLI raises on a signal, wherever the program is."""


def test_a_signal_just_after_the_spawn_still_kills_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = tmp_path / "started"
    os.mkfifo(started)
    fd = os.open(started, os.O_RDONLY | os.O_NONBLOCK)
    pids: list[int] = []

    def interrupt(pipe: IO[bytes], cap: int) -> None:
        # In place of the reader of each pipe; the signal comes while the second one is
        # made, once the command runs.
        pipe.close()
        if pids:
            raise Interrupted
        ready, _, _ = select.select([fd], [], [], 600)
        assert ready, "the command did not start"
        pids.extend(int(pid) for pid in os.read(fd, 100).split())

    monkeypatch.setattr(repogym.run.host, "Tail", interrupt)
    try:
        with pytest.raises(Interrupted):
            Runner().run(f"sleep 300 & echo $$ $! > {started}; wait", tmp_path, timeout=600)
    finally:
        os.close(fd)
    assert len(pids) == 2  # the shell and its sleep
    assert [pid for pid in pids if alive(pid)] == []


def test_environment_is_an_allowlist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_TOKEN", "secret")
    monkeypatch.setenv("DECLARED", "ok")
    runner = Runner(pass_env=["DECLARED"], set_env={"FIXED": "1"})
    out = runner.run("env", tmp_path, timeout=10).stdout
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert "GITHUB_TOKEN" not in names and "INPUT_TOKEN" not in names
    assert "DECLARED=ok" in out.splitlines() and "FIXED=1" in out.splitlines()
    assert "PATH" in names


def test_output_is_capped_keeping_the_tail(tmp_path: Path) -> None:
    result = Runner(output_cap=1000).run("seq 1 100000; echo last", tmp_path, timeout=30)
    assert len(result.stdout.encode()) == 1000
    assert result.stdout.endswith("100000\nlast\n")
    assert result.stdout_cut == len("".join(f"{i}\n" for i in range(1, 100001))) + 5 - 1000


def test_no_stdin(tmp_path: Path) -> None:
    assert Runner().run("cat", tmp_path, timeout=10).exit_code == 0


def test_output_held_open_out_of_reach_of_the_killing_does_not_hang_the_run(
    tmp_path: Path,
) -> None:
    # The command hands its stdout to a process the clean-up cannot kill (this one,
    # through a unix socket), as a daemon of another user's, or a service, could hold it.
    address = str(tmp_path / "socket")
    held: list[int] = []
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(address)
        server.listen()

        def receive() -> None:
            connection, _ = server.accept()
            with connection:
                held.extend(socket.recv_fds(connection, 1, 1)[1])

        receiver = threading.Thread(target=receive)
        receiver.start()
        send = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect({address!r}); socket.send_fds(s, [b'x'], [1])"
        )
        done: list[CommandResult] = []
        command = f'echo before; {sys.executable} -c "{send}"; echo after'
        grading = threading.Thread(
            target=lambda: done.append(Runner().run(command, tmp_path, timeout=60))
        )
        grading.start()
        grading.join(60)
        receiver.join()
    try:
        assert not grading.is_alive(), "run() did not return"
        assert len(held) == 1  # the pipe was still open when run() returned
        assert (done[0].exit_code, done[0].stdout) == (0, "before\nafter\n")
    finally:
        for fd in held:
            os.close(fd)


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, 1e20])
def test_a_timeout_that_is_not_a_sane_number_of_seconds_is_refused(
    tmp_path: Path, timeout: float
) -> None:
    with pytest.raises(ValueError, match="must be a positive number of seconds, at most 604800"):
        Runner().run("true", tmp_path, timeout=timeout)


def test_a_cancel_another_thread_takes_still_stops_the_wait() -> None:
    """A cancel's signal taken by a thread that does not block it (a library's): the C
    handler runs there, and the main thread's poll is not interrupted. The wait must
    still end by the signal, not by its command's timeout (a one-hour wait hung CI)."""
    from repogym.sandbox.process import Interrupted, signals_interrupt

    read, write = os.pipe()
    gave_up = threading.Event()

    def watchdog() -> None:  # a wait still blocked after this long is the hang
        if not gave_up.wait(30):
            os.write(write, b"x")

    def take_the_signal() -> None:  # once the main thread blocks in poll
        main = f"/proc/{os.getpid()}/task/{os.getpid()}/wchan"
        while "poll" not in Path(main).read_text() and not gave_up.wait(0.01):
            pass
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    threading.Thread(target=watchdog, daemon=True).start()
    taker = threading.Thread(target=take_the_signal, daemon=True)
    try:
        with signals_interrupt(), pytest.raises(Interrupted):
            taker.start()
            repogym.sandbox.output.readable(read, None)
        woken = select.select([read], [], [], 0)[0]
        assert not woken, "the wait ended when the watchdog wrote, not at the signal"
    finally:
        gave_up.set()
        os.close(read)
        os.close(write)
