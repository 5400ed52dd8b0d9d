"""A command sealed in namespaces of its own, on the host (issue 43).

Every command of a submission that runs on the host as a sandbox uid (root, the sandbox
on) is started by `bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``,
Debian's ``bubblewrap`` package) in a fresh set of namespaces made for it:

- **IPC, PID, UTS, cgroup**: System V shared memory, semaphores and message queues made by
  the command end with it; its processes are the children of a process 1 of its own, and
  when the command ends the kernel kills every one of them (a daemon included); it sees
  neither the host's processes nor its cgroup path.
- **Network**: a loopback of its own and nothing else, so a port one command holds is not
  another's, and nothing on the host's ``127.0.0.1`` is reached; ``setup`` alone (the
  command that installs) keeps the machine's network.
- **Mount**: a root made for the command, holding only the system's directories
  (``/usr``, ``/etc``, ``/opt``; read-only), the toolchain it is given (the prefixes of its
  ``PATH`` and the grader's Python; read-only), the trees it is given (its copy and what
  it writes read-write, what it only reads read-only), and empty memory file systems at
  ``/tmp``, ``/var/tmp``, ``/dev/shm`` and ``/run``. Nothing else of the host is there: no
  source repository, no other grade's copy, no home directory but the toolchain's.
  Because the view is made by root, a Python under a 0700 home (pyenv under ``/root``)
  is reached without opening the home to others.

Inside, the command drops to its sandbox uid with ``setpriv`` (no capabilities, no
supplementary groups, ``no_new_privs``) before the shell starts.

Where the namespaces are refused (no ``bwrap``, or a kernel or container that refuses
them, as Docker's default seccomp profile and capabilities do in the Action's own
container), the command is confined by Landlock instead (:func:`confine`,
:mod:`repogym.sandbox.landlock`): it may open only what the view would show, but shares
the machine's network, process list and System V IPC (the clean-up of
:mod:`repogym.sandbox.leftovers` removes what it leaves). Where Landlock is refused too,
it runs as before, a uid of its own and the clean-up. One line a process says which
(docs/security.md says what holds in each place). ``REPOGYM_SEAL=landlock`` chooses
Landlock where both could be had.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repogym.sandbox import landlock as _landlock
from repogym.sandbox.commandline import first_program

__all__ = [
    "NOT_SEALED_NOTICE",
    "SHOW",
    "SWITCH",
    "View",
    "argv",
    "confine",
    "holder_mode",
    "made_for_the_view",
    "toolchain",
    "unavailable",
    "within",
]

# "off": run commands unsealed; "landlock": confined by Landlock (docs/security.md).
SWITCH = "REPOGYM_SEAL"
_OFF = ("off", "0", "false")
# Directories of the machine every sealed command sees read-only besides its toolchain
# (a data set, a shared cache): the grader's operator names them, never the task.
SHOW = "REPOGYM_SEAL_SHOW"
# Directories of the system, read-only to every command when they exist.
SYSTEM = ("/usr", "/etc", "/opt")
# Top-level names that are links into /usr on a merged-/usr system, or directories.
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Empty memory file systems of the command's own, anyone may write (sticky): what it
# leaves there ends with it.
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# Names of the directories of programs whose parent is a toolchain's prefix.
BIN_NAMES = ("bin", "sbin", "shims", ".bin")
HOSTNAME = "repogym"
NOT_SEALED_NOTICE = (
    "repogym: the submission's commands run unsealed ({why}): they run as a user of their"
    " own, but see this machine's files that others may read and share its network and"
    " System V IPC; see docs/security.md"
)
CONFINED_NOTICE = (
    "repogym: the submission's commands are confined by Landlock, not sealed ({why}): they"
    " open only their trees, the system and their toolchain, but share this machine's"
    " network and process list; see docs/security.md"
)
_noticed = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """What a sealed command sees of the host besides the system and its toolchain."""

    writable: Sequence[Path] = ()  # trees it may write (its copy, its report's directory)
    readable: Sequence[Path] = ()  # trees it may only read (a baseline, linked dependencies)
    cwd: Path
    network: bool = False  # the machine's network (setup) instead of a loopback of its own
    # The command as the task wrote it, when what runs has lines of the grader's before
    # it (issue 44): the program it names by its path is a toolchain to show.
    named: str = ""


def unavailable() -> str | None:
    """Why commands cannot be sealed here, or None when they can (found once a process)."""
    chosen = os.environ.get(SWITCH, "").lower()
    if chosen in (*_OFF, "landlock"):
        return f"{SWITCH}={chosen}"
    return _probe()


def holder_mode() -> int:
    """The mode of a directory the grader makes around a command's tree: 0700 where the
    commands are sealed (the view reaches the tree as root, and a command of another
    grade, confined or unsealed on the same machine, cannot go through it), else 0711
    (the sandbox uid goes through to its tree, and lists nothing on the way)."""
    return 0o700 if unavailable() is None else 0o711


def confine(view: View, env: Mapping[str, str], command: str, why: str) -> int | None:
    """Where the namespaces are refused (``why``), a Landlock ruleset for ``command``
    that lets it open what its view would show (the caller closes it); None where
    Landlock cannot be had either. Either way, the line that says so, once a process."""
    if os.environ.get(SWITCH, "").lower() not in _OFF:
        refused = _landlock.unavailable()
        if refused is None:
            notice(CONFINED_NOTICE.format(why=why))
            mounts = _mounts(view, env, command)
            read = [p for p, write in mounts if not write]
            read += [top for top in TOP_LINKS if Path(top).is_dir() and not Path(top).is_symlink()]
            # The operator's, as the seal's read-only mount of them: a FIFO or device there
            # may be written (a regular file as its mode allows; the mount refuses it).
            shown = [os.path.realpath(p) for p in _shown()]
            return _landlock.ruleset(read, [p for p, write in mounts if write], opened=shown)
        why = f"{why}; {refused}"
    notice(NOT_SEALED_NOTICE.format(why=why))
    return None


@functools.cache
def _probe() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "not root"
    bwrap, setpriv = _program("bwrap"), _program("setpriv")
    if bwrap is None:
        return "bwrap is not installed: install Debian's bubblewrap package"
    if setpriv is None:
        return "setpriv is not installed: install util-linux"
    probe = [*_namespaces(network=False), "--ro-bind", "/", "/", "--", setpriv, "--help"]
    try:
        done = subprocess.run(
            [bwrap, *probe], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap did not start: {error}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"this machine refuses the namespaces: {said[-1] if said else done.returncode}"
    return None


def notice(line: str) -> None:
    """Say once a process how commands run where they cannot be sealed."""
    if _noticed.acquire(blocking=False):
        print(line, file=sys.stderr, flush=True)


@functools.cache
def _program(name: str) -> str | None:
    # The system's, not the PATH of whoever runs the grader: a program found first on a
    # PATH the task or a virtual environment sets runs as root.
    for directory in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        path = Path(directory, name)
        if os.access(path, os.X_OK):
            return str(path)
    return None


def _namespaces(*, network: bool) -> list[str]:
    flags = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        flags.append("--unshare-net")
    return [*flags, "--hostname", HOSTNAME, "--die-with-parent", "--new-session"]


def argv(
    command: Sequence[str], view: View, *, uid: int, gid: int, env: Mapping[str, str]
) -> list[str]:
    """The command line that runs ``command`` sealed, as ``uid``, seeing ``view``; ``env``
    is the command's environment (its ``PATH`` names the toolchain to show)."""
    bwrap, setpriv = _program("bwrap"), _program("setpriv")
    assert bwrap is not None and setpriv is not None, "unavailable() said it could be sealed"
    args = [bwrap, *_namespaces(network=view.network), "--dev", "/dev", "--proc", "/proc"]
    for top in map(Path, TOP_LINKS):
        if top.is_symlink():
            args += ["--symlink", str(top.readlink()), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    args += ["--perms", "0755", "--tmpfs", "/run"]
    for scratch in SCRATCH:
        args += ["--perms", "1777", "--tmpfs", scratch]
    mounts = _mounts(view, env, command[-1])
    made = {"/", "/dev", "/proc", "/run", *TOP_LINKS, *SCRATCH}
    for target, _ in mounts:
        # Every directory on the way is made for the view, enterable by all (bwrap would
        # copy a 0700 home's mode and leave the sandbox user outside).
        for parent in reversed(Path(target).parents):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        made.add(target)
    for target, write in mounts:
        args += ["--bind" if write else "--ro-bind", target, target]
    args += ["--chdir", str(view.cwd), "--", setpriv, f"--reuid={uid}", f"--regid={gid}"]
    args += ["--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return [*args, "--", *command]


def _mounts(view: View, env: Mapping[str, str], command: str) -> list[tuple[str, bool]]:
    """(path, writable) of every tree to show, parents before what lies inside them (a
    tree inside another is mounted over it, with its own access)."""
    chosen = dict.fromkeys(toolchain(env.get("PATH", ""), view.named or command), False)
    for extra in _shown():
        chosen.setdefault(os.path.realpath(extra), False)
    for tree in (view.cwd, *view.readable):
        chosen.setdefault(os.path.realpath(tree), False)
    for tree in view.writable:
        chosen[os.path.realpath(tree)] = True
    shown = sorted(
        ((p, w) for p, w in chosen.items() if p != "/" and Path(p).is_dir()),
        key=lambda item: (item[0].count("/"), item[0]),
    )
    kept: list[tuple[str, bool]] = []
    for path, write in shown:
        # A tree inside one shown with the same access is there already.
        around = [w for p, w in kept if path.startswith(p.rstrip("/") + "/")]
        if not around or around[-1] != write:
            kept.append((path, write))
    return kept


def _shown() -> list[str]:
    """The directories the grader's operator shows every command (:data:`SHOW`)."""
    return [p for p in os.environ.get(SHOW, "").split(os.pathsep) if Path(p).is_absolute()]


def toolchain(path: str, command: str) -> list[str]:
    """The directories of the system and the toolchain a sealed ``command`` sees
    (read-only) when its ``PATH`` is ``path``: each is shown as it is, its own mode
    included, and the directories above it are made for the view, enterable by all
    (repogym.run.preflight checks the way from there)."""
    named = first_program(command) or ""
    # A program the command names by its absolute path is a toolchain of its own.
    shown = [*SYSTEM, *_toolchain(os.pathsep.join([path, str(Path(named).parent)]))]
    return list(dict.fromkeys(shown))


def made_for_the_view(directory: str, roots: Iterable[str]) -> bool:
    """Whether ``directory`` is one the view makes (mode 0755) rather than shows: above
    one of ``roots`` and inside none."""
    inside = [r for r in roots if (directory + "/").startswith(r.rstrip("/") + "/")]
    above = [r for r in roots if r.startswith(directory.rstrip("/") + "/")]
    return bool(above) and not inside


def _toolchain(path: str) -> Iterable[str]:
    """The prefixes of the programs the command may run: each directory of ``PATH``
    (its parent when it is a ``bin``, so its libraries come too, unless that parent is a
    home directory or ``/``), the grader's Python (its prefixes and import path, which
    the perf measurer and a task's pytest plugins of the grader's need), and the base of
    a virtual environment named by its ``pyvenv.cfg``."""
    homes = _homes()
    found: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry or not Path(entry).is_absolute():
            continue
        real = Path(os.path.realpath(entry))
        parent = str(real.parent)
        if real.name in BIN_NAMES and parent not in homes and parent != "/":
            real = real.parent
        found.append(str(real))
    found += [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    found += _import_path()
    for prefix in list(found):
        home = _venv_home(prefix)
        if home is not None:
            found.append(home)
    return found


@functools.cache
def _homes() -> frozenset[str]:
    import pwd

    return frozenset(os.path.realpath(entry.pw_dir) for entry in pwd.getpwall()) | {"/home"}


def _import_path() -> list[str]:
    """The grader's import path, but what lies around the directory it was started from
    (``python -m`` puts the working directory first: a user's repository, whose ``src``
    an editable install may also have put there; a virtual environment inside it is
    shown as the grader's prefix)."""
    here = os.path.realpath(Path.cwd())
    found = []
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else here
        if real == "/" or within(here, real) or within(real, here):
            continue  # it, a directory above it or one inside it: the user's work tree
        found.append(real)
    return found


def within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies inside it (both real, absolute)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


@functools.cache
def _venv_home(prefix: str) -> str | None:
    """The prefix of the Python a virtual environment at ``prefix`` was made from."""
    try:
        lines = Path(prefix, "pyvenv.cfg").read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return str(Path(os.path.realpath(value.strip())).parent)
    return None
