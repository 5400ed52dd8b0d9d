"""The task file, ``.repogym.yml``: its schema (:mod:`repogym.task.schema`) and loading it
(:mod:`repogym.task.load`)."""

from repogym.task._perf import Measure, PerfConfig, Timing
from repogym.task._runners import runs_pytest, runs_unittest
from repogym.task._tests import FlakyConfig, Quarantined, TestsConfig
from repogym.task.load import TaskFile, TaskSource, load_task, parse_task
from repogym.task.schema import (
    BUILTIN_GRADERS,
    TASK_FILE,
    ConstraintsConfig,
    CustomGrader,
    GradingConfig,
    Task,
    TaskType,
)

__all__ = [
    "BUILTIN_GRADERS",
    "TASK_FILE",
    "ConstraintsConfig",
    "CustomGrader",
    "FlakyConfig",
    "GradingConfig",
    "Measure",
    "PerfConfig",
    "Quarantined",
    "Task",
    "TaskFile",
    "TaskSource",
    "TaskType",
    "TestsConfig",
    "Timing",
    "load_task",
    "parse_task",
    "runs_pytest",
    "runs_unittest",
]
