"""The image installs its Python packages from requirements/image.lock only (issue 19).

The lock pins every package by version with its hashes, and must cover what
pyproject.toml asks for (the dependencies and the ``action`` extra) and what
requirements/image.in adds, at versions that satisfy them, on every Python the package
supports; the Dockerfile installs it with ``--require-hashes`` and nothing else. The
command that makes it again is the one its header records and the README gives.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "image.lock"
COMMAND = (
    "uv pip compile pyproject.toml requirements/image.in --extra action --universal "
    "--python-version 3.10 --generate-hashes --output-file requirements/image.lock"
)
PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+)(?:\s*;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")


def pins() -> list[tuple[str, Version, Marker | None, list[str]]]:
    """(name, version, marker, hashes) of each requirement of the lock."""
    found: list[tuple[str, Version, Marker | None, list[str]]] = []
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if match := PIN.match(line):
            marker = Marker(match["marker"]) if match["marker"] else None
            found.append((canonicalize_name(match["name"]), Version(match["version"]), marker, []))
        elif hashed := re.match(r"^\s+--hash=(sha256:[0-9a-f]{64})", line):
            found[-1][3].append(hashed[1])
    return found


def asked() -> list[Requirement]:
    """What pyproject.toml and requirements/image.in ask the image for."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [*project["dependencies"], *_extra(project, "action")]
    extra = (ROOT / "requirements" / "image.in").read_text(encoding="utf-8").splitlines()
    lines += [line for line in extra if line.strip() and not line.startswith("#")]
    return [Requirement(line) for line in lines]


def _extra(project: dict[str, Any], name: str) -> list[str]:
    """The requirements of the extra ``name``, with those of the package's own extras it
    names (``repogym[docker]`` in ``action``) in their place."""
    found = []
    for line in project["optional-dependencies"][name]:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == canonicalize_name(project["name"]):
            for each in sorted(requirement.extras):
                found += _extra(project, each)
        else:
            found.append(line)
    return found


def environment(python: str) -> dict[str, str]:
    """The image's platform: Linux, CPython (amd64 and arm64 alike for these markers)."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_machine": "x86_64",
    }


@pytest.mark.parametrize("python", PYTHONS)
def test_the_lock_covers_every_dependency_at_a_version_that_satisfies_it(python: str) -> None:
    env = environment(python)
    locked = {
        name: version
        for name, version, marker, _ in pins()
        if marker is None or marker.evaluate(env)
    }
    problems = []
    for requirement in asked():
        if requirement.marker is not None and not requirement.marker.evaluate(env):
            continue
        name = canonicalize_name(requirement.name)
        if name not in locked:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(locked[name], prereleases=True):
            problems.append(f"{requirement}: the lock has {locked[name]}")
    assert problems == [], f"{problems}: run `{COMMAND}`"


def test_every_pin_has_its_hashes_and_one_version_per_platform() -> None:
    found = pins()
    assert found and all(hashes for _, _, _, hashes in found)
    for python in PYTHONS:
        names = [n for n, _, m, _ in found if m is None or m.evaluate(environment(python))]
        assert len(names) == len(set(names)), python


def test_the_lock_says_how_it_is_made_and_the_readme_and_dockerfile_agree() -> None:
    assert f"#    {COMMAND}\n" in LOCK.read_text(encoding="utf-8")
    assert COMMAND in (ROOT / "README.md").read_text(encoding="utf-8")
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    installs = re.findall(r"pip install [^\n&]*", dockerfile)
    # The lock by hash, then repogym itself with nothing fetched: no other install.
    assert len(installs) == 2, installs
    assert "--require-hashes" in installs[0] and "-r /src/requirements/image.lock" in installs[0]
    assert {"--no-deps", "--no-index", "/src"} <= set(installs[1].split())


def test_a_requirement_the_lock_misses_is_found() -> None:
    """The check would catch a dependency added to pyproject.toml and not locked."""
    requirement = Requirement("PyGithub>=99")
    env = environment("3.12")
    locked = {n: v for n, v, m, _ in pins() if m is None or m.evaluate(env)}
    assert not requirement.specifier.contains(locked["pygithub"])


def test_the_extras_the_action_extra_names_are_asked_for() -> None:
    """``action`` pulls ``repogym[docker]``: the engine's SDK is in the image (issue 20)."""
    assert "docker" in {canonicalize_name(r.name) for r in asked()}
