"""One attack, graded end to end as a CI job would grade it, and everything it may have
left behind checked in one call.

A :class:`Case` is a real git repository (a task's base on ``main``, the attack on the
checked-out branch ``attack``), a grader's own virtual environment (so that an attack that
poisons it poisons nothing else), a HOME with a ``.gitconfig``, a sentinel directory
outside the tree, a random canary secret in the grader's environment, and a marker that
every process the attack starts carries in its command line. :meth:`Case.grade` runs
``python -m repogym grade --json OUT --markdown MD`` as a subprocess; :meth:`Graded.check`
asserts, all at once so that a failure lists every problem:

- the grade returned by itself (a generous timeout is only a safety net);
- the verdict is not PASS and the output holds the expected text;
- the canary is in none of stdout, stderr, the JSON report and the markdown;
- the sentinel directory, HOME, the grader's site-packages, the user's work tree and HEAD
  are as they were, and no file named after the marker appeared in the temporary
  directory;
- no process carrying the marker is left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.repo import IDENTITY, Repo

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NODE_MODULES = ROOT / "tests" / "runners" / "node_modules"
# examples/bugfix with constraints that allow any file but the tests: an attack graded
# against it is caught by what it attacks, not by `allowed_files` or a line limit.
BUGFIX_TASK = (EXAMPLES / "bugfix" / "repo" / ".repogym.yml").read_text()
LOOSE_TASK = BUGFIX_TASK.split("constraints:")[0] + "constraints:\n  protected: [tests/**]\n"
GRADE_TIMEOUT = 60.0  # seconds: a safety net; a grade of these small tasks takes ~2 s
LINGER = 5.0  # seconds a left-over process may take to finish what it does, once found


def make_grader_venv(dest: Path) -> Path:
    """A virtual environment for the grader, seeing the packages of the one running these
    tests (repogym in editable mode, pytest) through a .pth of its own. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "_repogym_dev.pth").write_text(
        f"import site; site.addsitedir({ours!r}); site.addsitedir({str(ROOT)!r})\n"
    )
    return python


def site_packages(python: Path) -> Path:
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return python.parent.parent / "lib" / version / "site-packages"


def snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every path under ``root`` with what it is: a file's sha256, a symlink's target."""
    found: dict[str, str] = {}
    if not root.exists():
        return found
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        for name in dirs + files:
            path = Path(directory, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = "-> " + str(path.readlink())
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = "other"
    return found


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def marked_processes(marker: str) -> dict[int, str]:
    """pid -> command line of every process (but this one) whose command line or
    environment carries ``marker``."""
    needle = marker.encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        cmdline = _read(entry / "cmdline")
        if needle in cmdline or needle in _read(entry / "environ"):
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:200]
    return found


def wait_gone(pids: list[int], timeout: float) -> None:
    """Wait until each of ``pids`` has exited (a pidfd each), at most ``timeout`` in all."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        finally:
            os.close(fd)


def reap(marker: str, *, linger: float = LINGER) -> dict[int, str]:
    """The processes left carrying ``marker``: let them finish what they do (at most
    ``linger`` seconds), then kill what is still there. Returns those found first."""
    left = marked_processes(marker)
    if left:
        wait_gone(list(left), linger)
    for _ in range(20):
        rest = marked_processes(marker)
        if not rest:
            break
        for pid in rest:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        wait_gone(list(rest), 1.0)
    return left


@dataclass
class Graded:
    """What one grade gave and left behind."""

    case: Case
    returncode: int | None  # None: it did not return by itself within the timeout
    stdout: str
    stderr: str
    report_text: str
    markdown_text: str
    leftovers: dict[int, str]
    changes: dict[str, list[str]]  # place -> paths added, removed or changed
    timeout: float = GRADE_TIMEOUT

    @property
    def report(self) -> dict[str, object] | None:
        try:
            loaded = json.loads(self.report_text)
        except ValueError:
            return None
        return loaded if isinstance(loaded, dict) else None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def problems(self, expect: str = "FAIL", *, verdict: bool = True) -> list[str]:
        """Everything that is not as a secure grader leaves it (``verdict``: the grade's
        verdict too, which a RepoEnv run checks in its own way)."""
        found = []
        if self.returncode is None:
            found.append(f"it did not return by itself within {self.timeout:g} s")
        if verdict:
            found += self._verdict_problems(expect)
        canary = self.case.canary
        for name, text in (
            ("stdout", self.stdout),
            ("stderr", self.stderr),
            ("the JSON report", self.report_text),
            ("the markdown", self.markdown_text),
        ):
            if canary in text:
                found.append(f"the grader's secret is in {name}")
        for place, paths in self.changes.items():
            if paths:
                found.append(f"{place} changed: {sorted(paths)[:5]}")
        if self.leftovers:
            found.append(
                f"{len(self.leftovers)} processes were left: {list(self.leftovers.values())[:2]}"
            )
        return found

    def _verdict_problems(self, expect: str) -> list[str]:
        found = []
        if self.returncode == 0:
            found.append("repogym exited 0: the attack got a PASS")
        passing = [line for line in self.stdout.splitlines() if line.startswith("PASS ")]
        if passing:
            found.append(f"the summary line says {passing[-1]}")
        if expect not in self.output:
            found.append(f"{expect!r} is not in the output: {self.output[-600:]!r}")
        report = self.report
        if report is not None and report.get("passed") is not False:
            found.append(f"the JSON report says passed={report.get('passed')!r}")
        return found

    def check(self, expect: str = "FAIL") -> None:
        problems = self.problems(expect)
        assert not problems, "\n".join(problems)


