"""Bad input to the Action, end to end: ``repogym-action`` run as a process on a real
origin and actions/checkout's clone, with the fake API (tests/action/job.py).

The rule (DESIGN.md, "Principles"): every bad input gets one clear line naming the file,
key or value and how to fix it; never a traceback; never a half-written output. So each
case here, whatever it spoils (the event, an input, the history, the repository's files),
checks the same things: the exit code, one ``::error::`` line that names the culprit and
says what to do, no ``Traceback`` in the log, the outputs and the report whole or absent,
every check run the run made completed, and at most one comment. A repository that is
merely odd (binary files, a 100 MB file, names with line breaks, a base with no files, a
pull request that deletes everything) is graded like any other and gets a verdict.
"""

from __future__ import annotations

import json
import resource
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from repogym_action.metadata import INPUTS, OUTPUTS
from tests.action.gitrepo import Files, Pull, git
from tests.action.job import Job, Step
from tests.action.runners import Layout

TASK = """\
version: 1
type: bugfix
tests:
  command: >-
    python -m pytest -q -p no:cacheprovider -o junit_family=xunit1 -o pythonpath=src
    --junitxml={junit}
  fail_to_pass: [tests/test_calc.py::test_add]
  pass_to_pass: [tests/test_calc.py::test_sub]
  timeout: 120
constraints:
  protected: [tests/**, .repogym.yml]
  max_files_changed: 40
  forbidden_patterns: ['breakpoint\\(']
  paths: [src/**/*.py]
  max_function_length: 40
"""

BASE: dict[str, str | bytes | None] = {
    ".repogym.yml": TASK,
    "src/calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add, sub\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    assert sub(3, 2) == 1\n"
    ),
    "README.md": "calc\n",
}
FIX: dict[str, str | bytes | None] = {
    "src/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
}


def payload(job: Job, pull: Pull) -> dict[str, Any]:
    return job.event("pull_request.opened", pull)


def check_runs(job: Job) -> list[dict[str, Any]]:
    return list(job.fake.check_runs())


def assert_whole(job: Job, step: Step) -> None:
    """What every run leaves, error or not: no traceback, outputs and report whole or
    absent, no temporary file left beside them, every check run completed, one comment
    at most per pull request."""
    assert "Traceback" not in step.log, step.log
    assert "internal error" not in step.log, step.log
    assert set(step.outputs) in (set(), set(OUTPUTS)), step.outputs
    if step.report is not None:  # Job.run read it as JSON: it is whole
        assert isinstance(step.report.get("version"), int)
    temp = job.root / f"run-{job.runs}" / "_temp"
    assert [p.name for p in temp.iterdir() if p.name.startswith(".")] == []
    for run in check_runs(job):
        assert run["status"] == "completed", run
    for number in job.fake.state.pulls:
        assert len(job.fake.comments(number)) <= 1


