"""What of a report may be shown where others read it, when hidden tests ran (issue 19).

Hidden tests are copied into each test run's copy of the submission, so the submission's
code can read them there, and anything it makes the run print or raise can carry them: a
public test failing with an exception whose message is a hidden test's source put that
source in the first line of the test's message, which the comment showed. So when hidden
tests ran, :func:`redacted` keeps no text the run produced: the tests' messages are made
again from their outcomes (how many passed, the public ids that did not, how many hidden
ones did not), their findings keep their place and the public id only, and the messages
and findings of every other component that runs the submission's code (``perf``, custom
graders) are counted, not shown. ``constraints`` and ``quality`` run nothing of the
submission's (they read its diff and its files) and are shown as they are.

Rendering applies it (:func:`repogym.report.render.render`), and the Action to everything it
publishes: the comment, the check run and its annotations, the job summary and the report
file (which the fork workflow uploads as an artifact). A report in which no hidden test
ran is returned as it is. The input is not trusted to have the right shape: what is not
of it is left for the renderer's checks to name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from repogym.models import (
    ALL_PASSED,
    BUILTINS,
    EXIT_WARNING,
    MAX_NAMED,
    OUTPUT_NOT_SHOWN,
    PERF,
    SOME_FAILED,
    TEST_WHAT,
    TESTS,
)
from repogym.shown import counted, shown_path

__all__ = [
    "BUILT_IN",
    "MAX_NAMED",
    "NON_ZERO",
    "NOT_SHOWN",
    "OUTPUT_NOT_SHOWN",
    "PASSED",
    "RUN_NOTHING",
    "hidden_ran",
    "redacted",
]

NOT_SHOWN = "not shown: hidden tests ran"
PASSED = "passed"
# The components whose text comes from the diff and the files, not from running them.
RUN_NOTHING = frozenset(builtin.name for builtin in BUILTINS if not builtin.runs_code)
_WHAT = TEST_WHAT
_KINDS = ("fail_to_pass", "pass_to_pass")
NON_ZERO = "non-zero"  # an exit code as it is shown when hidden tests ran
# The graders of repogym itself, whose details it writes; a custom grader's are its own.
BUILT_IN = frozenset(builtin.name for builtin in BUILTINS)
_WARNING_CODE = re.compile(r"exited with code (?!0\b)-?\d+")
# The tests grader's own warnings: a fixed sentence and an exit code.
_WARNING = re.compile(
    re.escape(EXIT_WARNING)
    .replace(re.escape("{code}"), r"-?\d+")
    .replace(re.escape("{why}"), f"({re.escape(ALL_PASSED)}|{re.escape(SOME_FAILED)})")
)


def hidden_ran(report: Mapping[str, Any]) -> bool:
    """Whether hidden tests ran in the grade ``report`` is of: the task had them
    (``task.hidden_tests``), or a component's ``details.hidden`` names some."""
    task = report.get("task")
    if isinstance(task, Mapping) and task.get("hidden_tests"):
        return True
    return any(bool(_details(c).get("hidden")) for c in _components(report))


