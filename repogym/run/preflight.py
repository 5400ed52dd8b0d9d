"""Before grading as root: can the sandbox user reach what the task's commands need?
(issue 20)

As root with the sandbox on, every command runs as an unprivileged uid with no group but
its own (repogym.sandbox.users). Where that uid cannot go through a directory, two things went
wrong without a word: a Python under a 0700 ``/root`` failed every test with
``Permission denied``, a FAIL that blamed the change; and where an earlier PATH entry held
the program out of its reach, the shell ran the one of a later entry, another interpreter
than the grader's, with other packages. :func:`check` says so before anything runs, one
line per problem naming the command, the directory and the fix (:class:`SandboxError`,
exit code 2).

What is checked, as the kernel decides it: every directory on the way to the copies
(repogym.tree.store.copies_dir) and to the temporary directory (where the run's HOME is
made) must let the uid search it, and so must every directory on the way to the program
each command starts with (repogym.run.notfound.first_program, looked up on the commands'
PATH as the grader finds it, links followed), which it must be able to execute, and read
if it is a script, whose ``#!`` interpreter it must reach too. The uid owns none of these
and is in none of their groups, so the bits for others decide; an entry with an access
ACL may grant more, and is taken as reachable (a problem may go unsaid, none is made up).
No process is started: a few ``stat`` calls per grade.

A program on no PATH entry is not checked: ``setup`` may install it, and if it does not,
the run says so (repogym.run.notfound).
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from repogym.errors import SandboxError
from repogym.run.protocol import CommandRunner
from repogym.sandbox import seal as _seal
from repogym.sandbox import users as _sandbox
from repogym.sandbox.commandline import first_program
from repogym.task import Task
from repogym.tree.store import copies_dir

EXECUTE, READ = 0o1, 0o4  # the bits for others
MAX_LINKS = 40  # as Linux follows on one path
_ACL = "system.posix_acl_access"
_MEASURED = {
    "cpu": "timing: cpu",
    "instructions": "timing: instructions",
    "peak_memory": "measure: peak_memory",
}
_OR_OFF = ", or REPOGYM_SANDBOX=off to run the commands as root (see docs/security.md)"


@dataclass(frozen=True, slots=True)
class Obstacle:
    """What keeps the uid from its way: ``place`` lacks ``need`` (``x`` or ``r``) for it.
    ``interpreter``: the ``#!`` interpreter of a script, if the obstacle is on its way."""

    place: str
    mode: int
    need: str
    interpreter: str | None = None

    def why(self) -> str:
        """``/root is mode 0700; run `chmod o+x /root```."""
        fix = f"chmod o+{self.need} {shlex.quote(self.place)}"
        return f"{self.place} is mode {self.mode:04o}; run `{fix}`"


def check(task: Task, runner: CommandRunner, size: int) -> None:
    """Raise :class:`SandboxError` with one line per problem unless the sandbox user can
    reach the copies (of a submission of ``size`` bytes) and run the program each of the
    task's commands starts with, the same the grader finds first on their PATH. Nothing is
    checked unless the commands run on the host as a sandbox user (root, sandbox on)."""
    # In a container of the task's environment, the image's programs run, not ours.
    if task.environment is not None or not runner.switches_user():
        return
    # A sealed command's view is made by root (repogym.sandbox.seal): the directories
    # above what it shows are enterable by all, so a copy or a Python under a 0700 home
    # is in reach; what the view shows keeps its own modes.
    sealed = _seal.unavailable() is None
    places = {
        copies_dir(size) or tempfile.gettempdir(): "the copies",
        tempfile.gettempdir(): "the run's HOME and TMPDIR",
    }
    path = runner.environment()["PATH"]
    lines = problems(task, path, {} if sealed else places, _sandbox.first_uid(), sealed=sealed)
    if lines:
        raise SandboxError(*lines)


def problems(
    task: Task,
    path: str,
    places: dict[str, str],
    uid: int,
    *,
    sealed: bool = False,
    measurer: str = sys.executable,
) -> list[str]:
    """The lines :func:`check` raises: for each directory of ``places`` (a directory ->
    what is made there) and for each command of ``task``, looked up on ``path``, what
    keeps ``uid`` from it; and from ``measurer``, the Python that starts the benchmark of
    a ``timing: cpu`` or ``instructions`` or ``measure: peak_memory`` on the host."""
    if not any(_commands(task)):
        return []  # nothing runs as that user
    who = f"the sandbox user (uid {uid})"
    lines = []
    for place, what in places.items():
        blocked = obstacle(place, uid, EXECUTE)
        if blocked is not None:
            lines.append(f"{who} cannot reach {place}, where {what} are made: {blocked.why()}")
    found: dict[str, list[str]] = {}  # a problem -> the keys of the commands it stops
    for key, command in _commands(task):
        program = first_program(command)
        roots = _seal.toolchain(path, command) if sealed else None
        problem = None if program is None else _program_problem(program, path, uid, roots)
        if problem is not None:
            found.setdefault(problem, []).append(key)
    perf = task.perf
    if perf is not None and perf.wrapped is not None:  # the measurer starts the benchmark
        roots = _seal.toolchain(path, perf.command) if sealed else None
        problem = _program_problem(measurer, path, uid, roots)
        if problem is not None:
            key = f"perf ({_MEASURED[perf.wrapped]}, measured by {measurer})"
            found.setdefault(problem, []).append(key)
    lines += [f"{' and '.join(keys)}: {who} {problem}" for problem, keys in found.items()]
    return [line + _OR_OFF for line in lines]


