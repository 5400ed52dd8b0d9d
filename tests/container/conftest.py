"""Fixtures the ContainerRunner's tests share: the engine's client and test images built on
the local base (each once per module)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from repogym.run.container.engine import connect
from tests.support.docker import base_image, engine_or_skip

NO_TAR = "repogym-test-no-tar:1"


@pytest.fixture(scope="module")
def client() -> Any:
    engine_or_skip()
    base_image()
    return connect()


@pytest.fixture(scope="module")
def no_tar(client: Any) -> str:
    """The base without tar (nor a way to get it)."""
    dockerfile = f"FROM {base_image()}\nRUN rm -f /usr/bin/tar /bin/tar\n"
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=NO_TAR, rm=True)
    return str(image.id)
