"""The one error tree of repogym, engine and Action, and the exit code of each error.

Every failure that is the user's to fix (a bad task file, a ref that does not exist, a
path outside the tree, a workflow input) raises a subclass of :class:`RepogymError`. The
command line and the Action each catch it in one place and print its message, one line
per problem, never a traceback. The Action's errors subclass the engine's::

    RepogymError                    exit 2 (exit 3 when not users_to_fix)
    ├── TaskError                   the task file: syntax, schema, values
    ├── WorkspaceError              the work tree, refs, paths asked of a workspace
    │   └── UnknownRef              a name that no commit answers to
    ├── UsageError                  how repogym was called: arguments, inputs
    │   ├── TemplateFilesError      a template directory (repogym.report.template_files)
    │   ├── SettingsError           the Action's inputs (repogym_action.settings)
    │   ├── CheckoutError           the workspace actions/checkout left, fetching the
    │   │                           commits (repogym_action.gitcall)
    │   └── EventError              the event the run is for (repogym_action.event)
    │       └── ArtifactError       a report uploaded for publish mode
    │                               (repogym_action.publish_mode)
    ├── JUnitError                  a test report that is missing, too large, unsafe or
    │                               malformed (the TestGrader turns it into a score of 0)
    ├── EnvError                    RepoEnv used out of order
    │   └── EpisodeLost             the episode's container is gone (the step's error:
    │                               RepoEnv ends the episode, truncated)
    ├── SandboxError                the machine's set-up keeps commands from running as
    │                               another user, or that user from reaching a command's
    │                               program or the copies (checked before grading:
    │                               repogym.run.preflight)
    ├── EngineError                 the task's environment cannot be had: no Docker
    │                               engine, no right to its socket, an image that cannot
    │                               be pulled or built
    │   └── OutageError             ... because the engine could not reach the network
    │                               (a registry, DNS): not the user's to fix (exit 3)
    ├── CommandNotFound             a command's program is not on the PATH where it
    │                               runs: the machine's or the environment's to fix, not
    │                               the submission's (repogym.run.notfound)
    └── ApiError                    GitHub's API refused or failed a request
                                    (repogym_action.retry); not the user's to fix
                                    (exit 3) when GitHub answered 5xx or not at all

Every other exception is not the user's to fix (a bug, a broken repository, a full disk):
exit 3, in one line, with the traceback in a file (the command line) or folded in the log
(the Action). A few exceptions are signals between two functions of one module and never
leave it: ``SymlinkLoop`` and ``LinkInTree`` (an ``OSError``, as the write it stops
would raise) in repogym.tree.links, ``WaitTooLong`` in repogym_action.retry, the perf
grader's ``_Failure`` and the environment's ``_BuildFailed``.

:func:`exit_code` is the one mapping from an outcome to an exit code, for both programs
(README, "Exit codes").
"""

from __future__ import annotations

import signal
from enum import IntEnum

__all__ = [
    "LOG_LINE",
    "CommandNotFound",
    "EngineError",
    "EnvError",
    "EpisodeLost",
    "ExitCode",
    "JUnitError",
    "OutageError",
    "RepogymError",
    "SandboxError",
    "TaskError",
    "UnknownRef",
    "UsageError",
    "WorkspaceError",
    "exit_code",
]

# How an error quotes a log after its message, line by line (a Dockerfile's build log,
# repogym.run.image): a report keeps those lines apart, as the error's `log_tail`.
LOG_LINE = "  | "


class RepogymError(Exception):
    """Base of every error repogym reports to a user.

    ``lines`` holds one self-contained line per problem; ``str()`` joins them.
    """

    # Whether the user can fix it (exit 2), or it is a service's failure that a re-run may
    # get past (exit 3, as a bug of ours: GitHub answering 5xx, or not at all).
    users_to_fix = True

    def __init__(self, *lines: str) -> None:
        if not lines:
            raise ValueError("a RepogymError needs at least one line")
        super().__init__("\n".join(lines))
        self.lines: tuple[str, ...] = lines


class TaskError(RepogymError):
    """The task file is missing, unreadable or invalid."""


class WorkspaceError(RepogymError):
    """The work tree, a ref or a requested path cannot be used."""


class UsageError(RepogymError):
    """A command was called with arguments that do not fit together."""


class UnknownRef(WorkspaceError):
    """A name that no commit answers to."""


class JUnitError(RepogymError):
    """The report is missing, too large, unsafe or not JUnit XML."""


class EnvError(RepogymError):
    """RepoEnv used out of order (a step before ``reset()``, after the episode ended or
    after ``close()``), an unknown action, or a workspace asked for when there is none."""


class EpisodeLost(EnvError):
    """The episode's container stopped or cannot be reached (the engine removed it, a
    command's processes could not be killed, its tree could not be copied back): RepoEnv
    ends the episode, truncated, with this as the step's error (issue 23)."""


class SandboxError(RepogymError):
    """Commands cannot run as a sandbox user: the directory of slot locks is not root's
    alone, the user named ``repogym`` is root, or that user cannot reach a program a
    command starts with or the directory of the copies (issue 20)."""


class CommandNotFound(RepogymError):
    """A command of the task names a program (without a slash) that the shell did not find
    on the PATH where the command runs (exit code 127): no grade of the submission's, since
    no submission could have passed (issue 20). ``program`` is its name."""

    def __init__(self, *lines: str, program: str) -> None:
        super().__init__(*lines)
        self.program = program


class EngineError(RepogymError):
    """The task's ``environment`` cannot be had: the Docker SDK is not installed, no
    engine answers, its socket is closed to this user, the image cannot be pulled, the
    Dockerfile does not build. Raised before any grading starts."""


class OutageError(EngineError):
    """The environment's image could not be pulled or built because the engine could not
    reach the network (a registry's host not found, a connection refused or timed out):
    a re-run may get past it, and the task is not at fault (issue 44)."""

    users_to_fix = False


class ExitCode(IntEnum):
    """What the command line and the Action exit with."""

    PASSED = 0  # graded and passed (or nothing to do)
    FAILED = 1  # graded and not passed
    ERROR = 2  # an error the user can fix: a RepogymError
    INTERNAL = 3  # repogym's, or a service's that a re-run may get past
    SIGNAL = 128  # plus the signal's number: stopped by it


def exit_code(error: BaseException) -> int:
    """The exit code of a run that ``error`` ended: 2 for an error the user can fix, 3 for
    one that is not theirs (a bug, or GitHub failing), 128 + the signal's number for an
    interrupt (``signum``, SIGINT when it has none)."""
    if isinstance(error, RepogymError):
        return ExitCode.ERROR if error.users_to_fix else ExitCode.INTERNAL
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.SIGNAL + getattr(error, "signum", signal.SIGINT)
    return ExitCode.INTERNAL
