"""The task and sources the command-line tests grade."""

from __future__ import annotations

TASK = """\
version: 1
type: refactor
constraints:
  allowed_files: [src/**]
  paths: [src/**/*.py]
  max_function_length: 4
"""


LONG = "def f(x):\n    y = x\n    y += 1\n    y += 2\n    return y\n"


SHORT = "def f(x):\n    return x + 3\n"
