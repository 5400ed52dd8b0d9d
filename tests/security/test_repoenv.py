"""RepoEnv (issue 9): an agent's commands plant things between episodes, and hidden tests
kept out of the repository (as docs/env.md advises) are copied out during Submit and
read in the next episode. The episodes run in a process of their own
(tests/security/_env_driver.py), with the grader's venv and the canary secret."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.security import _payloads as p
from tests.security._harness import BUGFIX_TASK, EXAMPLES, Case
from tests.security._poison import POISON_MODULE

DRIVER = Path(__file__).with_name("_env_driver.py")
EMPTY_EPISODE = [["submit"]]


def run_episodes(
    case: Case, episodes: list[list[list[str]]], *, hidden: Path | None = None, keep: bool = False
) -> tuple[list[list[list[object]]], list[str]]:
    """The episodes' steps ([output, reward, error] each) and what the run left behind
    (the harness's problems, its verdict aside)."""
    spec = case.root / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "repo": str(case.repo.root),
                "base": "main",
                "hidden": None if hidden is None else str(hidden),
                "keep_workspace": keep,
                "episodes": [[[case.fill(a) for a in action] for action in e] for e in episodes],
            }
        )
    )
    out = case.out / "episodes.json"
    ran = case.run([str(case.python), str(DRIVER), str(spec), str(out)], out, case.out / "none")
    assert ran.returncode == 0, ran.output
    steps = json.loads(ran.report_text)
    return steps, ran.problems("", verdict=False)


def rewards(steps: list[list[list[object]]]) -> list[object]:
    return [episode[-1][1] for episode in steps]


def test_a_pth_planted_by_a_command_does_not_reward_the_next_episode(own_case: Case) -> None:
    case = own_case
    case.base()
    plant = textwrap.dedent(
        f"""\
        import os
        import sysconfig

        place = sysconfig.get_paths()["purelib"]
        with open(os.path.join(place, "zz_{{marker}}_poison.py"), "w") as f:
            f.write({POISON_MODULE!r})
        with open(os.path.join(place, "zz_{{marker}}.pth"), "w") as f:
            f.write("import zz_{{marker}}_poison\\n")
        """
    )
    first = [["write", "plant.py", plant], ["run", "python plant.py"], ["submit"]]
    steps, problems = run_episodes(case, [first, EMPTY_EPISODE])
    assert rewards(steps)[1] == 0.0, steps[1]
    assert not problems, "\n".join(problems)


# A daemon (the chain of 80 of test_processes) that puts the flip conftest.py into every
# workspace of this case's repository (they hold case.txt) that comes after it.
PLANTER = (
    textwrap.dedent(
        """\
        PATH=/usr/bin:/bin
        depth=$1 marker=$2
        if [ "$depth" -gt 0 ]; then
          setsid env -i ATTACK_TAG="$marker" /bin/sh "$0" $((depth - 1)) "$marker" \\
            </dev/null >/dev/null 2>&1
          exit 0
        fi
        while :; do
          for case in /tmp/repogym-*/case.txt /tmp/repogym-*/*/case.txt; do
            dir=${case%/case.txt}
            if [ -f "$case" ] && grep -q "$marker" "$case" && [ ! -f "$dir/src/conftest.py" ]; then
              cat > "$dir/src/conftest.py" <<'CONFTEST'
        """
    )
    + p.FLIP_CONFTEST
    + textwrap.dedent(
        """\
        CONFTEST
            fi
          done
          sleep 0.05
        done
        """
    )
)


def test_a_daemon_cannot_plant_into_the_next_episode(case: Case) -> None:
    case.base(files={"case.txt": "{marker}\n"})
    first = [
        ["write", "planter.sh", PLANTER],
        ["run", 'sh "$PWD/planter.sh" 80 {marker} &'],
        ["submit"],
    ]
    # The agent of the next episode waits for the plant (3 s at most), then submits.
    wait = "for i in $(seq 30); do [ -f src/conftest.py ] && break; sleep 0.1; done; true"
    steps, problems = run_episodes(case, [first, [["run", wait], ["submit"]]])
    assert rewards(steps)[1] == 0.0, steps[1]
    assert not problems, "\n".join(problems)


HIDDEN_TEST = textwrap.dedent(
    """\
    from slugify import slugify

    ANSWER = "hidden-{marker}"


    def test_hidden():
        assert slugify("Déjà vu") == "deja-vu"
    """
)
# The submission's package, imported by the tests during Submit: copies every test file
# it finds in the tree to the temporary directory and into the tree itself.
EXFILTRATE = textwrap.dedent(
    """
    import glob
    import os
    import shutil

    for _test in glob.glob("tests/*.py"):
        for _dest in ("/tmp/exfil-{marker}", "src/leak-{marker}"):
            try:
                os.makedirs(_dest, exist_ok=True)
                shutil.copy(_test, _dest)
            except OSError:
                pass
    """
)


