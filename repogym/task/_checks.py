"""The rules of a task that span its sections, checked once the schema has read it."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from repogym.models import Role
from repogym.task.schema import BUILTIN_GRADERS, Task


def cross_checks(task: Task) -> Iterator[tuple[tuple[str, ...], str]]:
    """Rules that span sections, as (key path, message) pairs."""
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
