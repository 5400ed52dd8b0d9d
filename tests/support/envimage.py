"""The image the environment tests grade in (issue 20): :data:`PYTHON`, the local bookworm
base (tests/support/docker.py) with Debian's pytest, since this machine cannot pull public images.

Built through the engine's SDK, once per engine at most: the image carries the key of
its recipe (the base's id and the Dockerfile) in the label :data:`RECIPE` and in a tag of
its own, and an image that already has the same key is used as it is, whoever built it
(tests/action and tests/container both call :func:`python_image`; two sessions on one
engine share it).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from typing import Any

import docker
import docker.errors

from tests.support.docker import base_image, engine_or_skip

PYTHON = "repogym-test-python:env"
RECIPE = "repogym.test-image.recipe"
TAIL = 20  # lines of a failed build's log its error shows

_DOCKERFILE = """\
FROM {base}
RUN apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        python3-pytest python-is-python3 valgrind >/dev/null \\
    && rm -rf /var/lib/apt/lists/*
"""


def python_image(client: docker.DockerClient | None = None) -> str:
    """An image of :data:`PYTHON`'s recipe (python, pytest and git, nothing of
    repogym's), built now unless the engine has one: its tag names the recipe's key,
    ``repogym-test-python:env-<key>``, which no other recipe's build can move (another
    session may build :data:`PYTHON` from a recipe of its own while this one grades)."""
    engine_or_skip()
    client = client or docker.from_env()
    base = base_image()
    dockerfile = _DOCKERFILE.format(base=base)
    key = hashlib.sha256(f"{client.images.get(base).id}\0{dockerfile}".encode()).hexdigest()
    keyed = f"{PYTHON}-{key[:12]}"
    for tag in (keyed, PYTHON):
        try:
            found = client.images.get(tag)
        except docker.errors.ImageNotFound:
            continue
        if found.labels.get(RECIPE) == key:
            found.tag(keyed)
            return keyed
    try:
        image, _ = client.images.build(
            fileobj=_context(dockerfile),
            custom_context=True,
            tag=PYTHON,
            labels={RECIPE: key},
            network_mode="host",  # apt-get reaches the distribution's mirror
            rm=True,
            forcerm=True,
        )
    except docker.errors.BuildError as error:
        tail = _tail(error.build_log)
        raise AssertionError(f"building {PYTHON} failed: {error.msg}\n{tail}") from None
    image.tag(keyed)
    return keyed


def _context(dockerfile: str) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _tail(log: Any) -> str:
    text = "".join(str(e.get("stream") or e.get("error") or "") for e in log if isinstance(e, dict))
    return "\n".join(text.rstrip("\n").splitlines()[-TAIL:])
