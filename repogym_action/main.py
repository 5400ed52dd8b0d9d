"""``repogym-action``: grade a pull request and post the verdict (README, "GitHub Action").

One run: read the inputs and the event, start a check run on the head (``in_progress``,
so the pull request shows it at once), fetch what the grade needs into a private clone,
grade the head against the merge base with the task read at the base, then complete the
check run, post the sticky comment, write the job summary, the outputs and the report.

Exit codes: 0 passed (or ``fail: false``), 1 not passed, 2 an error the user can fix (an
input, the event, the task, the checkout, the API), 3 an error of repogym's. On an error
the check run is still completed (``failure``, the error in its summary) and an
``::error::`` says what went wrong.

Cancelled: when GitHub cancels the job (``concurrency: cancel-in-progress``, the Cancel
button) the runner signals the step, SIGINT then SIGTERM, and kills it a few seconds
later; for this container action the ``docker run`` CLI passes the signals in. The first
SIGINT, SIGTERM or SIGHUP stops the run where it is, as the ``repogym`` command stops
(:func:`repogym.sandbox.process.signals_interrupt`): every ``finally`` runs, so the commands of
the grade are killed and the private clone removed. Then the check run, when this run
started one and has not completed it, is completed as ``cancelled`` (no verdict) with one
PATCH that waits for nothing
(:meth:`repogym_action.checks.Checks.cancel_checks`); nothing else is posted or
written (no comment, outputs, report or job summary that were not already whole), one
``::warning::`` line says so, and the exit code is 128 + the signal's number: 130 for
SIGINT, 143 for SIGTERM. Signals after the first are ignored, so that the clean-up is
not cut short.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from repogym.errors import ExitCode, RepogymError, exit_code
from repogym.sandbox.process import Interrupted, signals_interrupt
from repogym_action.commands import Commands
from repogym_action.metadata import Mode
from repogym_action.settings import RunContext, Settings, parse_context, parse_settings

if TYPE_CHECKING:
    from repogym_action.github import GitHub
    from repogym_action.grade import Graded


USAGE = """\
usage: repogym-action

Grades a pull request and posts the verdict: the GitHub Action's program. It takes no
arguments: the Actions runner gives it its inputs as INPUT_* variables (action.yml) and
the event as GITHUB_* ones. Use it in a workflow as `uses: OWNER/repogym-action@v1`
(README, "GitHub Action"); to grade on your own machine, run `repogym grade`.