def test_hidden_tests_cannot_be_read_in_the_next_episode(case: Case) -> None:
    case.base(task=case_task_with_hidden())
    hidden = case.root / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_hidden.py").write_text(str(case.fill(HIDDEN_TEST)))
    first = [["write", "src/slugify/__init__.py", p.package_init(EXFILTRATE)], ["submit"]]
    look = "cat /tmp/exfil-{marker}/* /tmp/repogym-*/src/leak-{marker}/* 2>/dev/null; true"
    steps, problems = run_episodes(
        case, [first, [["run", look], ["submit"]]], hidden=hidden, keep=True
    )
    seen = json.dumps(steps[1])
    assert f"hidden-{case.marker}" not in seen, "the next episode read the hidden tests"
    assert not problems, "\n".join(problems)


def case_task_with_hidden() -> str:
    from tests.security._harness import BUGFIX_TASK

    return BUGFIX_TASK.replace(
        "  fail_to_pass:\n", "  fail_to_pass:\n    - tests/test_hidden.py::test_hidden\n", 1
    )


def test_a_command_cannot_read_the_graders_environment(case: Case) -> None:
    case.base()
    steal = "for f in /proc/*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; done | grep -i canary"
    steps, problems = run_episodes(case, [[["run", steal], ["submit"]]])
    assert case.canary not in json.dumps(steps), "a command read the grader's secret"
    assert not problems, "\n".join(problems)


