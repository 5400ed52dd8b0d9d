"""``repogym`` started as an interactive shell starts it. pytest itself may run with
SIGINT or SIGHUP ignored (started by ``nohup``, or in the background of a script), and a
child inherits that; repogym rightly leaves an ignored signal alone, so a test that
signals it would see it ignore the signal."""

from __future__ import annotations

import sys

LAUNCH = """\
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.{hup})
sys.argv[0] = "repogym"
runpy.run_module("repogym", run_name="__main__", alter_sys=True)
"""


def repogym_command(args: list[str], *, hup: str = "SIG_DFL") -> list[str]:
    """The command line of ``repogym ARGS`` with an interactive shell's dispositions (and
    SIGHUP's set to ``hup``)."""
    return [sys.executable, "-c", LAUNCH.format(hup=hup), *args]
