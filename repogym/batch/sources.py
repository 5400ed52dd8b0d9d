"""Where a line's repository comes from (issue 23): a private clone for each item, the
commits its ``base`` and ``ref`` name, and whether its task times a benchmark.

- **A local repository** (a path that exists) lends its objects to the clone (no copy),
  and its own names resolve what the clone's do not: ``HEAD``, ``origin/main``,
  ``refs/pull/1/head``, a short sha.
- **A git URL** is fetched: its branches and tags, and the full ref names (``refs/...``)
  and ``HEAD`` a line gives. Nothing may prompt (ssh in batch mode, no terminal prompt;
  the ssh agent of ``SSH_AUTH_SOCK`` is used), and a transfer that stalls for a minute
  fails rather than hangs. A failure names the repository, never the clone's path.
- **Whether it may time a benchmark** is read where the batch starts, before an item is
  handed to a worker (a perf item runs alone): from a local repository, or from one
  mirror of each URL fetched here once; an item whose task cannot be read counts as one.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

from repogym.errors import RepogymError, UsageError
from repogym.task import load_task
from repogym.tree import git as _git

# A transfer slower than 1 KB/s for 60 s is a stalled server (git's own test).
_STALL = ["-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60"]
_SSH = "ssh -o BatchMode=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=4"
_URL_HEAD = "refs/repogym/HEAD"  # where a URL's HEAD is fetched to
# The transports a line's repository may name: git's own (a remote helper such as
# ``ext::`` runs a command); GIT_ALLOW_PROTOCOL holds git to them too.
SCHEMES = ("https", "http", "ssh", "git", "file")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def checked_repo(repo: str) -> str:
    """``repo`` when it is a path or a git URL of :data:`SCHEMES` (or ``host:path``, as
    scp writes it); else a ValueError that says what to write instead. A value is never
    an option of git's, nor a remote helper's command."""
    if repo.startswith("-"):
        raise ValueError(
            f"{repo!r} starts with '-', which git would read as an option: a path that "
            f"starts so is written ./{repo}"
        )
    if "\0" in repo or "\n" in repo:
        raise ValueError("a repository holds no NUL or line break")
    scheme = _SCHEME.match(repo)
    if scheme is not None and scheme[1].lower() not in SCHEMES:
        raise ValueError(f"{scheme[1]}:// is not a git URL repogym fetches ({', '.join(SCHEMES)})")
    if scheme is None and "::" in repo.split("/", 1)[0]:
        raise ValueError(
            f"{repo!r} names a remote helper ({repo.split('::', 1)[0]}::), which runs a "
            f"command; give a path or a URL ({', '.join(SCHEMES)})"
        )
    return repo


def local_source(repo: str, root: str) -> Path | None:
    """``repo`` as a local path (relative to ``root``) when it is one."""
    path = Path(repo).expanduser()
    path = path if path.is_absolute() else Path(root) / path
    return path if path.exists() else None


def private_clone(repo: str, root: str, names: tuple[str, ...], dest: Path) -> Path:
    """A clone of ``repo`` at ``dest`` with its branches and tags, and ``names`` (the
    line's ``base`` and ``ref``) where a URL needs them fetched; nothing checked out."""
    source = local_source(repo, root)
    dest.mkdir(parents=True)
    _git.git(["init", "--quiet"], dest)
    if source is not None:
        common = _git.git(["rev-parse", "--git-common-dir"], source).decode().strip()
        objects = (source / common / "objects").resolve()
        (dest / ".git/objects/info/alternates").write_text(f"{objects}\n")
    _fetch(str(source) if source is not None else repo, names, dest, local=source is not None)
    return dest


def _fetch(url: str, names: tuple[str, ...], dest: Path, *, local: bool) -> None:
    refs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    if not local:
        refs += [f"+{name}:{name}" for name in names if name.startswith("refs/")]
        refs += [f"+HEAD:{_URL_HEAD}"] if "HEAD" in names else []
    env = {
        "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", _SSH),
        "GIT_ALLOW_PROTOCOL": ":".join(SCHEMES),
    }
    if "SSH_AUTH_SOCK" in os.environ:
        env["SSH_AUTH_SOCK"] = os.environ["SSH_AUTH_SOCK"]
    done = _git.run(
        [*_STALL, "fetch", "--quiet", "--no-tags", "--end-of-options", checked_repo(url), *refs],
        dest,
        env=env,
        stdin=b"",
    )
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[0] if said else f"exit code {done.returncode}"
        raise UsageError(f"`repo` {url}: git fetch failed: {why}")


def commit_of(clone: Path, ref: str, key: str, source: Path | None) -> str:
    """The commit ``ref`` (the line's ``key``) names: in the clone, else (a local
    repository) in ``source``, whose objects the clone has; or a UsageError."""
    for repo, name in [(clone, _URL_HEAD if ref == "HEAD" and source is None else ref)] + (
        [(source, ref)] if source is not None else []
    ):
        try:
            return _git.resolve_commit(repo, name)
        except RepogymError:
            continue
    raise UsageError(f"`{key}` {ref!r} is no commit of the repository")


@functools.lru_cache(maxsize=4096)
def has_perf(repo: str, root: str, base: str, task: str | None) -> bool:
    """Whether the task (``task``, a file, else ``.repogym.yml`` at ``base``) has a
    ``perf`` section; True when it cannot be read here. Once per process and value."""
    try:
        if task is not None:
            return load_task(Path(task)).perf is not None
        local = local_source(repo, root)
        name = _URL_HEAD if base == "HEAD" and local is None else base
        source = local or _mirror(repo, base)
        return load_task(None, repo=source, commit=name, ref=base).perf is not None
    except (RepogymError, OSError):
        return True  # read where it runs: assume the worst here


@functools.lru_cache(maxsize=64)
def _mirror(url: str, base: str) -> Path:
    """A bare copy of ``url``'s branches and tags (and ``base`` when it is a full ref or
    ``HEAD``) in this process, for reading tasks; removed at exit."""
    holder = Path(tempfile.mkdtemp(prefix="repogym-mirror-"))
    atexit.register(shutil.rmtree, holder, True)
    dest = holder / "repo.git"
    dest.mkdir()
    _git.git(["init", "--quiet", "--bare"], dest)
    _fetch(url, (base,), dest, local=False)
    return dest