# What an agent's command leaves for a later WriteFile or ReadFile, which the grader's
# process carries out (root, where the commands run as a sandbox user): a link out of the
# tree on the way or at the end, a FIFO that would block the open (issue 19).
PLANTED = {
    "directory-link": ("ln -s {sentinel} sub", "sub/x", "leads outside the work tree"),
    "file-link": ("ln -s {sentinel}/keep.txt x", "x", "leads outside the work tree"),
    "nested-link": ("mkdir -p a && ln -s {sentinel} a/b", "a/b/c/x", "leads outside the work tree"),
    "fifo": ("mkfifo x", "x", "not a regular file"),
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
@pytest.mark.parametrize("verb", ["write", "read"])
def test_a_file_action_does_not_follow_what_a_command_planted(
    case: Case, kind: str, verb: str
) -> None:
    """A real RepoEnv: a command plants the thing, then the agent writes (or reads) the
    path. Nothing outside the tree is written or read, the step returns one line naming
    the path, and the episode goes on (its Submit is graded)."""
    case.base()
    command, path, why = PLANTED[kind]
    act = ["write", path, "planted {marker}\n"] if verb == "write" else ["read", path]
    episode = [["run", command.format(sentinel=case.sentinel)], act, ["submit"]]
    steps, problems = run_episodes(case, [episode])
    output, _, error = steps[0][1]
    assert isinstance(error, str) and error.startswith(f"{path}: ") and why in error, error
    assert "\n" not in error and output == "", steps[0][1]
    assert "the grader's own file" not in json.dumps(steps)  # keep.txt, read through a link
    assert sorted(p.name for p in case.sentinel.iterdir()) == ["keep.txt"]
    assert (case.sentinel / "keep.txt").read_text() == "the grader's own file\n"
    assert len(steps[0]) == 3 and isinstance(steps[0][2][1], float), steps[0][2]
    assert not problems, "\n".join(problems)


# Dependency directories (node_modules, .venv) that the agent's tree holds and git ignores
# are linked into the run's copy by the grader (root): what the agent leaves in their
# place or on their way must not carry the link out of the copy (issue 19).
def test_a_dependency_link_is_not_made_through_what_the_agent_left(case: Case) -> None:
    """The base keeps `vendor -> <a directory outside>` (restored in every run by
    `tests.restore`); the agent makes `vendor` a directory holding an ignored
    `lib/node_modules`, and makes `node_modules` and `.venv` links out of the tree. In
    the copy `vendor` is the base's link again: linking `vendor/lib/node_modules` there
    wrote a link into the directory outside. The grade goes on as usual."""
    (case.sentinel / "lib").mkdir()
    case.repo.root.mkdir(parents=True, exist_ok=True)
    (case.repo.root / "vendor").symlink_to(case.sentinel, target_is_directory=True)
    task = BUGFIX_TASK.replace("  timeout: 120\n", "  timeout: 120\n  restore: [vendor]\n")
    case.base(task=task)
    plant = " && ".join(
        [
            "rm vendor",
            "mkdir -p vendor/lib/node_modules/dep",
            "echo 'module.exports = 1' > vendor/lib/node_modules/dep/index.js",
            "printf 'node_modules/\\n.venv\\n' >> .gitignore",
            f"ln -s {case.sentinel} node_modules",
            f"ln -s {case.sentinel} .venv",
        ]
    )
    steps, problems = run_episodes(case, [[["run", plant], ["submit"]]])
    assert steps[0][0][2] is None, steps[0][0]
    output, reward, error = steps[0][1]
    assert error is None and reward == 0.0 and "FAIL" in str(output), steps[0][1]
    assert sorted(p.name for p in case.sentinel.iterdir()) == ["keep.txt", "lib"]
    assert list((case.sentinel / "lib").iterdir()) == []
    assert not problems, "\n".join(problems)


FORGE = textwrap.dedent(
    r"""
    import hashlib, os, zlib

    # The base's test file (as checked out, its blob's id is that of its bytes), with
    # tests that all pass under the same id: git does not check a loose object against
    # its id when it reads it.
    with open("tests/test_slugify.py", "rb") as base:
        data = base.read()
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    forged = b"import pytest\n" + b"\n".join([
        b"def test_accents_are_transliterated(): pass",
        b"@pytest.mark.parametrize('title', ['hello, world', 'cr\\xe8me br\\xfbl\\xe9e'])",
        b"def test_examples(title): pass",
        b"def test_ascii(): pass",
    ]) + b"\n"
    folder = os.path.join(".git", "objects", sha[:2])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, sha[2:]), "wb") as out:
        out.write(zlib.compress(b"blob %d\0" % len(forged) + forged))
    print("planted", sha)
    """
)


def test_a_base_object_forged_in_the_workspace_does_not_grade(case: Case) -> None:
    """The agent writes its workspace's ``.git`` too: a loose object under the id of the
    base's test file, with tests that pass, would be what the grader puts back from the
    base if it read the base through the workspace (it scored 1.0, issue 23)."""
    case.base()
    # The script leaves the tree as it found it: only its .git differs.
    episode = [["write", "forge.py", FORGE], ["run", "python3 forge.py; rm forge.py"], ["submit"]]
    steps, problems = run_episodes(case, [episode])
    assert steps[0][1][0].startswith("planted "), steps[0]
    assert rewards(steps) == [0.0], steps
    assert not problems, "\n".join(problems)


# What an agent does with a workspace that lends it the source repository's history:
# every object git can reach (its own, a borrowed store's, a later commit's), the first
# blob that solves the task copied in (issue 43; SWE-bench's published leak).
COPY_THE_FIX = (
    "git cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)' | "
    'while read id kind; do [ "$kind" = blob ] && git cat-file -p $id | '
    "grep -q unicodedata.normalize && git cat-file -p $id > src/slugify/core.py; done; "
    "git log --all --format=%H | wc -l; cat .git/objects/info/alternates 2>/dev/null; "
    "git for-each-ref; grep -rl {repo} .git 2>/dev/null; true"
)


def test_the_workspace_holds_the_bases_history_and_nothing_later(case: Case) -> None:
    """A later commit of the source repository holds the fix. Before: the workspace
    borrowed the repository's objects and refs, so the agent copied the fix's blob in
    and scored 1.0; now it holds the base's history alone."""
    case.base()
    solution = (EXAMPLES / "bugfix" / "solution" / "src/slugify/core.py").read_text()
    case.submit({"src/slugify/core.py": solution})  # the fix, committed after the base
    case.repo.git("tag", "v-fixed")
    command = COPY_THE_FIX.replace("{repo}", str(case.repo.root))
    steps, problems = run_episodes(case, [[["run", command], ["submit"]]])
    [[(looked, _, _), (_, reward, _)]] = steps
    assert reward == 0.0, looked
    lines = str(looked).split()
    assert lines[0] == "1", looked  # one commit: the base
    assert str(case.repo.root) not in str(looked) and "refs/tags" not in str(looked), looked
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "command",
    [
        "mkfifo .git/hold && git config include.path hold",
        "mkfifo .git/hold && git config includeIf.gitdir:/.path hold",
        "rm .git/config && mkfifo .git/config",
        "rm .git/index && mkfifo .git/index",
    ],
    ids=["include", "includeIf", "config", "index"],
)
def test_a_fifo_in_the_workspaces_git_does_not_hang_submit(case: Case, command: str) -> None:
    """git opens what the workspace's .git names (an include, its index) and waits on a
    FIFO for ever: before (issue 43), Submit hung. Now it scores 0 and says why."""
    case.base()
    steps, problems = run_episodes(case, [[["run", command], ["submit"]]])
    [[(_, _, ran_error), (summary, reward, _)]] = steps
    assert ran_error is None
    assert reward == 0.0 and "submission=0.00" in str(summary), summary
    assert not problems, "\n".join(problems)