def _commands(task: Task) -> Iterator[tuple[str, str]]:
    if task.setup and (task.tests or task.perf):
        yield "setup", task.setup
    if task.tests:
        yield "tests.command", task.tests.command
    if task.perf:
        yield "perf.command", task.perf.command


def _program_problem(
    program: str, path: str, uid: int, roots: list[str] | None = None
) -> str | None:
    """What keeps ``uid`` from the ``program`` the grader finds first on ``path``, from
    the words after the sandbox user's name; None when nothing does."""
    if "/" in program:
        if not program.startswith("/"):
            return None  # in the copy, which is the sandbox user's
        blocked = _reach(program, uid, roots)
        return None if blocked is None else _cannot(program, blocked)
    first: tuple[str, Obstacle] | None = None
    for entry in path.split(":"):
        if not entry.startswith("/"):
            continue  # relative to the copy the command runs in
        candidate = str(Path(entry, program))
        if not (Path(candidate).is_file() and os.access(candidate, os.X_OK)):
            continue
        blocked = _reach(candidate, uid, roots)
        if first is None:
            if blocked is None:
                return None  # the grader's own
            first = (candidate, blocked)
        elif blocked is None:
            shadowed, why = first
            return (
                f"would run {candidate}, not {_target(shadowed, why)} that PATH finds "
                f"first: {why.why()}"
            )
    return None if first is None else _cannot(*first)


def _cannot(program: str, blocked: Obstacle) -> str:
    verb = "run" if blocked.place == program else "reach"
    return f"cannot {verb} {_target(program, blocked)}: {blocked.why()}"


def _target(program: str, blocked: Obstacle) -> str:
    if blocked.interpreter is None:
        return program
    return f"{program} (its #! interpreter {blocked.interpreter})"


def _reach(program: str, uid: int, roots: list[str] | None = None) -> Obstacle | None:
    """What keeps ``uid`` from executing ``program``: the way to it, the file's mode, and
    for a script, reading it and the way to its interpreter; ``roots``: what a sealed
    command's view shows (the directories above them are the view's, open to all)."""
    blocked = obstacle(program, uid, EXECUTE, roots)
    if blocked is not None:
        return blocked
    interpreter = _interpreter(program)
    if interpreter is None:
        return None
    blocked = obstacle(program, uid, READ, roots) or obstacle(interpreter, uid, EXECUTE, roots)
    return None if blocked is None else replace(blocked, interpreter=interpreter)


def _interpreter(program: str) -> str | None:
    """The absolute interpreter of a ``#!`` script, else None."""
    try:
        with Path(program).open("rb") as file:
            head = file.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return None
    return os.fsdecode(words[0])


def obstacle(path: str, uid: int, need: int, roots: list[str] | None = None) -> Obstacle | None:
    """The first entry on the way to ``path`` that ``uid`` may not search, or ``path``
    itself when it lacks ``need`` (``EXECUTE``: search or run; ``READ``) for it. None when
    nothing stops it, or when the way is broken (missing, looping): the command then says
    so itself. Links are followed as the kernel follows them. With ``roots`` (a sealed
    command's view: repogym.sandbox.seal.toolchain), the directories above them are the
    view's own, which every user may search."""

    def _denied_on_way(entry: Path, info: os.stat_result) -> Obstacle | None:
        if roots is not None and _seal.made_for_the_view(str(entry), roots):
            return None
        return _denied(entry, info, uid, EXECUTE)

    pending = path.split("/")[::-1]
    current = Path("/")
    links = 0
    blocked = _denied(current, current.stat(), uid, EXECUTE)
    while pending and blocked is None:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = current.parent
            continue
        entry = current / name
        try:
            info = entry.lstat()
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                return None
            target = str(entry.readlink())
            if target.startswith("/"):
                current = Path("/")
            pending.extend(reversed(target.split("/")))
            continue
        if not all(rest in ("", ".") for rest in pending):  # a directory on the way
            if not stat.S_ISDIR(info.st_mode):
                return None
            blocked = _denied_on_way(entry, info)
        current = entry
    if blocked is not None:
        return blocked
    return _denied(current, current.stat(), uid, need)


def _denied(place: Path, info: os.stat_result, uid: int, need: int) -> Obstacle | None:
    """An :class:`Obstacle` if ``uid`` (whose only group is ``uid``) lacks ``need`` on
    ``place``."""
    if info.st_uid == uid:
        shift = 6
    elif info.st_gid == uid:
        shift = 3
    else:
        shift = 0
    if info.st_mode & (need << shift) or _has_acl(place):
        return None
    return Obstacle(str(place), stat.S_IMODE(info.st_mode), "x" if need == EXECUTE else "r")


def _has_acl(place: Path) -> bool:
    try:
        os.getxattr(place, _ACL, follow_symlinks=False)
    except OSError:  # none (ENODATA), or no ACLs on this file system
        return False
    return True
