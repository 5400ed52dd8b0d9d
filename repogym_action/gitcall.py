"""git as the Action's checkout runs it, and what its steps share.

:class:`Git` is the engine's one git runner bound to the workspace and to a global
configuration of ours (see :mod:`repogym_action.checkout`); :class:`CheckoutError` is
what every step raises, and :func:`git_reason` the one line of git's it quotes. They are a
module of their own so that the steps that make the private clone
(:mod:`repogym_action.checkout`) and those that fetch the history
(:mod:`repogym_action.fetch`) share them without a cycle.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repogym.errors import RepogymError, UsageError
from repogym.tree.git import run as run_git

__all__ = [
    "CREDENTIAL_KEYS",
    "FETCH_TIMEOUT",
    "HEX",
    "LOCAL_TIMEOUT",
    "CheckoutError",
    "Git",
    "git_reason",
]

FETCH_TIMEOUT = 900.0  # seconds for one fetch from origin, or the checkout of the head
LOCAL_TIMEOUT = 120.0  # seconds for a local git command

# The keys under which actions/checkout persists credentials: the token in a header, or
# the command that gives ssh its key.
CREDENTIAL_KEYS = r"^(http\..*\.extraheader|core\.sshcommand)$"

HEX = re.compile(r"[0-9a-f]{4,64}")


class CheckoutError(UsageError):
    """The commits to grade cannot be had: the workspace is not a checkout, origin
    refuses to give them, or its history stops short of the merge base."""


@dataclass(frozen=True, slots=True)
class Git:
    """The engine's git (:func:`repogym.tree.git.run`) bound to the workspace, the runner's
    environment that git is given (``passed``) and our global ``config``; output as text."""

    workspace: Path
    passed: Mapping[str, str]
    config: Path

    def run(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        done = self.run_bytes(args, cwd=cwd, timeout=timeout)
        return subprocess.CompletedProcess(
            done.args, done.returncode, _text(done.stdout), _text(done.stderr)
        )

    def run_bytes(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> subprocess.CompletedProcess[bytes]:
        where = cwd or self.workspace
        own = {"GIT_CONFIG_GLOBAL": str(self.config)}
        try:
            return run_git(args, where, base=self.passed, env=own, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckoutError(
                f"{where}: `git {args[0]}` took longer than {timeout:.0f} s; "
                "re-run the job, or set `fetch-depth: 0` on actions/checkout"
            ) from None
        except RepogymError as error:  # git is not there
            raise CheckoutError(str(error)) from None

    def out(
        self, args: Sequence[str], *, cwd: Path | None = None, timeout: float = LOCAL_TIMEOUT
    ) -> str:
        """stdout of a command that must succeed, stripped."""
        done = self.run(args, cwd=cwd, timeout=timeout)
        if done.returncode != 0:
            raise CheckoutError(
                f"{cwd or self.workspace}: `git {args[0]}` failed: {git_reason(done.stderr)}"
            )
        return done.stdout.strip()

    def ok(self, args: Sequence[str]) -> bool:
        return self.run(args).returncode == 0

    def shallow(self) -> bool:
        return self.out(["rev-parse", "--is-shallow-repository"]) == "true"


def _text(output: bytes) -> str:
    """git's output as text, as ``subprocess.run(text=True)`` gives it: undecodable bytes
    replaced, line ends made ``\n``."""
    return output.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def git_reason(stderr: str) -> str:
    """git's reason for a failure, in one line: its first ``fatal:`` or ``error:`` line
    (the cause; what follows is consequence and advice), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("fatal:", "error:"))]
    reason = causes[0] if causes else lines[-1] if lines else "no message"
    return reason.rstrip(".")
