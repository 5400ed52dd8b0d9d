"""The Action's metadata: the inputs and outputs that ``action.yml`` declares.

:data:`INPUTS` and :data:`OUTPUTS` are the one table of them: ``action.yml`` and the
README's tables must agree with it, names, defaults and descriptions (tests/action), and
:func:`repogym_action.settings.parse_settings` reads every input it lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "FALSE_VALUES",
    "INPUTS",
    "OUTPUTS",
    "TRUE_VALUES",
    "CommentMode",
    "Input",
    "Output",
]

# The spellings of a boolean in YAML 1.2's core schema, which GitHub's toolkit accepts.
TRUE_VALUES = ("true", "True", "TRUE")
FALSE_VALUES = ("false", "False", "FALSE")


class CommentMode(str, Enum):
    """What happens to the sticky pull-request comment (input ``comment``)."""

    UPDATE = "update"
    NEW = "new"
    OFF = "off"

    def __str__(self) -> str:
        return self.value


class Mode(str, Enum):
    """What a run does (input ``mode``)."""

    GRADE = "grade"  # grade the pull request and post the verdict
    PUBLISH = "publish"  # post the report a grading run uploaded (pull requests from forks)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    """One input of ``action.yml``: its default, its description and the values it takes.

    ``choices`` lists the only values a closed input takes (a boolean's are ``true`` and
    ``false``, spelt as :data:`TRUE_VALUES` and :data:`FALSE_VALUES`).
    """

    name: str
    default: str
    description: str
    boolean: bool = False
    choices: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """The environment variable the runner sets for this input."""
        return "INPUT_" + self.name.replace(" ", "_").upper()


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    """One output of ``action.yml``, written to ``GITHUB_OUTPUT``."""

    name: str
    description: str


def _inputs(*inputs: Input) -> Mapping[str, Input]:
    return {i.name: i for i in inputs}


INPUTS: Mapping[str, Input] = _inputs(
    Input(
        name="github-token",
        default="${{ github.token }}",
        description="Token for GitHub's API: reads the pull request, writes the comment and "
        "the check run. The job needs `pull-requests: write` and `checks: write`. A GitHub "
        "App's installation token works the same; a personal access token cannot write check "
        "runs (only an app's can): give it with `check-run: false`.",
    ),
    Input(
        name="task",
        default=".repogym.yml",
        description="Path of the task file in the repository, read at the base, so that a "
        "pull request cannot change its own rubric.",
    ),
    Input(
        name="base",
        default="",
        description="Ref to grade against instead of the pull request's base branch "
        "(empty: the base branch).",
    ),
    Input(
        name="comment",
        default="update",
        description="The sticky pull-request comment: `update` edits this check's comment in "
        "place, `new` posts a new one on every run, `off` posts none.",
        choices=tuple(mode.value for mode in CommentMode),
    ),
    Input(
        name="check-run",
        default="true",
        description="`true` posts a check run on the head commit, which branch protection "
        "can require; `false` posts none.",
        boolean=True,
        choices=("true", "false"),
    ),
    Input(
        name="check-name",
        default="repogym",
        description="Name of the check run and key of the sticky comment: two configurations "
        "on one repository need two names. A grade against another base than the "
        "repository's default branch names its check run with the base in brackets after "
        "it, `repogym (release)`. One line, at most 100 characters.",
    ),
    Input(
        name="fail",
        default="true",
        description="`true` fails the step when the grade does not pass; `false` only "
        "reports it. An error fails the step either way.",
        boolean=True,
        choices=("true", "false"),
    ),
    Input(
        name="hidden-tests",
        default="",
        description="Directory of hidden tests, relative to the workspace, laid out at the "
        "paths they take in the repository (e.g. checked out from a private repository by an "
        "earlier step); used instead of the task's `tests.hidden`.",
    ),
    Input(
        name="template",
        default="",
        description="Directory of templates that replace the built-in ones of the same name "
        "(`comment.md.j2`, `check_summary.md.j2`, `check_text.md.j2`, `job_summary.md.j2`): "
        "a directory of the repository, read at the base commit as the task is, or one an "
        "earlier step made in the workspace that no commit of the pull request has. Symbolic "
        "links in it are refused.",
    ),
    Input(
        name="report",
        default="",
        description="Where to write the JSON report, relative to the workspace (empty: "
        "`repogym-report.json` in the runner's temporary directory).",
    ),
    Input(
        name="pull-request",
        default="",
        description="Number of the pull request to grade when the workflow runs on "
        "`workflow_dispatch`.",
    ),
    Input(
        name="mode",
        default="grade",
        description="`grade` grades the pull request; `publish` (in a `workflow_run` job, for "
        "pull requests from forks) posts the report that a grading run uploaded, read from "
        "`report`.",
        choices=tuple(mode.value for mode in Mode),
    ),
)

OUTPUTS: Mapping[str, Output] = {
    o.name: o
    for o in (
        Output(name="score", description="The score, a number from 0 to 1."),
        Output(name="passed", description="`true` when the grade passed, else `false`."),
        Output(
            name="summary",
            description="The one-line summary, e.g. `PASS 1.000 (constraints=1.00✓(gate), "
            "tests=1.00✓)`.",
        ),
        Output(name="report", description="Path of the JSON report."),
        Output(
            name="check-url",
            description="Web address of the check run (empty when no check run was posted).",
        ),
    )
}
