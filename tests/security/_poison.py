"""A module that poisons what imports it, for the attacks on the grader's own imports."""

from __future__ import annotations

from tests.security import _payloads as p

# A module that forges the report and the exit status of every later pytest run of the
# interpreter that imports it.
POISON_MODULE = (
    "import atexit\nimport os\n"
    + p.FORGE_JUNIT
    + "\nif _junit_path():\n    atexit.register(lambda: (_forge_junit(), os._exit(0)))\n"
)
