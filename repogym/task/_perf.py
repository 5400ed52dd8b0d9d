"""``perf:`` of the task file: the benchmark, what is measured, and how many runs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from repogym.task._errors import UNION_TAGS
from repogym.task._values import NoiseFloor, Seconds, Speedup

Timing = Literal["wall", "reported", "cpu", "instructions"]
Measure = Literal["time", "peak_memory"]
AUTO_FIRST = 5  # pairs `runs: auto` makes before it looks at the interval
# What `timing` measures, for messages: "speed-up 1.31× (… cpu time …)".
FIGURE = {
    "wall": "wall time",
    "reported": "reported time",
    "cpu": "CPU time",
    "instructions": "instructions",
}


def _count_or_auto(value: Any) -> str:
    return UNION_TAGS[1] if value == "auto" else UNION_TAGS[0]


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class PerfConfig(BaseModel):
    """``perf:``: a benchmark the submission must make faster (or smaller)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    command: str = Field(min_length=1)
    timing: Timing = "wall"
    measure: Measure = "time"
    runs: Annotated[
        Annotated[int, Field(ge=1, le=1000), Tag(UNION_TAGS[0])]
        | Annotated[Literal["auto"], Tag(UNION_TAGS[1])],
        Discriminator(_count_or_auto),
    ] = 5
    max_runs: int = Field(default=30, ge=AUTO_FIRST, le=1000)
    max_seconds: Seconds = 600
    warmup: int = Field(default=1, ge=0, le=100)
    noise_floor: NoiseFloor = 1.15
    min_speedup: Speedup
    timeout: Seconds = 900

    @field_validator("runs", mode="before")
    @classmethod
    def _runs_word(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "auto" and not _numeric(value):
            raise ValueError("should be a whole number of pairs (1 to 1000) or `auto`")
        return value  # a number written as text (`1e3`) gets the schema's own hint

    @model_validator(mode="after")
    def _consistent(self) -> PerfConfig:
        if not self.min_speedup > self.noise_floor:
            raise ValueError(
                f"`min_speedup` ({self.min_speedup:g}) must be greater than `noise_floor` "
                f"({self.noise_floor:g}): raise min_speedup or lower noise_floor"
            )
        caps = sorted({"max_runs", "max_seconds"} & self.model_fields_set)
        if caps and self.runs != "auto":
            raise ValueError(
                f"`{caps[0]}` caps `runs: auto` only: set `runs: auto`, or remove `{caps[0]}`"
            )
        if self.measure == "peak_memory" and "timing" in self.model_fields_set:
            raise ValueError(
                "`timing` has no meaning with `measure: peak_memory` (the peak is the "
                "kernel's, whatever the timing): remove `timing`"
            )
        return self

    @property
    def auto(self) -> bool:
        return self.runs == "auto"

    @property
    def first_runs(self) -> int:
        """The pairs made before any is added: ``runs``, or ``AUTO_FIRST`` with auto."""
        return AUTO_FIRST if isinstance(self.runs, str) else self.runs

    @property
    def figure(self) -> str:
        """What each run yields: ``CPU time``, ``peak memory``…"""
        return "peak memory" if self.measure == "peak_memory" else FIGURE[self.timing]

    @property
    def wrapped(self) -> str | None:
        """What the tree measurer measures for this config (None: the runner's clock or
        the benchmark's own report)."""
        if self.measure == "peak_memory":
            return "peak_memory"
        return self.timing if self.timing in ("cpu", "instructions") else None
