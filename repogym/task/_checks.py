"""The rules of a task that span its sections, checked once the schema has read it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from repogym.models import Role
from repogym.task.schema import BUILTIN_GRADERS, Task

# A command that starts a Python test runner with the environment cleared (`env -i`) or
# ignored (`python -E`, `-I`, `-S`): the grader starts pytest and unittest through
# variables (issue 44), which such a command drops, and pytest then started with no check
# of what it read (issue 44's red team: PASS for a start-up module of the submission's).
_PYTHON_RUNNER = re.compile(r"(?<![\w.-])(?:py\.?test|-m\s*(?:unittest|xmlrunner))(?![\w.-])")
_CLEARED = re.compile(
    r"(?<![\w.-])env\s+(?:-\w*i\w*|--ignore-environment|-)(?=\s)"
    r"|(?<![\w.-])python[\d.]*\s+(?:-\w+\s+)*-[A-Za-z]*[EIS][A-Za-z]*(?=\s)"
)


def cross_checks(task: Task) -> Iterator[tuple[tuple[str, ...], str]]:
    """Rules that span sections, as (key path, message) pairs."""
    command = task.tests.command if task.tests is not None else ""
    if _PYTHON_RUNNER.search(command) and _CLEARED.search(command):
        yield (
            ("tests", "command"),
            (
                "starts the test runner with the environment cleared or ignored (`env -i`, "
                "`python -E`, `-I` or `-S`), which drops what the grader starts it with; "
                "set what the tests need with `env:` instead"
            ),
        )
    roles = task.builtin_roles()
    custom = task.grading.graders
    if Role.OBJECTIVE not in roles.values() and all(g.role is Role.GATE for g in custom):
        yield (
            (),
            (
                "the task has no objective, so no submission could earn credit: declare "
                "`tests.fail_to_pass` (ids, or `added`), a `perf` section, quality limits on a "
                "`type: refactor` task, or an objective in `grading.graders`"
            ),
        )
    for name in task.grading.weights:
        key = ("grading", "weights", name)
        if roles.get(name) is Role.GATE:
            yield key, f"{name} is a gate in this task and carries no weight; remove the entry"
        elif name in BUILTIN_GRADERS and name not in roles:
            yield (
                key,
                f"this task does not run the {name} grader; remove the entry or add its section",
            )
        elif name not in BUILTIN_GRADERS and not custom:
            guess = difflib.get_close_matches(name, list(roles), n=1)
            hint = f"did you mean `{guess[0]}`?" if guess else "fix the name"
            yield key, f"no grader is called {name!r} (graders: {', '.join(roles)}); {hint}"
