"""Real git repositories in temporary directories, to build baselines and submissions in
(the ``repo`` fixture of conftest.py makes one per test)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class Repo:
    """A real git repository to build baselines and submissions in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "--quiet", "--initial-branch=main")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env={**os.environ, **IDENTITY},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def write(self, files: dict[str, str | bytes]) -> None:
        for path, content in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)

    def delete(self, *paths: str) -> None:
        for path in paths:
            (self.root / path).unlink()

    def commit(self, message: str = "commit", files: dict[str, str | bytes] | None = None) -> str:
        if files:
            self.write(files)
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def branch(self, name: str) -> None:
        self.git("checkout", "--quiet", "-b", name)
