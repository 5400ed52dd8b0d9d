"""The package as a user installs it: a wheel built from this tree, in a fresh venv.

An editable install reads the source tree, so it cannot show what the wheel leaves out
(templates, examples, type stubs). ``tests/conftest.py`` builds one :class:`InstalledWheel`
per test session (the ``installed_wheel`` fixture) for every test that needs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class InstalledWheel:
    """A wheel of this tree (``wheel``, the names it holds in ``names``) installed with
    its dependencies in the venv at ``venv``."""

    wheel: Path
    names: tuple[str, ...]
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``args`` run with the venv's bin/ first on PATH (``repogym``, ``python``),
        from ``cwd``: pick a directory outside the source tree, so that nothing is
        imported from it."""
        env = {"PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "HOME": str(cwd)}
        # As the test itself runs: the venv is under pytest's 0700 temporary directory,
        # out of the sandbox user's reach (tests/conftest.py).
        if "REPOGYM_SANDBOX" in os.environ:
            env["REPOGYM_SANDBOX"] = os.environ["REPOGYM_SANDBOX"]
        return subprocess.run(
            list(args), cwd=cwd, env=env, capture_output=True, text=True, check=False
        )


def source_copy(dest: Path) -> Path:
    """The files of this tree that git tracks or would track (not the ignored ones:
    build/, .venv/, caches), copied to ``dest``: the wheel is built from what a commit
    holds, and the build's own files stay out of the work tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a file deleted but not yet staged is still listed
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel --no-deps`` of ``source``: the wheel file in ``out``."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        check=True,
    )
    (wheel,) = out.glob("repogym-*.whl")
    return wheel


def install_wheel(wheel: Path, venv_dir: Path) -> InstalledWheel:
    """A fresh venv at ``venv_dir`` with ``wheel`` and its dependencies installed."""
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    subprocess.run(
        [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        check=True,
    )
    with zipfile.ZipFile(wheel) as archive:
        names = tuple(archive.namelist())
    return InstalledWheel(wheel=wheel, names=names, venv=venv_dir)