def redacted(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """``report`` as it may be shown: itself when no hidden test ran, else a copy without
    any text the run produced (see the module's docstring)."""
    if not hidden_ran(report) or not isinstance(report.get("components"), list):
        return report
    components = [_component(c) if isinstance(c, Mapping) else c for c in report["components"]]
    return {**report, "components": components}


def _components(report: Mapping[str, Any]) -> list[Any]:
    components = report.get("components")
    return components if isinstance(components, list) else []


def _details(component: object) -> Mapping[str, Any]:
    if not isinstance(component, Mapping):
        return {}
    details = component.get("details")
    return details if isinstance(details, Mapping) else {}


def _component(component: Mapping[str, Any]) -> dict[str, Any]:
    name = component.get("name")
    shown = dict(component)
    if name in RUN_NOTHING:
        return shown
    details = dict(_details(component))
    command = details.get("command")
    if isinstance(command, Mapping):
        details["command"] = _command_shown(command)
    if name not in BUILT_IN:  # a custom grader's details are its own text: counted only
        details = dict.fromkeys(details, NOT_SHOWN)
    shown["details"] = details
    messages = component.get("messages")
    findings = component.get("findings")
    if name == TESTS:
        shown["messages"] = _test_messages(component, details)
        if isinstance(findings, list):
            shown["findings"] = [_test_finding(f, details) for f in findings]
        return shown
    if isinstance(messages, list) and messages:
        said = f"{counted(len(messages), 'message')} {NOT_SHOWN}"
        shown["messages"] = [*_numbers(name, details), said]
    if isinstance(findings, list):
        shown["findings"] = [_finding_not_shown(f) for f in findings]
    return shown


def _command_shown(command: Mapping[str, Any]) -> dict[str, Any]:
    """A command's run without the numbers the submission can choose (found in review of
    issue 19: code that reads the hidden tests can spell them out in its exit code, in
    how many bytes of output were cut, or in how long it took): whether it exited
    non-zero or timed out, nothing more."""
    shown = {k: v for k, v in command.items() if k not in ("duration", "output_cut_bytes")}
    if "output_tail" in shown:
        shown["output_tail"] = OUTPUT_NOT_SHOWN
    code = shown.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        shown["exit_code"] = NON_ZERO
    return shown


def _outcomes(details: Mapping[str, Any], kind: str) -> dict[str, str]:
    outcomes = details.get(kind)
    if not isinstance(outcomes, Mapping):
        return {}
    return {str(i): str(o) for i, o in outcomes.items()}


def _hidden(details: Mapping[str, Any]) -> set[str]:
    hidden = details.get("hidden")
    return {str(i) for i in hidden} if isinstance(hidden, list) else set()


def _test_messages(component: Mapping[str, Any], details: Mapping[str, Any]) -> list[str]:
    """The tests' messages made again from their outcomes: counts and public ids."""

    messages = component.get("messages")
    old = [m for m in messages if isinstance(m, str)] if isinstance(messages, list) else []
    if old and old[0].startswith("score 0: "):
        return [f"score 0: no test could be counted{_command(details)}; the reason is {NOT_SHOWN}"]
    hidden = _hidden(details)
    lines = [line for kind in _KINDS for line in _kind_lines(kind, details, hidden)]
    warned = [m for m in old if _WARNING.fullmatch(m)]
    return lines + [_WARNING_CODE.sub(f"exited with a {NON_ZERO} code", m) for m in warned]


def _kind_lines(kind: str, details: Mapping[str, Any], hidden: set[str]) -> list[str]:
    """The count of one kind of target, then the public ids that did not pass, at most
    ``MAX_NAMED`` of them, and how many hidden ones did not."""
    outcomes = _outcomes(details, kind)
    if not outcomes:
        return []
    bad = [i for i, o in outcomes.items() if o != PASSED]
    if kind == "fail_to_pass":
        lines = [f"{kind}: {len(outcomes) - len(bad)} of {len(outcomes)} passed"]
    else:
        lines = [f"{kind}: {len(bad)} of {len(outcomes)} broken"]
    public = [i for i in bad if i not in hidden]
    lines += [f"{kind} {outcomes[i]}: {shown_path(i)}" for i in public[:MAX_NAMED]]
    if len(public) > MAX_NAMED:
        lines.append(f"{kind}: {len(public) - MAX_NAMED} more not listed")
    if len(bad) > len(public):
        lines.append(f"{kind}: {counted(len(bad) - len(public), 'hidden test')} not passing")
    return lines


def _command(details: Mapping[str, Any]) -> str:
    command = details.get("command")
    if not isinstance(command, Mapping):
        return ""
    if command.get("timed_out") is True:
        return " (the command timed out)"
    code = command.get("exit_code")  # as _command_shown left it: 0 or NON_ZERO
    if code == NON_ZERO or (isinstance(code, int) and not isinstance(code, bool)):
        return f" (the command exited with {'code 0' if code == 0 else f'a {NON_ZERO} code'})"
    return ""


def _test_finding(finding: object, details: Mapping[str, Any]) -> object:
    """A finding of the tests grader: its place and the public id it is about, or, for
    the count of hidden tests, as it is (repogym writes it from numbers)."""

    if not isinstance(finding, Mapping):
        return finding
    title = finding.get("title")
    message = finding.get("message")
    if title == "hidden" and finding.get("path") is None:
        return dict(finding)
    if title in _KINDS and isinstance(message, str):
        hidden = _hidden(details)
        for test_id, outcome in _outcomes(details, str(title)).items():
            if test_id in hidden or outcome not in _WHAT:
                continue
            said = f"{shown_path(test_id)} {_WHAT[outcome]}"
            if message == said or message.startswith(said + ": "):
                return {**finding, "message": said}
    return _finding_not_shown(finding)


def _finding_not_shown(finding: object) -> object:
    if not isinstance(finding, Mapping):
        return finding
    return {**finding, "message": NOT_SHOWN}


def _numbers(name: object, details: Mapping[str, Any]) -> list[str]:
    """What of a component's messages is numbers only: perf's speed-up, and the interval
    of its pairs (issue 24)."""
    speedup = details.get("speedup")
    if name != PERF or not _number(speedup):
        return []
    said = [f"speed-up {speedup:.2f}×"]
    found = details.get("interval")
    if isinstance(found, Mapping) and all(
        _number(found.get(key)) for key in ("estimate", "low", "high", "pairs")
    ):
        pairs = int(found["pairs"])
        said.append(
            f"pairs: {found['estimate']:.2f}× [{found['low']:.2f}, {found['high']:.2f}] over "
            f"{counted(pairs, 'pair')}"
        )
    return said


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)
