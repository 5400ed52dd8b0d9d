"""The one error family of repogym.

Every failure that is the user's to fix (a bad task file, a ref that does not exist, a
path outside the tree) raises a subclass of :class:`RepogymError`. The command line and
the Action catch it in one place and print its message, one line per problem, never a
traceback::

    RepogymError
    ├── TaskError        the task file: syntax, schema, values
    ├── WorkspaceError   the work tree, refs, paths asked of a workspace
    │   └── UnknownRef   a name that no commit answers to
    ├── UsageError       command-line arguments
    ├── JUnitError       a test report that is missing, too large, unsafe or malformed
    │                    (the TestGrader turns it into a score of 0)
    ├── EnvError         RepoEnv used out of order
    ├── SandboxError     the machine's set-up keeps commands from running as another user,
    │                    or that user from reaching a command's program or the copies
    │                    (checked before grading: repogym._preflight)
    ├── EngineError      the task's environment cannot be had: no Docker engine, no right
    │                    to its socket, an image that cannot be pulled or built
    └── CommandNotFound  a command's program is not on the PATH where it runs: the
                         machine's or the environment's to fix, not the submission's
                         (repogym._notfound)

Every other exception is not the user's to fix (a bug, a broken repository, a full
disk): the command line reports it in one line with exit code 3 and writes the
traceback to a file (docs/errors in README.md, "Exit codes").
"""

from __future__ import annotations

# How an error quotes a log after its message, line by line (a Dockerfile's build log,
# repogym.environment): a report keeps those lines apart, as the error's `log_tail`.
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
