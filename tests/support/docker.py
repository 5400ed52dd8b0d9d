"""The Action's image for the tests: built from this checkout's Dockerfile on the base
that .ci/base-image makes (Debian bookworm from debootstrap, with the distribution's
python3, since this machine cannot pull public images), once per session.

Without a Docker engine the container tests are skipped, unless ``REPOGYM_REQUIRE_DOCKER``
is 1 (as in .ci/run), where they fail: CI must not pass by skipping them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("REPOGYM_TEST_BASE_IMAGE", "repogym-base:bookworm")
# One tag per checkout: two checkouts tested at once on one engine never run each other's.
IMAGE = "repogym-action:test-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
REQUIRE = "REPOGYM_REQUIRE_DOCKER"
# What a container's tree is, one line per entry: name, kind, mode, owner, size, target, links.
LISTING = "find . -printf '%p %y %m %U %G %s %l %n\\n' | LC_ALL=C sort"


def docker(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )


def engine_or_skip() -> None:
    """Skip (or fail, where Docker is required) without an engine that answers."""
    try:
        answered = docker("info", "--format", "{{.ServerVersion}}", timeout=60)
        why = answered.stderr.strip().splitlines()[-1:] if answered.returncode else []
    except FileNotFoundError:
        why = ["no docker command"]
    if why:
        message = f"no Docker engine ({why[0]}): `bash .ci/docker` installs and starts one"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(message + f" ({REQUIRE}=1)")
        pytest.skip(message)


def base_image() -> str:
    """The base, made by .ci/base-image when it is not there yet."""
    if docker("image", "inspect", BASE).returncode != 0:
        made = subprocess.run(
            ["bash", str(ROOT / ".ci" / "base-image"), BASE],
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
        assert made.returncode == 0, f".ci/base-image failed:\n{made.stdout}{made.stderr}"
    return BASE


def build(tag: str = IMAGE, *, base: str | None = None) -> str:
    """``docker build`` of this checkout as ``tag`` on ``base``; the tag."""
    built = docker(
        "build",
        "--quiet",
        "--network",
        "host",
        "--build-arg",
        f"BASE_IMAGE={base or base_image()}",
        "--tag",
        tag,
        str(ROOT),
        timeout=1800,
    )
    assert built.returncode == 0, f"docker build failed:\n{built.stdout}{built.stderr}"
    return tag