Exit codes: 0 passed, 1 not passed, 2 an error the user can fix, 3 an error of
repogym's, 128+n cancelled by signal n.
"""


def main() -> int:
    """The console script: run with the environment the runner sets."""
    # The runner passes no arguments (action.yml has no `args`): any is a person trying
    # the command, who gets the usage rather than three missing variables (issue 19).
    if sys.argv[1:]:
        if sys.argv[1:] in (["-h"], ["--help"]):
            sys.stdout.write(USAGE)
            return ExitCode.PASSED
        sys.stderr.write(
            f"repogym-action: error: it takes no arguments, not {' '.join(sys.argv[1:])!r}: "
            "the runner passes the inputs as INPUT_* variables (see `repogym-action --help`)\n"
        )
        return ExitCode.ERROR
    out = Commands()
    with signals_interrupt():
        try:
            try:
                return run(os.environ, out)
            except Exception as error:  # a bug of ours: say so in one line, the traceback folded
                out.error(out.internal_error(error, "repogym-action failed"))
                return exit_code(error)
        except KeyboardInterrupt as interrupt:  # before the API client, or after it closed
            return _cancelled(out, interrupt, None)


def run(env: Mapping[str, str], out: Commands) -> int:
    """One run of the Action with ``env`` as the runner set it; the exit code."""
    started = time.monotonic()
    try:
        context = parse_context(env)
        settings = parse_settings(env, workspace=context.workspace)
    except RepogymError as error:
        return _failed(out, error)
    out.mask(settings.github_token)
    # The API client and the engine are imported once the token is masked: the first line
    # of the log comes before their ~0.6 s of imports (bench/image.py, cold start).
    from repogym_action.github import GitHub
    from repogym_action.retry import WaitBudget

    github = GitHub(
        api_url=context.api_url,
        token=settings.github_token,
        repository=context.repository,
        budget=WaitBudget(log=out.line),
    )
    try:
        try:
            return _graded(context, settings, github, out, started)
        except RepogymError as error:
            _complete_open_checks(github, out, error.lines[0])
            return _failed(out, error)
        except Exception as error:  # a bug of ours: one line, the traceback folded
            line = out.internal_error(error, "repogym-action failed")
            out.error(line)
            _complete_open_checks(github, out, line)
            return exit_code(error)
    except Interrupted as interrupt:  # the job was cancelled: a signal (main())
        return _cancelled(out, interrupt, github)
    finally:
        github.close()


def _complete_open_checks(github: GitHub, out: Commands, line: str) -> None:
    """Whatever escaped, a check run this run opened is not left in progress (issue 19):
    completed as ``failure`` with the error, by one request that waits for nothing."""
    from repogym.report.render import md

    done, problems = github.checks.cancel_checks(
        title="repogym: error",
        summary=f"repogym-action stopped before it finished: {md(line, 1000)}. The log of "
        "the workflow run says more.",
        conclusion="failure",
    )
    if problems:
        out.warning(f"the check run could not be completed: {problems[0]}")
    elif done:
        out.line("the check run is completed as failure")


def _cancelled(out: Commands, interrupt: KeyboardInterrupt, github: GitHub | None) -> int:
    """The run stopped by a signal, its ``finally`` clauses run: complete the check run it
    left in progress as cancelled, say so in one line; 128 + the signal's number."""
    signum = interrupt.signum if isinstance(interrupt, Interrupted) else signal.SIGINT
    name = signal.Signals(signum).name
    said = "nothing more is posted or written"
    if github is not None:
        done, problems = github.checks.cancel_checks(
            title="repogym: cancelled",
            summary=(
                f"The workflow run was cancelled ({name}) before repogym finished, so this "
                "commit has no verdict from it. Re-run the job for one."
            ),
        )
        if problems:
            said = f"the check run could not be completed as cancelled: {problems[0]}"
        elif done:
            said = "the check run is completed as cancelled"
    out.warning(f"repogym-action: cancelled ({name}); {said}")
    return exit_code(interrupt)


def _graded(
    context: RunContext, settings: Settings, github: GitHub, out: Commands, started: float
) -> int:
    from repogym_action.event import SUPPORTED_EVENTS, read_target
    from repogym_action.grade import grade_target
    from repogym_action.publish import Publication, publish
    from repogym_action.publish_mode import publish_uploaded

    if settings.mode is Mode.PUBLISH:
        graded = publish_uploaded(context, settings, github, out)
        if graded is None:
            return ExitCode.PASSED
        out.line(f"repogym-action: published {graded.summary_line}")
        return _exit_code(graded, settings, out)
    target = read_target(
        context.event_name,
        context.event_path,
        base_override=settings.base,
        pull_number=settings.pull_request,
        fetch_pull=github.pull,
    )
    if target is None:
        out.notice(
            f"repogym-action grades the events {', '.join(SUPPORTED_EVENTS)}; "
            f"{context.event_name} is not one of them, so there is nothing to grade"
        )
        return ExitCode.PASSED
    publication = Publication(context=context, settings=settings, target=target, github=github)
    publication.start(out)
    graded = grade_target(context, settings, target, out)
    publish(publication, graded, out)
    seconds = time.monotonic() - started
    out.line(
        f"repogym-action: {graded.summary_line}; {seconds:.1f} s in all, "
        f"{seconds - graded.seconds:.1f} s beyond the grade"
    )
    return _exit_code(graded, settings, out)


def _exit_code(graded: Graded, settings: Settings, out: Commands | None = None) -> int:
    if graded.error is not None:
        if out is not None:
            out.error(graded.error)
        return ExitCode.INTERNAL if graded.internal else ExitCode.ERROR
    if graded.passed or not settings.fail:
        return ExitCode.PASSED
    return ExitCode.FAILED


def _failed(out: Commands, error: RepogymError) -> int:
    """Exit 2 for an error the workflow's author can fix, 3 for one GitHub made."""
    for line in error.lines:
        out.error(line)
    return exit_code(error)


if __name__ == "__main__":
    sys.exit(main())
