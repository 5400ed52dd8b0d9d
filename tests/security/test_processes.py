"""Escaping the process killer (issue 9): processes the tests start that leave the
command's process group and environment, and outlive the command, the grade, or the
SIGTERM that cancels it. Nothing may be left, nothing may write after the grade, and the
grade may not hang."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import textwrap

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case

# A chain of nested shells, each in a new session with an empty environment (but for a
# tag the harness finds them by), each waiting for the next: killing one level
# re-parents the rest, one level at a time.
# At the bottom: rewrite the JSON report once the grader has exited, or hold the
# command's output open, or just stay.
CHAIN = textwrap.dedent(
    """\
    PATH=/usr/bin:/bin
    depth=$1 marker=$2 mode=$3 grader=$4 report=$5
    if [ "$depth" -gt 0 ]; then
      setsid env -i ATTACK_TAG="$marker" \\
        /bin/sh "$0" $((depth - 1)) "$marker" "$mode" "$grader" "$report"
      exit 0
    fi
    case $mode in
    rewrite)
      while [ -d "/proc/$grader" ]; do sleep 0.05; done
      printf '{"passed": true, "score": 1.0, "summary": "PASS 1.000 (forged)"}' > "$report"
      ;;
    *)
      exec sleep 600
      ;;
    esac
    """
)


def start_chain(mode: str, *, hold_output: bool) -> str:
    """The package's ``__init__``: starts the chain of 80 at import."""
    streams = "" if hold_output else ", stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL"
    return p.FIND_GRADER + textwrap.dedent(
        f"""
        import os
        import subprocess as _sp

        _pid, _args = _grader()
        _chain = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chain.sh")
        _sp.Popen(
            ["/bin/sh", _chain, "80", "{{marker}}", "{mode}", str(_pid),
             _option(_args, "--json") or "/nonexistent"],
            start_new_session=True{streams},
        )
        """
    )


# 30 processes that ignore SIGTERM (and SIGINT, SIGHUP), each in a new session with an
# empty environment (but the harness's tag); with ``ready``, the tests then say so through
# that FIFO and wait forever.
def start_stubborn(ready: str | None = None) -> str:
    block = ready is not None
    return textwrap.dedent(
        f"""
        import subprocess as _sp
        import time

        for _ in range(30):
            _sp.Popen(
                ["setsid", "env", "-i", "ATTACK_TAG={{marker}}", "/bin/sh", "-c",
                 "trap '' TERM INT HUP; exec /bin/sleep 600", "{{marker}}"],
                stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL,
                start_new_session=True,
            )
        if {block}:
            with open({ready!r}, "w") as _ready:
                _ready.write("started")
            time.sleep(600)
        """
    )


def test_a_chain_cannot_rewrite_the_report_after_the_grade(case: Case) -> None:
    case.base(task=LOOSE_TASK)
    case.submit(
        {
            "src/slugify/__init__.py": p.package_init(start_chain("rewrite", hold_output=False)),
            "src/slugify/chain.sh": CHAIN,
        }
    )
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_a_chain_holding_the_output_open_does_not_hang_the_grade(case: Case) -> None:
    case.base(task=LOOSE_TASK)
    case.submit(
        {
            "src/slugify/__init__.py": p.package_init(start_chain("hold", hold_output=True)),
            "src/slugify/chain.sh": CHAIN,
        }
    )
    # 20 s is the safety net: a grade of this task takes about 2.
    case.grade(timeout=20).check("fail_to_pass: 0 of 2 passed")


def test_processes_ignoring_sigterm_do_not_outlive_the_grade(case: Case) -> None:
    case.base(task=LOOSE_TASK)
    case.submit({"src/slugify/__init__.py": p.package_init(start_stubborn())})
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_processes_ignoring_sigterm_do_not_outlive_a_cancelled_grade(own_case: Case) -> None:
    case = own_case
    case.base(task=LOOSE_TASK)
    # The tests say when the 30 are started through a FIFO that the sandbox user can
    # open: the grade is cancelled on that event. It lies in the grader's own venv, which
    # a sealed command sees (read-only, which does not stop writing to a FIFO).
    holder = case.python.parent.parent / "ready-holder"
    holder.mkdir(mode=0o755)
    ready = holder / "ready"
    os.mkfifo(ready)
    ready.chmod(0o666)
    case.submit({"src/slugify/__init__.py": p.package_init(start_stubborn(str(ready)))})

    def cancel_when_started(grader: subprocess.Popen[bytes]) -> None:
        # Non-blocking: no writer yet; poll wakes when the tests write (Linux reports no
        # hang-up on a FIFO that never had a writer).
        fd = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(60_000):
                pytest.fail("the 30 processes never said they started")
        finally:
            os.close(fd)
        grader.send_signal(signal.SIGTERM)

    graded = case.grade(on_start=cancel_when_started)
    assert graded.returncode == 128 + signal.SIGTERM, graded.output
    # A cancelled grade says nothing of the tests: the check is what it leaves.
    graded.check("")
    shutil.rmtree(holder)
