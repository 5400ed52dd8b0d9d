"""``environment:`` of a task file: the container image its commands run in (issue 20).

Declared here, apart from the other sections, because it is the only part of the schema
that speaks of the machine rather than of the grade; :mod:`repogym.run.image` prepares
the image and :mod:`repogym.run.container.runner` runs the commands in it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from repogym.task._values import check_relative

Network = Literal["none", "setup", "all"]
_SIZE = re.compile(r"(?i)([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)i?b?")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIN_MEMORY = 6 << 20  # the engine refuses less than 6 MiB
# An image reference: [registry[:port]/]path[:tag][@sha256:hex], as the engine takes it.
_IMAGE = re.compile(
    r"(?:[a-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


def parse_size(value: Any, what: str) -> int:
    """``4g``, ``512m``, ``1.5GiB`` or a number of bytes, as bytes (powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a size such as `4g` or `512m`, not {value!r}")
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(str(value).strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"{what} {value!r} is not a size: write a number of bytes or one with a unit, "
            "such as `4g` or `512m` (k, m, g, t: powers of 1024)"
        )
    return int(float(match[1]) * _UNITS[match[2].lower()])


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Limits(_Section):
    """``environment.limits``: what each command's container may use."""

    cpus: float = Field(default=2.0, gt=0, le=1024)
    memory: int = Field(default=4 << 30, ge=MIN_MEMORY)  # bytes; swap is not given on top
    pids: int = Field(default=1024, ge=16, le=1 << 22)
    # Room of each writable tree (held in memory by the engine) and of /tmp.
    disk: int = Field(default=4 << 30, ge=1 << 20)

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value

    @field_validator("memory", "disk", mode="before")
    @classmethod
    def _size(cls, value: Any, info: Any) -> Any:
        return parse_size(value, info.field_name)


class EnvironmentConfig(_Section):
    """``environment:``: a Dockerfile of the base commit, or an image by name."""

    dockerfile: str | None = None
    image: str | None = None
    network: Network = "none"
    limits: Limits = Limits()

    @field_validator("dockerfile")
    @classmethod
    def _dockerfile(cls, path: str | None) -> str | None:
        return None if path is None else check_relative(path, "dockerfile")

    @field_validator("image")
    @classmethod
    def _image(cls, name: str | None) -> str | None:
        if name is not None and not _IMAGE.fullmatch(name):
            raise ValueError(
                f"{name!r} is not an image reference: write `name:tag@sha256:<64 hex digits>` "
                "(a tag alone is allowed, with a warning), e.g. `node:20-bookworm@sha256:...`"
            )
        return name

    @model_validator(mode="after")
    def _one_source(self) -> EnvironmentConfig:
        if (self.dockerfile is None) == (self.image is None):
            raise ValueError(
                "name exactly one of `dockerfile` (a Dockerfile of the base commit, built with "
                "the base's tree as context) and `image` (an image to use as it is)"
            )
        return self

    @property
    def pinned(self) -> bool:
        """Whether ``image`` names a digest, so that it cannot change under the task."""
        return self.image is not None and "@sha256:" in self.image
