"""``repogym validate``: is a task sound enough to publish?

Static checks first; then the spec's promise that the empty submission (the baseline
graded against itself) scores exactly 0; then, given a reference solution, that it passes,
as many times as asked, reporting flaky tests and the spread of speed-ups.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import CommandNotFound, RepogymError, UnknownRef, WorkspaceError
from repogym.graders import CompositeGrader
from repogym.graders.tests import reruns as _reruns
from repogym.grading import grade
from repogym.junit.testids import escape_controls, file_of
from repogym.models import GradeResult, Role, format_score
from repogym.shown import counted
from repogym.task import Task, TaskSource, load_task
from repogym.tree import git as _git
from repogym.tree.clones import clone_at
from repogym.tree.globs import compile_globs, matching
from repogym.validate_perf import check_modes
from repogym.workspace import files_under


@dataclass
class Validation:
    """Every finding, in the order checked; valid when none is a problem."""

    findings: list[tuple[bool, str]] = field(default_factory=list)

    def ok(self, text: str) -> None:
        self.findings.append((True, text))

    def problem(self, text: str) -> None:
        self.findings.append((False, text))

    @property
    def valid(self) -> bool:
        return all(ok for ok, _ in self.findings)


def validate(
    repo: Path,
    *,
    base: str,
    task: TaskSource = None,
    solution: str | None = None,
    repeat: int = 1,
    hidden: str | os.PathLike[str] | None = None,
    solution_named: str | None = None,
) -> Validation:
    """Check ``task`` (by default ``.repogym.yml`` at ``base``) against the commit ``base``
    of ``repo``, and a reference solution; ``hidden`` as for :func:`repogym.grade`.
    ``solution_named`` is how messages name the solution (default ``--solution
    SOLUTION``; a tasks file's line names its key)."""
    result = Validation()
    sha = _git.resolve_commit(repo, base)
    loaded = load_task(task, repo=repo, commit=sha, ref=base)
    _static_checks(result, repo, sha, loaded, None if hidden is None else Path(hidden))
    if not result.valid:
        return result  # grading a task that fails its static checks proves nothing
    with tempfile.TemporaryDirectory(prefix="repogym-validate-") as scratch:
        empty = clone_at(repo, sha, Path(scratch) / "empty")
        try:
            graded = grade(empty, base=sha, task=loaded, hidden=hidden).result
        except CommandNotFound as error:  # the task's command cannot start at the base
            for line in error.lines:
                result.problem(line)
            return result
        _check_empty(result, graded)
        _check_quality(result, loaded, graded)
        _check_base(result, loaded, graded)
        if solution is not None:
            named = solution_named or f"--solution {solution}"
            tree = _solution_tree(repo, sha, solution, Path(scratch) / "solution", named)
            threshold = loaded.grading.pass_threshold
            speedups = _check_solution(
                result,
                lambda: grade(tree, base=sha, task=loaded, hidden=hidden).result,
                threshold,
                repeat,
            )
            check_modes(result.ok, tree, sha, loaded, repeat, speedups)
    return result


def _static_checks(
    result: Validation, repo: Path, sha: str, task: Task, hidden: Path | None
) -> None:
    roles = task.builtin_roles()
    objectives = [name for name, role in roles.items() if role is Role.OBJECTIVE]
    objectives += [g.grader for g in task.grading.graders if g.role is Role.OBJECTIVE]
    result.ok(f"objectives: {', '.join(objectives)}")
    holder = Path(tempfile.mkdtemp(prefix="repogym-validate-base-"))
    try:
        baseline = clone_at(repo, sha, holder / "tree")
        try:
            CompositeGrader.from_task(task, baseline=baseline)
            result.ok("grading.weights and grading.graders name graders that load")
        except RepogymError as error:
            for line in error.lines:
                result.problem(line)
        _check_test_files(result, baseline, task, hidden)
        _check_id_characters(result, task)
        for line in task.tests.expired() if task.tests else ():
            result.problem(line)
        _check_settings(result, baseline, task)
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _check_test_files(
    result: Validation, baseline: Path, task: Task, hidden_dir: Path | None
) -> None:
    if task.tests is None:
        return
    hidden: set[str] = set()
    if hidden_dir is not None:
        hidden = set(files_under(hidden_dir))
    elif task.tests.hidden:
        root = baseline / task.tests.hidden
        if not root.is_dir():
            result.problem(f"tests.hidden: {task.tests.hidden} is not a directory at the base")
        else:
            hidden = set(files_under(root))
    # Only ids that name a file (testids.file_of): a Go package, a Java class, a describe
    # block or a test's name is not looked for.
    missing = [
        path
        for path in task.tests.test_files()
        if not (baseline / path).is_file() and path not in hidden
    ]
    for path in missing:
        result.problem(
            f"tests: {path} is named by a test id but exists neither at the base nor among "
            "the hidden tests; fix the id or commit the file"
        )
    count = len(task.tests.test_files())
    if not missing and count:  # no line where no id names a file (issue 45: "0 ... present")
        result.ok(f"tests: {counted(count, 'test file')} named by ids, all present")


def _check_id_characters(result: Validation, task: Task) -> None:
    """A control character in an id is almost always YAML's doing: inside double quotes
    `\\t` becomes a TAB, while the runner's id has a backslash there (pytest writes a
    TAB parameter as `\\t`). Messages show it escaped, so it looks right and never
    matches."""
    if task.tests is None:
        return
    lists = {"fail_to_pass": task.tests.target_ids, "pass_to_pass": task.tests.regression_ids}
    for key, ids in lists.items():
        for index, test_id in enumerate(ids):
            written = escape_controls(test_id)
            if written == test_id:
                continue
            quoted = "'" + written.replace("'", "''") + "'"
            result.problem(
                f"tests.{key}.{index}: the id {written} holds a control character, which "
                "YAML makes of an escape such as `\\t` inside double quotes; if the test's "
                f"name has a backslash there, write the id in single quotes: {quoted}"
            )


def _check_settings(result: Validation, baseline: Path, task: Task) -> None:
    c = task.constraints
    if task.type == "refactor" and not c.has_quality_limits():
        result.problem(
            "type: refactor without max_function_length or max_cyclomatic_complexity: a "
            "refactor's objective is the quality limits; declare one"
        )
    if task.type == "perf" and task.perf is None:
        result.problem("type: perf without a `perf` section: declare the benchmark to time")
    if c.has_quality_limits():
        files = [p.relative_to(baseline).as_posix() for p in baseline.rglob("*.py")]
        files = [f for f in files if not f.startswith(".git/")]
        if c.paths is not None:
            files = matching(compile_globs(c.paths), files)
        if not files:
            where = f"constraints.paths ({', '.join(c.paths)})" if c.paths else "the base"
            result.problem(f"quality: no Python file at {where}: the limits measure nothing")


def _check_quality(result: Validation, task: Task, graded: GradeResult) -> None:
    """What the quality grader measured of the base (the empty submission's grade): every
    function within the limits, or the violations, which a refactor must remove and which
    would fail every other task's gate (issue 45: the line counted files, not functions)."""
    component = next((c for c in graded.components if c.name == "quality"), None)
    if component is None or not component.details.get("files"):
        return
    files = counted(component.details["files"], "Python file")
    if component.passed:
        result.ok(f"quality: {files} at the base, every function within the limits")
        return
    found = len(component.details["violations"])
    found += component.details.get("violations_not_listed", 0)
    first = component.messages[0]
    more = f" (and {found - 1} more)" if found > 1 else ""
    if task.type == "refactor":
        result.ok(
            f"quality: the base breaks the limits {counted(found, 'time')}, which the "
            f"refactor must mend: {first}{more}"
        )
        return
    result.problem(
        f"quality: the base already breaks the limits: {first}{more}; every submission "
        "fails the quality gate until that is mended: mend it at the base, raise the limit "
        "or narrow constraints.paths"
    )


def _check_empty(result: Validation, graded: GradeResult) -> None:
    if graded.score == 0:
        result.ok(f"the empty submission scores 0 ({graded.summary()})")
        return
    credit = [
        f"{c.name} gave {format_score(c.score)}"
        for c in graded.components
        if c.role is Role.OBJECTIVE and c.score > 0
    ]
    result.problem(
        f"the empty submission scores {format_score(graded.score, 3)}, not 0: "
        f"{', '.join(credit)}; "
        "a target test must fail (or the limits be violated) at the base"
    )


def _check_base(result: Validation, task: Task, graded: GradeResult) -> None:
    """What the tests did at the base (the empty submission's run, issue 22): the command
    started and wrote its report; every `pass_to_pass` id is there and passes; every
    `fail_to_pass` id is there (or its file failed to load) and does not pass, but for
    hidden tests; `baseline` found a test that passes."""
    if task.tests is None:
        return
    details = next(c.details for c in graded.components if c.name == "tests")
    problem = details.get("problem") or details.get("error")
    if problem:
        result.problem(f"tests: at the base, {problem}")
        return
    found = len(result.findings)
    for test_id in task.tests.regression_ids:
        outcome = details.get("pass_to_pass", {}).get(test_id)
        if outcome != "passed":
            result.problem(
                f"tests.pass_to_pass: {escape_controls(test_id)} {_AT_BASE[outcome]}, where "
                "it must pass; fix the id, or the test at the base"
            )
    _check_targets(result, task.tests.target_ids, details)
    counts = details.get("baseline", {}).get("counts", {})
    if task.tests.baseline and not counts.get("regression_tests"):
        result.problem(
            "tests.pass_to_pass: baseline, but no test passes at the base "
            f"({counted(details.get('reports_tests', 0), 'test')} in its report): there is "
            "nothing to keep passing"
        )
    if len(result.findings) == found:
        result.ok(f"tests: at the base {_base_summary(task, details)}")


def _check_targets(result: Validation, ids: tuple[str, ...], details: Mapping[str, Any]) -> None:
    """Every `fail_to_pass` id, but for hidden tests, is at the base (or its file failed
    to load there) and does not pass."""
    hidden, unloaded = set(details.get("hidden", ())), set(details.get("files_not_loaded", ()))
    for test_id in ids:
        outcome = details.get("fail_to_pass", {}).get(test_id)
        shown = escape_controls(test_id)
        if test_id in hidden:
            continue
        if outcome == "passed":
            result.problem(
                f"tests.fail_to_pass: {shown} passes at the base, so it cannot show what "
                "the change does; list a test that fails without it"
            )
        elif outcome == "missing" and file_of(test_id) not in unloaded:
            result.problem(
                f"tests.fail_to_pass: {shown} does not exist at the base (not in its "
                "report, nor is its file one that failed to load); fix the id"
            )


_AT_BASE = {
    "failed": "fails at the base",
    "error": "errors at the base",
    "skipped": "is skipped at the base",
    "missing": "does not exist at the base (not in its report)",
    None: "does not exist at the base (not in its report)",
}


def _base_summary(task: Task, details: Mapping[str, Any]) -> str:
    """What the base's run showed, for the line that says it is sound."""
    assert task.tests is not None
    parts = [f"the report has {counted(details.get('reports_tests', 0), 'test')}"]
    if task.tests.regression_ids:
        parts.append(f"every pass_to_pass id passes ({len(task.tests.regression_ids)})")
    if task.tests.target_ids:
        parts.append(f"no fail_to_pass id passes ({len(task.tests.target_ids)})")
    if task.tests.baseline:
        count = details.get("baseline", {}).get("counts", {}).get("regression_tests", 0)
        parts.append(f"{counted(count, 'test')} to keep passing (baseline)")
    return ", ".join(parts)


def _solution_tree(repo: Path, sha: str, solution: str, dest: Path, named: str) -> Path:
    tree = clone_at(repo, sha, dest)
    patch = Path(solution)
    if patch.is_file():
        try:
            _git.git(["apply", "--whitespace=nowarn", str(patch.resolve())], tree)
        except WorkspaceError as error:
            raise WorkspaceError(
                f"{named}: the patch does not apply at the base ({error})"
            ) from None
        return tree
    if patch.exists():  # a directory, a FIFO: neither a patch nor a ref
        raise WorkspaceError(f"{named}: not a regular file; pass a patch file or a commit")
    try:
        target = _git.resolve_commit(repo, solution)
    except UnknownRef:
        looks_like_file = "/" in solution or solution.endswith((".patch", ".diff"))
        hint = "no such patch file, and no commit" if looks_like_file else "no commit"
        raise WorkspaceError(
            f"{named}: {hint} of that name; pass an existing patch file or a branch, tag or sha"
        ) from None
    _git.git(["checkout", "--quiet", "--detach", target], tree)
    return tree


def _check_solution(
    result: Validation, grade_once: Callable[[], GradeResult], threshold: float, repeat: int
) -> list[float]:
    """Grade the solution ``repeat`` times; the speed-ups of its grades."""
    outcomes: dict[str, set[str]] = defaultdict(set)
    speedups: list[float] = []
    for attempt in range(1, repeat + 1):
        graded = grade_once()
        _record(graded, outcomes, speedups)
        label = "the reference solution" + (f" (run {attempt} of {repeat})" if repeat > 1 else "")
        _check_attempt(result, graded, label, threshold)
    _check_runs(result, outcomes, speedups, repeat)
    return speedups


def _check_attempt(result: Validation, graded: GradeResult, label: str, threshold: float) -> None:
    if graded.passed and graded.score >= threshold:
        result.ok(f"{label} passes: {graded.summary()}")
        return
    failing = [c.name for c in graded.components if not c.passed]
    # Every message, each on a line of its own: a task author fixing ids needs each
    # missing one and its hint, not the first three.
    reasons = "".join(
        "\n" + textwrap.indent(f"{c.name}: {m}", "  ")
        for c in graded.components
        if not c.passed
        for m in c.messages
    )
    result.problem(
        f"{label} does not pass: {graded.summary()}; "
        f"failing: {', '.join(failing) or 'the pass threshold'}{reasons}"
    )


def _check_runs(
    result: Validation, outcomes: dict[str, set[str]], speedups: list[float], repeat: int
) -> None:
    """What the runs of the solution showed together: the tests whose outcome changed,
    and the range of the speed-ups."""
    flaky = sorted(test_id for test_id, seen in outcomes.items() if len(seen) > 1)
    for test_id in flaky:
        result.problem(
            f"flaky: {escape_controls(test_id)} had outcomes {', '.join(sorted(outcomes[test_id]))}"
        )
    if repeat > 1 and not flaky:
        result.ok(f"no test outcome changed over {counted(repeat, 'run')}")
    if speedups and repeat == 1:  # more runs: each timing's spread (validate_perf)
        low, high = min(speedups), max(speedups)
        result.ok(f"speed-up over {counted(len(speedups), 'run')}: min {low:.2f}x, max {high:.2f}x")


def _record(graded: GradeResult, outcomes: dict[str, set[str]], speedups: list[float]) -> None:
    """Each test's outcomes, both where its reruns saw both, and the speed-up."""
    for component in graded.components:
        if component.name == "tests":
            for kind in ("fail_to_pass", "pass_to_pass"):
                for test_id, outcome in component.details.get(kind, {}).items():
                    outcomes[test_id].add(outcome)
            for test_id, rerun in component.details.get("reruns", {}).get("tests", {}).items():
                if rerun["class"] in _reruns.SEEN_BOTH:
                    outcomes[test_id] |= {"failed", "passed"}
        if component.name == "perf" and "speedup" in component.details:
            speedups.append(float(component.details["speedup"]))
