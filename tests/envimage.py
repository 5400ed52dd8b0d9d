"""Environment images for the tests of issue 20, built here from the local base that
.ci/base-image makes (this machine cannot pull public images), once per recipe: an image
whose label holds the recipe's digest is reused, by this run and the next."""

from __future__ import annotations

import hashlib
import io
import tarfile

import docker

from tests.docker import base_image, engine_or_skip

PYTHON = "repogym-test-python:python-is-python3"
_RECIPE_LABEL = "repogym.test-recipe"
_PYTHON_RECIPE = """\
FROM {base}
RUN apt-get update -qq \\
 && apt-get install -y -qq --no-install-recommends python3-pytest python-is-python3 >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
"""


def image(tag: str, dockerfile: str) -> str:
    """``tag`` built from ``dockerfile`` (with the host's network, for apt), unless an
    image of that tag was built from the same text; the tag."""
    client = docker.from_env(timeout=1800)
    recipe = hashlib.sha256(dockerfile.encode()).hexdigest()
    try:
        found = client.images.get(tag)
        if (found.labels or {}).get(_RECIPE_LABEL) == recipe:
            return tag
    except docker.errors.ImageNotFound:
        pass
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    context.seek(0)
    client.images.build(
        fileobj=context,
        custom_context=True,
        tag=tag,
        network_mode="host",
        labels={_RECIPE_LABEL: recipe},
        rm=True,
    )
    return tag


def python_image() -> str:
    """An image with python3 and pytest (Debian's), tagged :data:`PYTHON`."""
    engine_or_skip()
    return image(PYTHON, _PYTHON_RECIPE.format(base=base_image()))