def assert_one_error(job: Job, step: Step, *says: str, code: int = 2) -> str:
    """The run failed with ``code`` and said why in exactly one ``::error::`` line,
    holding every one of ``says``; that line."""
    assert_whole(job, step)
    assert step.exit_code == code, step.log
    errors = [line for line in step.log.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, errors
    [error] = errors
    assert error.startswith("::error::"), error
    for fragment in says:
        assert fragment in error, (fragment, error)
    if step.report is not None:  # a report of the error, the same line
        assert "passed" not in step.report
        assert step.report["error"]["message"] in error
    runs = check_runs(job)
    if runs:  # the check run was started before the error: it says so
        assert [r["conclusion"] for r in runs] == ["failure"]
        assert "could not grade" in json.dumps(runs[0]["output"])
    return error


def assert_verdict(job: Job, step: Step, pull: Pull, *, passed: bool) -> dict[str, Any]:
    """The run graded and published: the exit code, the outputs, the report, one check
    run completed with the verdict and one comment saying it; the report."""
    assert_whole(job, step)
    assert step.exit_code == (0 if passed else 1), step.log
    assert not [line for line in step.log.splitlines() if line.startswith("::error::")]
    assert step.outputs["passed"] == ("true" if passed else "false")
    assert step.report is not None and step.report["passed"] is passed
    assert step.report["head"]["sha"] == pull.head_sha
    [run] = check_runs(job)
    assert run["conclusion"] == ("success" if passed else "failure")
    assert run["output"]["title"] == step.outputs["summary"]
    [comment] = job.fake.comments(pull.number)
    assert ("repogym: passed" if passed else "repogym: not passed") in comment["body"]
    return step.report


# --- Events ------------------------------------------------------------------------------


def _issue_comment(job: Job, pull: Pull) -> dict[str, Any]:
    repository = {"full_name": job.fake.repository, "name": "octo-repo"}
    return {
        "action": "created",
        "issue": {"number": pull.number, "pull_request": {"url": "https://x.invalid/pulls/1"}},
        "comment": {"id": 1, "body": "/grade"},
        "repository": repository,
    }


def _push(job: Job, pull: Pull) -> dict[str, Any]:
    return {"ref": "refs/heads/fix", "before": pull.base_sha, "after": pull.head_sha}


def _write(data: bytes) -> Callable[[Layout], None]:
    def write(layout: Layout) -> None:
        layout.event.write_bytes(data)

    return write


def _remove(layout: Layout) -> None:
    layout.event.unlink()


def _directory(layout: Layout) -> None:
    layout.event.unlink()
    layout.event.mkdir()


@dataclass(frozen=True)
class EventCase:
    id: str
    event_name: str
    says: tuple[str, ...]
    make: Callable[[Job, Pull], dict[str, Any]] = payload
    before: Callable[[Layout], None] | None = None
    inputs: Mapping[str, str] | None = None


EVENT_CASES = [
    EventCase(
        "an issue_comment payload",
        "pull_request",
        ("event.json: the pull_request payload has no `pull_request` object", "GITHUB_EVENT"),
        make=_issue_comment,
    ),
    EventCase(
        "a push payload",
        "pull_request_target",
        ("event.json: the pull_request_target payload has no `pull_request`", "GITHUB_EVENT"),
        make=_push,
    ),
    EventCase(
        "a pull_request payload for merge_group",
        "merge_group",
        ("event.json: the merge_group payload has no `merge_group` object", "GITHUB_EVENT"),
    ),
    EventCase(
        "a pull_request payload for workflow_dispatch",
        "workflow_dispatch",
        ("no pull request number to grade", "set the action's input `pull-request`"),
    ),
    EventCase(
        "a missing event file",
        "pull_request",
        ("event.json", "cannot be read: No such file or directory", "point GITHUB_EVENT_PATH"),
        before=_remove,
    ),
    EventCase(
        "an event file that is a directory",
        "pull_request",
        ("event.json", "cannot be read: Is a directory", "point GITHUB_EVENT_PATH"),
        before=_directory,
    ),
    EventCase(
        "an event file that is not UTF-8",
        "pull_request",
        ("event.json", "cannot be read: not UTF-8", "point GITHUB_EVENT_PATH"),
        before=_write(b'{"pull_request": "caf\xe9"}'),
    ),
    EventCase(
        "an event file that is not JSON",
        "pull_request",
        ("event.json: the event payload is not JSON", "line 1", "point GITHUB_EVENT_PATH"),
        before=_write(b"pull_request:\n  number: 1\n"),
    ),
    EventCase(
        "an empty event file",
        "pull_request",
        ("event.json: the event payload is not JSON", "point GITHUB_EVENT_PATH"),
        before=_write(b""),
    ),
    EventCase(
        "an event file cut short",
        "pull_request",
        ("event.json: the event payload is not JSON", "point GITHUB_EVENT_PATH"),
        before=_write(b'{"pull_request": {"number": 1, "base": {'),
    ),
    EventCase(
        "a JSON list",
        "pull_request",
        ("event.json: the event payload is a JSON list, not an object",),
        before=_write(b"[1, 2]"),
    ),
    EventCase(
        "a head sha that is no sha",
        "pull_request",
        ("event.json: pull_request.head: `sha` ('main') is not a full commit sha",),
        make=lambda job, pull: _spoilt(payload(job, pull), "head", "sha", "main"),
    ),
    EventCase(
        "a base without its ref",
        "pull_request",
        ("event.json: pull_request.base: `ref` is missing",),
        make=lambda job, pull: _spoilt(payload(job, pull), "base", "ref", None),
    ),
]


def _spoilt(event: dict[str, Any], side: str, key: str, value: object) -> dict[str, Any]:
    if value is None:
        del event["pull_request"][side][key]
    else:
        event["pull_request"][side][key] = value
    return event


@pytest.mark.parametrize("case", EVENT_CASES, ids=[c.id for c in EVENT_CASES])
def test_an_event_that_says_nothing_gradable(job: Job, case: EventCase) -> None:
    pull = job.open_pull(3, base=BASE, head=FIX)
    step = job.run(case.event_name, case.make(job, pull), pull, case.inputs, before=case.before)
    assert_one_error(job, step, *case.says)
    assert step.outputs == {} and step.report is None
    assert job.fake.comments(3) == [] and check_runs(job) == []


# --- History: what the event names is no longer (or never was) on origin -----------------


def _prune(job: Job) -> None:
    """Drop every commit no ref reaches, as GitHub eventually does after a force-push."""
    git(job.origin.path, "reflog", "expire", "--expire=now", "--all")
    git(job.origin.path, "gc", "--quiet", "--prune=now")


def test_a_base_force_pushed_since_the_event(job: Job) -> None:
    """The event's base, the base branch's tip when it fired, rewritten and gone since."""
    pull = job.open_pull(5, base=BASE, head=FIX)
    fork_point = pull.base_sha
    job.origin.commit("main", {"README.md": "moved on\n"})
    pull = job.origin.pull(5)  # the event names this base

    def force_push_base(layout: Layout) -> None:
        job.origin.commit("main", {"README.md": "rewritten\n"}, start=fork_point)
        _prune(job)
        assert not job.origin.has(pull.base_sha)

    step = job.run("pull_request", payload(job, pull), pull, before=force_push_base)
    error = assert_one_error(job, step, f"the base commit {pull.base_sha} is not on origin")
    assert "force-pushed" in error and "re-run the workflow" in error
    [comment] = job.fake.comments(5)
    assert "could not grade" in comment["body"]


def test_a_head_force_pushed_since_the_event(job: Job) -> None:
    pull = job.open_pull(6, base=BASE, head=FIX)

    def force_push_head(layout: Layout) -> None:
        job.origin.commit("fix", {"README.md": "again\n"}, start=pull.base_sha)
        _prune(job)
        assert not job.origin.has(pull.head_sha)

    step = job.run("pull_request", payload(job, pull), pull, before=force_push_head)
    assert_one_error(job, step, f"the head commit {pull.head_sha} is not on origin", "re-run")


def test_a_head_whose_branch_was_deleted(job: Job) -> None:
    """GitHub keeps ``refs/pull/N/head`` when the branch goes: the head is still there."""
    pull = job.open_pull(8, base=BASE, head=FIX)

    def delete_branch(layout: Layout) -> None:
        git(job.origin.path, "update-ref", "-d", "refs/heads/fix")

    step = job.run("pull_request", payload(job, pull), pull, before=delete_branch)
    assert_verdict(job, step, pull, passed=True)


def test_a_head_gone_with_its_branch(job: Job) -> None:
    """Deleted and gone: no ref reaches the head any more (GitHub's garbage collected)."""
    pull = job.open_pull(8, base=BASE, head=FIX)

    def delete_everything(layout: Layout) -> None:
        for ref in ("refs/heads/fix", "refs/pull/8/head", "refs/pull/8/merge"):
            git(job.origin.path, "update-ref", "-d", ref)
        _prune(job)
        assert not job.origin.has(pull.head_sha)

    step = job.run("pull_request", payload(job, pull), pull, before=delete_everything)
    assert_one_error(job, step, f"the head commit {pull.head_sha} is not on origin")


def test_a_base_branch_gone_with_its_commit(job: Job) -> None:
    pull = job.open_pull(7, base=BASE, head=FIX)
    job.origin.commit("main", {"README.md": "moved on\n"})
    pull = job.origin.pull(7)  # the event names the base's tip, not the fork point

    def delete_base(layout: Layout) -> None:
        git(job.origin.path, "update-ref", "-d", "refs/heads/main")
        git(job.origin.path, "update-ref", "-d", "refs/pull/7/merge")
        _prune(job)
        assert not job.origin.has(pull.base_sha)

    step = job.run("pull_request", payload(job, pull), pull, before=delete_base)
    assert_one_error(job, step, "nor refs/heads/main", "re-run the workflow", "`base` input")


def test_a_head_with_no_history_in_common_with_its_base(job: Job) -> None:
    """The base branch force-pushed to a new root after the pull request was opened."""
    job.origin.commit("fix", {**BASE, "src/extra.py": "X = 1\n"}, message="a root")
    job.origin.commit("main", BASE, message="another root")
    pull = job.origin.open_pull(9, head="fix")
    job.fake.add_pull(
        9, base_ref="main", base_sha=pull.base_sha, head_ref="fix", head_sha=pull.head_sha
    )
    step = job.run("pull_request", payload(job, pull), pull)
    assert_one_error(
        job, step, "have no common ancestor (unrelated histories)", "set the `base` input"
    )


def test_a_base_input_with_no_history_in_common(job: Job) -> None:
    pull = job.open_pull(10, base=BASE, head=FIX)
    job.origin.commit("gh-pages", {"index.html": "<p>docs</p>\n"}, message="orphan")
    step = job.run("pull_request", payload(job, pull), pull, {"base": "gh-pages"})
    assert_one_error(job, step, "no common ancestor (unrelated histories)", "`base` input")


# --- Inputs: a wrong value for each input of action.yml -----------------------------------


@dataclass(frozen=True)
class InputCase:
    value: str
    says: tuple[str, ...]
    event: str = "pull_request"
    artifact: Mapping[str, bytes] | None = None
    more: Mapping[str, str] | None = None  # other inputs the case needs


TEMPLATE_BROKEN = {"tpl/comment.md.j2": b"{% if %}\n"}
TEMPLATE_FAILING = {"tpl/comment.md.j2": b"{{ report.nothing.deeper }}\n"}

# Input -> wrong values, each with what its one line must say. Every input of
# action.yml has some (test_every_input_has_bad_values).
BAD_VALUES: dict[str, list[InputCase]] = {
    "github-token": [
        InputCase("", ("input `github-token`: the value is empty", "give a token")),
        InputCase("${{ secrets.NONE }}", ("input `github-token`", "did not fill in")),
        InputCase("ghs_a b", ("input `github-token`: holds a space", "give the token alone")),
        InputCase("ghs_wrong", ("the token is not valid", "check the `github-token` input")),
    ],
    "task": [
        InputCase("", ("input `task`: the value is empty", "give one")),
        InputCase("../outside.yml", ("input `task`", "not a path inside the repository")),
        InputCase("/etc/passwd", ("input `task`", "relative to its top")),
        InputCase("a\nb.yml", ("input `task`", "has a line break; give one line")),
        InputCase("missing.yml", ("missing.yml not found at main", "`task` input")),
        InputCase("src", ("src at main is a directory", "`task` input")),
        InputCase("src/calc.py", ("src/calc.py",)),
        InputCase("README.md", ("README.md",)),
    ],
    "base": [
        InputCase("two words", ("input `base`", "not a ref name; give a branch, tag or sha")),
        InputCase("no-such-branch", ("input `base`: `no-such-branch` names no branch",)),
        InputCase("--upload-pack=touch", ("input `base`", "names no branch")),
        InputCase("0" * 40, (f"input `base`: commit {'0' * 40} is not on origin", "set it")),
    ],
    "comment": [
        InputCase("sometimes", ("input `comment`", "not one of update, new, off")),
        InputCase("UPDATE", ("input `comment`: 'UPDATE' is not one of update, new, off",)),
    ],
    "check-run": [
        InputCase("yes", ("input `check-run`: 'yes' is not a boolean", "true or false")),
        InputCase("1", ("input `check-run`: '1' is not a boolean", "true or false")),
    ],
    "check-name": [
        InputCase("", ("input `check-name`: the value is empty",)),
        InputCase("x" * 101, ("input `check-name`", "is 101 characters; give 100 at most")),
        InputCase("a\nb", ("input `check-name`", "line break")),
    ],
    "fail": [
        InputCase("maybe", ("input `fail`: 'maybe' is not a boolean",)),
        InputCase("", ("input `fail`: '' is not a boolean; give true or false",)),
    ],
    "hidden-tests": [
        InputCase("no/such/dir", ("input `hidden-tests`", "is not a directory")),
        InputCase("README.md", ("input `hidden-tests`", "is not a directory")),
        InputCase("/", ("input `hidden-tests`: '/' is not a directory inside the workspace",)),
        InputCase("..", ("input `hidden-tests`", "give one relative to it")),
        InputCase("../workspace/src", ("input `hidden-tests`", "inside the workspace")),
    ],
    "template": [
        InputCase("no/such/dir", ("input `template`", "is not a directory")),
        InputCase("/usr", ("input `template`: '/usr' is not a directory inside the repository",)),
        InputCase("tpl", ("comment.md.j2",), artifact=TEMPLATE_BROKEN),
        InputCase("tpl", ("comment.md.j2",), artifact=TEMPLATE_FAILING),
    ],
    "report": [
        InputCase(".", ("input `report`", "is a directory; give a file path")),
        InputCase("no/dir/r.json", ("input `report`", "its directory does not exist")),
        InputCase("r\n.json", ("input `report`", "line break")),
    ],
    "pull-request": [
        InputCase("abc", ("input `pull-request`", "not a pull request number")),
        InputCase("0", ("input `pull-request`", "not a pull request number")),
        InputCase(
            "999",
            ("octo-org/octo-repo has no pull request #999", "the `pull-request` input"),
            event="workflow_dispatch",
        ),
    ],
    "mode": [
        InputCase("both", ("input `mode`: 'both' is not one of grade, publish",)),
        InputCase("", ("input `mode`: '' is not one of grade, publish",)),
        InputCase("publish", ("mode publish runs on workflow_run, not pull_request",)),
    ],
}

INPUT_CASES = [(name, case) for name, cases in BAD_VALUES.items() for case in cases]


def test_every_input_has_bad_values() -> None:
    assert set(BAD_VALUES) == set(INPUTS)


@pytest.mark.parametrize(
    ("name", "case"),
    INPUT_CASES,
    ids=[f"{name}={case.value[:20]!r}" for name, case in INPUT_CASES],
)
def test_a_bad_input(job: Job, name: str, case: InputCase) -> None:
    pull = job.open_pull(4, base=BASE, head=FIX)
    event = case.event
    body = payload(job, pull) if event == "pull_request" else job.event(event, pull)
    inputs = {name: case.value, **(case.more or {})}
    step = job.run(event, body, pull, inputs, artifact=case.artifact)
    assert_one_error(job, step, *case.says)


# --- Repositories: odd, and graded like any other -----------------------------------------

NAMES = ["a b", "tab\there", "new\nline", 'quo"te', "it's", "ünïcödé", "日本", "back\\slash"]
NAMED_TESTS = (
    "import pytest\n\nfrom calc import add\n\n\n"
    f"@pytest.mark.parametrize('name', {NAMES!r})\n"
    "def test_named(name):\n    assert add(2, 3) == 5, name\n"
)


def _named_task() -> str:
    # Ids as pytest prints them: non-printable and non-ASCII characters escaped.
    ids = [
        "a b",
        "tab\\\\there",
        "new\\\\nline",
        'quo\\"te',
        "it's",
        "\\\\xfcn\\\\xefc\\\\xf6d\\\\xe9",
        "\\\\u65e5\\\\u672c",
        "back\\\\\\\\slash",
    ]
    listed = "".join(f'\n    - "tests/test_ünï names.py::test_named[{i}]"' for i in ids)
    return TASK.replace("fail_to_pass: [tests/test_calc.py::test_add]", "fail_to_pass:" + listed)


WEIRD_PATHS = [
    "src/with space.py",
    "src/tab\there.py",
    "src/new\nline.py",
    'src/"quoted".py',
    "src/it's.py",
    "src/ünïcödé.py",
    "src/日本/語.py",
    "src/back\\slash.py",
    "src/ trailing .py",
    "src/-dash.py",
]


def test_paths_and_test_names_with_spaces_line_breaks_quotes_and_non_ascii(job: Job) -> None:
    base = {**BASE, ".repogym.yml": _named_task(), "tests/test_ünï names.py": NAMED_TESTS}
    head = {**FIX, **{path: f"def f():\n    return {i}\n" for i, path in enumerate(WEIRD_PATHS)}}
    pull = job.open_pull(21, base=base, head=head)
    step = job.run("pull_request", payload(job, pull), pull)
    report = assert_verdict(job, step, pull, passed=True)
    assert report["score"] == 1


def test_a_forbidden_pattern_in_files_with_odd_names(job: Job) -> None:
    head = {**FIX, **dict.fromkeys(WEIRD_PATHS, "def f():\n    breakpoint()\n")}
    pull = job.open_pull(22, base=BASE, head=head)
    step = job.run("pull_request", payload(job, pull), pull)
    report = assert_verdict(job, step, pull, passed=False)
    findings = json.dumps(report)
    for path in WEIRD_PATHS:
        assert json.dumps(path)[1:-1] in findings


def test_binary_and_non_utf8_files_in_the_diff(job: Job) -> None:
    head: Files = {
        **FIX,
        "src/latin1.py": b"# caf\xe9\nX = 'cr\xe8me'\n",
        "src/bom.py": b"\xef\xbb\xbfdef f():\n    return 1\n",
        "src/nul.py": b"def f():\n    return 1\x00\n",
        "data/blob.bin": bytes(range(256)) * 64,
        "docs/utf16.txt": "ünï\n".encode("utf-16"),
        "README.md": b"calc \xff\xfe\n",
        "src/\udce9t\udce9.py": b"def g():\n    return 2\n",  # a name that is not UTF-8
    }
    pull = job.open_pull(23, base=BASE, head=head)
    step = job.run("pull_request", payload(job, pull), pull)
    report = assert_verdict(job, step, pull, passed=False)
    findings = {(f["path"], f["title"]) for c in report["components"] for f in c["findings"]}
    # What cannot be read as Python is named, with why; the rest is graded as usual.
    assert findings == {
        ("src/latin1.py", "forbidden_patterns"),
        ("src/latin1.py", "syntax"),
        ("src/nul.py", "syntax"),
    }
    [tests] = [c for c in report["components"] if c["name"] == "tests"]
    assert tests["score"] == 1


def test_a_100_mb_file_in_the_pull_request(job: Job, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as file:  # sparse: no time spent writing zeros
        file.truncate(100 * 1024 * 1024)
    job.origin.commit("main", BASE, message="base")
    sha = job.origin.blob(big)
    job.origin.commit(
        "fix",
        FIX,
        message="a big file",
        start=job.origin.sha("main"),
        blobs={"assets/big.bin": sha},
    )
    pull = job.origin.open_pull(24, head="fix")
    job.fake.add_pull(
        24, base_ref="main", base_sha=pull.base_sha, head_ref="fix", head_sha=pull.head_sha
    )
    step = job.run("pull_request", payload(job, pull), pull)
    assert_verdict(job, step, pull, passed=True)
    # Bounded: the largest process this test session started (git hashing the file
    # included) held about the file once (105 MiB here), never several copies of it.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB
    print(f"largest child process: {peak / 1024:.0f} MiB")
    assert peak < 1024 * 1024


def test_a_base_with_no_files(job: Job) -> None:
    """GitHub can make it: a first commit of no files (``git commit --allow-empty``).
    The task is read at the base, so there is none: one line, and the check completed."""
    pull = job.open_pull(25, base={}, head={**BASE, **FIX})
    step = job.run("pull_request", payload(job, pull), pull)
    assert_one_error(job, step, ".repogym.yml not found at main", "`task` input")
    [comment] = job.fake.comments(25)
    assert "could not grade" in comment["body"]


def test_a_pull_request_that_deletes_every_file(job: Job) -> None:
    pull = job.open_pull(26, base=BASE, head=dict.fromkeys(BASE))
    step = job.run("pull_request", payload(job, pull), pull)
    report = assert_verdict(job, step, pull, passed=False)
    assert report["score"] < 1