def check_all(*graded: tuple[Graded, str]) -> None:
    """:meth:`Graded.check` of several grades (an attack, then the grade after it), with
    the problems of all of them in one failure."""
    problems = [f"grade {n}: {x}" for n, (g, e) in enumerate(graded, 1) for x in g.problems(e)]
    assert not problems, "\n".join(problems)


@dataclass
class Case:
    """One attack's repository and everything around it; see the module docstring."""

    root: Path
    python: Path
    marker: str = field(default_factory=lambda: "atk" + uuid.uuid4().hex[:12])
    canary: str = field(default_factory=lambda: "canary-" + uuid.uuid4().hex)

    def __post_init__(self) -> None:
        self.repo = Repo(self.root / "repo")
        self.home = self.root / "home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text("[user]\n\tname = grader\n")
        self.sentinel = self.root / "sentinel"
        self.sentinel.mkdir()
        (self.sentinel / "keep.txt").write_text("the grader's own file\n")
        self.out = self.root / "out"
        self.out.mkdir()

    # -- building the repository ---------------------------------------------------------

    def base(
        self,
        example: str = "bugfix",
        *,
        task: str | None = None,
        files: Mapping[str, str | bytes] | None = None,
    ) -> str:
        """The example's baseline (with ``task`` for its .repogym.yml, and ``files`` on
        top) committed on main; then the branch ``attack`` checked out. Returns the sha."""
        shutil.copytree(EXAMPLES / example / "repo", self.repo.root, dirs_exist_ok=True)
        extra = {k: self.fill(v) for k, v in (files or {}).items()}
        if task is not None:
            extra[".repogym.yml"] = task
        sha = self.repo.commit("base", extra)
        self.repo.branch("attack")
        return sha

    def submit(
        self,
        files: Mapping[str, str | bytes] | None = None,
        *,
        delete: tuple[str, ...] = (),
        commit: bool = True,
    ) -> None:
        """The attack: ``files`` written (``{marker}`` in a str replaced), ``delete``
        removed, committed on ``attack`` unless ``commit`` is false."""
        self.repo.write({k: self.fill(v) for k, v in (files or {}).items()})
        self.repo.delete(*delete)
        if commit:
            self.repo.commit("attack")

    def fill(self, content: str | bytes) -> str | bytes:
        return content.replace("{marker}", self.marker) if isinstance(content, str) else content

    # -- grading ---------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """The grader's environment: a CI job's, with its venv first on PATH, its own
        HOME, a secret, and no override of git's global config."""
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_CONFIG_GLOBAL",)}
        env.update(
            HOME=str(self.home),
            PATH=f"{self.python.parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            REPOGYM_CANARY_SECRET=self.canary,
            REPOGYM_ATTACK_CASE=self.marker,
        )
        env.pop("PYTHONPATH", None)
        return env

    def watched(self) -> dict[str, dict[str, str]]:
        """What must be the same after the grade as before it."""
        head = self.repo.git("rev-parse", "HEAD").strip()
        return {
            "the sentinel directory outside the tree": snapshot(self.sentinel),
            "the grader's HOME": snapshot(self.home),
            "the grader's site-packages": snapshot(site_packages(self.python)),
            "the user's work tree": {
                **snapshot(self.repo.root, skip=(".git",)),
                "HEAD": head,
            },
            "the temporary directory (files named after the marker)": {
                p.name: "" for p in Path(tempfile.gettempdir()).glob(f"*{self.marker}*")
            },
        }

    def grade(
        self,
        *args: str,
        json_path: Path | None = None,
        markdown_path: Path | None = None,
        timeout: float = GRADE_TIMEOUT,
        linger: float = LINGER,
        on_start: object = None,
    ) -> Graded:
        """``repogym grade --base main --json OUT --markdown MD`` in the repository."""
        report = json_path or self.out / "report.json"
        markdown = markdown_path or self.out / "summary.md"
        command = [str(self.python), "-m", "repogym", "grade", "--base", "main"]
        command += ["--json", str(report), "--markdown", str(markdown), *args]
        return self.run(command, report, markdown, timeout, linger, on_start)

    def run(
        self,
        command: list[str],
        report: Path,
        markdown: Path,
        timeout: float = GRADE_TIMEOUT,
        linger: float = LINGER,
        on_start: object = None,
    ) -> Graded:
        """Run ``command`` in the repository with the grader's environment; what it
        wrote to ``report`` and ``markdown``, and everything it left behind."""
        for path in (report, markdown):
            if not path.is_symlink() and path.is_file():
                path.unlink()
        before = self.watched()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            # Files, not pipes: a process that escaped with our pipe could hang us.
            process = subprocess.Popen(
                command, cwd=self.repo.root, env=self.env, stdout=out, stderr=err
            )
            if callable(on_start):
                on_start(process)
            try:
                returncode: int | None = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = None
                process.kill()
                process.wait()
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        leftovers = reap(self.marker, linger=linger)
        after = self.watched()
        return Graded(
            case=self,
            returncode=returncode,
            stdout=stdout,
            stderr=stderr,
            report_text=_read(report).decode(errors="replace") if report.is_file() else "",
            markdown_text=_read(markdown).decode(errors="replace") if markdown.is_file() else "",
            leftovers=leftovers,
            timeout=timeout,
            changes={
                place: [
                    p
                    for p in set(before[place]) | set(after[place])
                    if before[place].get(p) != after[place].get(p)
                ]
                for place in before
            },
        )

    def grade_empty(self) -> Graded:
        """A second grade, of an empty submission (a branch at main), after the attack:
        what a poisoned grader would pass."""
        self.repo.git("checkout", "--quiet", "--force", "-B", "empty", "main")
        self.repo.git("clean", "-q", "-d", "-x", "--force")
        return self.grade()


def git_env() -> dict[str, str]:
    return {**os.environ, **IDENTITY}
