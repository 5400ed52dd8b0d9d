"""Task files from hypothesis (issue 12, "Bad input"): every valid example task with one
value or key replaced by something wrong (a wrong type, an unknown key, a bad regex or
glob, a negative, huge or non-finite number, deep nesting), and raw bytes (non-UTF-8,
broken YAML). Each is a Task or one error line per problem naming the file: never a
traceback, never another exception."""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repogym._demo import EXAMPLES
from repogym.errors import TaskError
from repogym.task import Task, parse_task

# A few thousand examples in all (CI runs every test); HYPOTHESIS_EXAMPLES changes it.
EXAMPLES_EACH = int(os.environ.get("HYPOTHESIS_EXAMPLES", "1500"))
SOURCE = ".repogym.yml@main"
TASKS = [
    yaml.safe_load((path / "repo" / ".repogym.yml").read_text())
    for path in sorted(EXAMPLES.iterdir())
    if (path / "repo" / ".repogym.yml").is_file()
]

_numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**63, 1e308, -0.0, math.inf, -math.inf, math.nan]),
)
_strings = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["(", "[", "**/../..", "/etc/passwd", "a\nb", "\x00", "*" * 300, "{junit", "\\"]
    ),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, _strings)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``node`` a value sits, as keys and indexes."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


@st.composite
def broken_tasks(draw: st.DrawFn) -> dict[str, Any]:
    """An example task with one place given a drawn value, or an unknown key added."""
    task = copy.deepcopy(draw(st.sampled_from(TASKS)))
    path = draw(st.sampled_from(_paths(task)))
    parent = task
    for step in path[:-1]:
        parent = parent[step]
    if draw(st.booleans()):
        parent[path[-1]] = draw(_values)
    elif isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=12))] = draw(_values)
    return task


def _one_line_errors_or_a_task(raw: bytes) -> None:
    try:
        task = parse_task(raw, SOURCE)
    except TaskError as error:
        assert error.lines, "an error with no line"
        for line in error.lines:
            assert line and "\n" not in line and "Traceback" not in line, line
            assert line.startswith(SOURCE), line
    else:
        assert isinstance(task, Task)


@settings(
    max_examples=EXAMPLES_EACH,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(broken_tasks())
def test_a_task_with_a_wrong_value_is_a_task_or_one_line_errors(task: dict[str, Any]) -> None:
    try:
        raw = yaml.safe_dump(task, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, UnicodeEncodeError):
        return  # PyYAML cannot write it: no file to read
    _one_line_errors_or_a_task(raw)


@settings(max_examples=EXAMPLES_EACH, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=200),
        st.sampled_from(TASKS)
        .map(lambda t: yaml.safe_dump(t).encode())
        .flatmap(
            lambda raw: st.tuples(st.integers(0, len(raw)), st.binary(max_size=8)).map(
                lambda cut: raw[: cut[0]] + cut[1] + raw[cut[0] :]
            )
        ),
        st.integers(1, 200).map(lambda depth: ("a: " + "[" * depth + "]" * depth).encode()),
    )
)
def test_any_bytes_are_a_task_or_one_line_errors(raw: bytes) -> None:
    _one_line_errors_or_a_task(raw)


def test_every_example_task_still_parses(tmp_path: Path) -> None:
    for task in TASKS:
        assert isinstance(parse_task(yaml.safe_dump(task).encode(), SOURCE), Task)
