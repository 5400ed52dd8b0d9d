"""RepoEnv on real git repositories, with the bugfix example's real pytest tests."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import math
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from repogym._demo import EXAMPLES, build_example_repo
from repogym.env.actions import ApplyPatch, ReadFile, RunCommand, Submit, WriteFile
from repogym.env.episode import EnvError, RepoEnv
from repogym.errors import CommandNotFound, RepogymError, WorkspaceError
from repogym.graders import CompositeGrader, ConstraintGrader, TestGrader
from repogym.models import GradeComponent, GradeResult
from repogym.task import TASK_FILE, parse_task
from tests.support.repo import Repo
from tests.support.spec_example import NoTodoGrader

CORE = "src/slugify/core.py"
SOLUTION = (EXAMPLES / "bugfix" / "solution" / CORE).read_text()
BASELINE = (EXAMPLES / "bugfix" / "repo" / CORE).read_text()
PYTEST = "python -m pytest -q -p no:cacheprovider"


@pytest.fixture
def bugfix(tmp_path: Path) -> Path:
    """The bugfix example's baseline committed on `main` (and checked out as `submission`)."""
    return build_example_repo("bugfix", tmp_path / "bugfix", solution=False)


@pytest.fixture
def env(bugfix: Path) -> Iterator[RepoEnv]:
    with RepoEnv(bugfix, base="main") as env:
        env.reset()
        yield env


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every workspace, with one file, that no action may change."""
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret").write_text("untouched\n")
    return place


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def files_of(root: Path) -> dict[str, str]:
    """Every file under ``root`` (``.git`` included), with a hash of its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def observation_ok(observation: object) -> None:
    assert isinstance(observation, dict)
    assert set(observation) == {"output", "exit_code", "error"}


# -- a whole episode -----------------------------------------------------------------------


def test_read_fix_run_tests_and_submit_scores_one(bugfix: Path) -> None:
    base = git(bugfix, "rev-parse", "main").strip()
    with RepoEnv(bugfix, base="main") as env:
        observation, info = env.reset()
        observation_ok(observation)
        assert observation["error"] is None
        root = info["workspace"]
        assert info["base"] == base
        assert bugfix not in root.parents
        assert env.workspace.root == root
        assert git(root, "rev-parse", "HEAD").strip() == base
        assert git(root, "status", "--porcelain") == ""

        observation, reward, terminated, truncated, info = env.step(ReadFile(CORE))
        assert observation["output"] == BASELINE
        assert (reward, terminated, truncated, info) == (0.0, False, False, {"step": 1})

        observation, *_ = env.step(WriteFile(CORE, SOLUTION))
        assert observation["error"] is None
        assert (root / CORE).read_text() == SOLUTION

        observation, reward, terminated, _, info = env.step(RunCommand(PYTEST))
        assert observation["exit_code"] == 0, observation["output"]
        assert "4 passed" in observation["output"]
        assert info["command"].ok
        assert (reward, terminated) == (0.0, False)

        observation, reward, terminated, truncated, info = env.step(Submit())
        observation_ok(observation)
        assert (reward, terminated, truncated) == (1.0, True, False)
        result = info["result"]
        assert isinstance(result, GradeResult)
        assert result.passed
        assert result.files_changed == (CORE,)
        assert observation["output"] == result.summary()
        assert info["step"] == 4
        # Not kept: gone from disk as soon as the episode ends.
        assert not root.exists()
        with pytest.raises(EnvError, match="keep_workspace=True"):
            env.workspace  # noqa: B018


def test_empty_submission_scores_zero(env: RepoEnv) -> None:
    observation, reward, terminated, _, info = env.step(Submit())
    assert (reward, terminated) == (0.0, True)
    assert not info["result"].passed
    assert observation["output"].startswith("FAIL 0.000")


def test_apply_patch_with_a_real_diff_then_submit(env: RepoEnv, tmp_path: Path) -> None:
    solved = build_example_repo("bugfix", tmp_path / "solved", solution=True)
    patch = git(solved, "diff", "main", "submission")
    observation, reward, terminated, _, _ = env.step(ApplyPatch(patch))
    assert observation["exit_code"] == 0
    assert observation["error"] is None
    assert f"Applied patch {CORE} cleanly" in observation["output"]
    assert (reward, terminated) == (0.0, False)
    assert (env.workspace.root / CORE).read_text() == SOLUTION
    _, reward, _, _, info = env.step(Submit())
    assert reward == 1.0
    assert info["result"].passed


def test_a_patch_that_does_not_apply_is_an_error_observation(env: RepoEnv) -> None:
    patch = f"--- a/{CORE}\n+++ b/{CORE}\n@@ -1 +1 @@\n-no such line\n+x\n"
    observation, reward, terminated, truncated, _ = env.step(ApplyPatch(patch))
    assert observation["exit_code"] == 1
    assert observation["error"] == (
        f"git apply: patch failed: {CORE}:1; {CORE}: patch does not apply"
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert (env.workspace.root / CORE).read_text() == BASELINE

    observation, *_ = env.step(ApplyPatch(""))
    assert (
        observation["error"] == 'git apply: No valid patches in input (allow with "--allow-empty")'
    )


def test_run_command_reports_output_exit_code_and_timeout(env: RepoEnv) -> None:
    observation, reward, terminated, _, info = env.step(
        RunCommand("pwd; echo out; echo err >&2; exit 3")
    )
    assert observation == {
        "output": f"{env.workspace.root}\nout\nerr\n",
        "exit_code": 3,
        "error": None,
    }
    assert (reward, terminated) == (0.0, False)
    assert info["command"].exit_code == 3

    observation, *_ = env.step(RunCommand("sleep 5", timeout=0.2))
    assert observation["exit_code"] is None
    assert observation["error"] == "`sleep 5` timed out after 0.2 s"


def test_commands_get_the_task_environment_and_nothing_else(
    bugfix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (bugfix / TASK_FILE).read_text() + "env: {GREETING: hello}\npass_env: [LET_IN]\n"
    monkeypatch.setenv("LET_IN", "yes")
    monkeypatch.setenv("GITHUB_TOKEN", "do-not-leak")
    with RepoEnv(bugfix, base="main", task=parse_task(text)) as env:
        env.reset()
        observation, *_ = env.step(RunCommand('echo "$GREETING $LET_IN ${GITHUB_TOKEN:-none}"'))
    assert observation["output"] == "hello yes none\n"


def test_a_test_command_not_found_is_no_reward_and_the_episode_goes_on(bugfix: Path) -> None:
    text = (bugfix / TASK_FILE).read_text()
    assert "  command: python -m pytest" in text
    task = parse_task(text.replace("  command: python -m pytest", "  command: nosuchtool"))
    with RepoEnv(bugfix, base="main", task=task) as env:
        env.reset()
        with pytest.raises(CommandNotFound, match=r"^tests\.command: `nosuchtool` was not found"):
            env.step(Submit())
        assert env.steps == 0
        observation, *_ = env.step(RunCommand("echo still here"))
    assert observation["output"] == "still here\n"


# -- bad actions: error observations ---------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["../escaped", "src/../../escaped", "", "OUTSIDE/escaped", "link/escaped", "link"]
)
def test_writes_outside_the_workspace_are_refused(env: RepoEnv, outside: Path, path: str) -> None:
    root = env.workspace.root
    (root / "link").symlink_to(outside)
    before = files_of(outside.parent)
    path = path.replace("OUTSIDE", str(outside))
    observation, reward, terminated, truncated, _ = env.step(WriteFile(path, "overwritten\n"))
    assert observation["error"] is not None
    assert (
        "outside the work tree" in observation["error"]
        or "inside the work tree" in (observation["error"])
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert files_of(outside.parent) == before
    assert not (root.parent / "escaped").exists()


def test_reads_outside_the_workspace_are_refused(env: RepoEnv, outside: Path) -> None:
    (env.workspace.root / "link").symlink_to(outside / "secret")
    for path in ("link", str(outside / "secret"), "../secret"):
        observation, *_ = env.step(ReadFile(path))
        assert observation["output"] == ""
        assert observation["error"] is not None
        assert path in observation["error"]


def test_git_directory_is_off_limits(env: RepoEnv) -> None:
    config = (env.workspace.root / ".git" / "config").read_bytes()
    observation, *_ = env.step(WriteFile(".git/config", "[core]\n"))
    assert observation["error"] == ".git/config: inside .git, which is not part of the submission"
    assert (env.workspace.root / ".git" / "config").read_bytes() == config


def test_missing_files_and_directories_are_error_observations(env: RepoEnv) -> None:
    observation, *_ = env.step(ReadFile("nope.py"))
    assert observation["error"] == "nope.py: cannot read: No such file or directory"
    observation, *_ = env.step(ReadFile("src"))
    assert observation["error"] == "src: cannot read: Is a directory"
    observation, *_ = env.step(WriteFile("src", "x"))
    assert observation["error"] == "src: cannot write: Is a directory"


def test_a_tree_broken_beyond_grading_scores_zero(env: RepoEnv) -> None:
    env.step(RunCommand("rm -rf .git"))
    observation, reward, terminated, _, info = env.step(Submit())
    assert (reward, terminated) == (0.0, True)
    (component,) = info["result"].components
    assert component.name == "submission"
    assert component.messages[0].startswith("cannot grade: ")
    assert "not inside a git work tree" in component.messages[0]
    assert observation["output"] == "FAIL 0.000 (submission=0.00✗)"


def test_write_file_creates_directories_and_takes_bytes(env: RepoEnv) -> None:
    observation, *_ = env.step(WriteFile("src/new/data.bin", b"\0\1"))
    assert observation["output"] == "wrote 2 bytes to src/new/data.bin"
    assert (env.workspace.root / "src/new/data.bin").read_bytes() == b"\0\1"
    assert env.workspace.changed_files() == ("src/new/data.bin",)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("../x", "invalid path '../x'"),
        (".git/hooks/pre-commit", "invalid path '.git/hooks/pre-commit'"),
        ("link/x", "affected file 'link/x' is beyond a symbolic link"),
    ],
)
def test_patches_leaving_the_tree_are_refused(
    env: RepoEnv, outside: Path, target: str, message: str
) -> None:
    (env.workspace.root / "link").symlink_to(outside)
    before = files_of(outside.parent)
    patch = (
        f"diff --git a/{target} b/{target}\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/{target}\n@@ -0,0 +1 @@\n+evil\n"
    )
    observation, reward, terminated, _, _ = env.step(ApplyPatch(patch))
    assert observation["error"] == f"git apply: {message}"
    assert (reward, terminated) == (0.0, False)
    assert files_of(outside.parent) == before
    assert not (env.workspace.root / ".git" / "hooks" / "pre-commit").exists()


# -- bad actions: exceptions -----------------------------------------------------------------


def test_step_before_reset_raises(bugfix: Path) -> None:
    env = RepoEnv(bugfix, base="main")
    with pytest.raises(EnvError, match=r"^RepoEnv.step\(\) before reset\(\): call env.reset\(\)"):
        env.step(ReadFile(CORE))
    with pytest.raises(EnvError, match="before reset"):
        env.workspace  # noqa: B018


class FixedGradeEnv(RepoEnv):
    """Grades every submission 0.5 without running anything, for tests about the episode."""

    def _do_submit(self) -> GradeResult:
        assert self.workspace.root.is_dir()  # still there while grading
        component = GradeComponent(name="fixed", score=0.5, passed=False)
        return GradeResult(score=0.5, passed=False, components=(component,))


def test_step_after_submit_and_after_close_raises(bugfix: Path) -> None:
    env = FixedGradeEnv(bugfix, base="main")
    env.reset()
    assert env.step(Submit())[1:3] == (0.5, True)
    with pytest.raises(EnvError, match=r"after the episode ended") as caught:
        env.step(ReadFile(CORE))
    assert isinstance(caught.value, RepogymError)
    assert len(caught.value.lines) == 1
    env.close()
    with pytest.raises(EnvError, match=r"after close\(\)"):
        env.step(ReadFile(CORE))


def test_do_submit_must_return_a_grade_result(bugfix: Path) -> None:
    class Broken(RepoEnv):
        def _do_submit(self) -> GradeResult:
            return 1.0  # type: ignore[return-value]

    with Broken(bugfix, base="main") as env:
        env.reset()
        with pytest.raises(TypeError, match="_do_submit\\(\\) returned float, not a GradeResult"):
            env.step(Submit())


def test_unknown_action_raises(env: RepoEnv) -> None:
    expected = "takes RunCommand, ReadFile, WriteFile, ApplyPatch, Submit; got str"
    with pytest.raises(EnvError, match=expected):
        env.step("ls")  # type: ignore[arg-type]
    assert env.steps == 0


def test_actions_are_frozen_values() -> None:
    action = RunCommand("ls")
    assert action.timeout > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.command = "rm -rf /"  # type: ignore[misc]
    assert WriteFile("a", "b") == WriteFile("a", "b")
    with pytest.raises(ValueError, match="timeout"):
        RunCommand("ls", timeout=0)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: RunCommand(None), TypeError, "RunCommand command must be str, not NoneType"),
        (lambda: RunCommand("ls", timeout="5"), TypeError, "RunCommand timeout must be a number"),
        (lambda: RunCommand("ls", timeout=1e20), ValueError, "at most 604800"),
        (lambda: RunCommand("ls", timeout=math.inf), ValueError, "at most 604800"),
        (lambda: ReadFile(b"a"), TypeError, "ReadFile path must be str, not bytes"),
        (lambda: WriteFile("a", 123), TypeError, "WriteFile content must be str or bytes, not int"),
        (lambda: ApplyPatch(None), TypeError, "ApplyPatch patch must be str, not NoneType"),
    ],
)
def test_actions_of_the_wrong_type_say_which_field(
    make: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        make()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_constructor_arguments(bugfix: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not name a commit"):
        RepoEnv(bugfix, base="no-such-branch")
    with pytest.raises(ValueError, match="max_steps"):
        RepoEnv(bugfix, base="main", max_steps=0)
    bare = Repo(tmp_path / "bare")
    bare.commit("no task", {"a.py": "x = 1\n"})
    with pytest.raises(WorkspaceError, match=r"\.repogym\.yml not found at main"):
        RepoEnv(bare.root, base="main")


# -- episode limits and workspace lifetime ---------------------------------------------------


def test_max_steps_truncates_without_grading(bugfix: Path) -> None:
    with RepoEnv(bugfix, base="main", max_steps=2) as env:
        _, info = env.reset()
        assert env.step(RunCommand("true"))[1:4] == (0.0, False, False)
        _, reward, terminated, truncated, info = env.step(RunCommand("true"))
        assert (reward, terminated, truncated) == (0.0, False, True)
        assert "result" not in info
        with pytest.raises(EnvError, match="truncated"):
            env.step(Submit())
        # A new episode gets the full budget again.
        env.reset()
        assert env.step(RunCommand("true"))[3] is False


def test_reset_gives_a_fresh_workspace_and_discards_the_old_one(env: RepoEnv) -> None:
    first = env.workspace.root
    env.step(WriteFile(CORE, SOLUTION))
    _, info = env.reset()
    assert info["workspace"] != first
    assert not first.exists()
    assert env.steps == 0
    assert env.step(ReadFile(CORE))[0]["output"] == BASELINE


def test_close_and_the_context_manager_remove_the_workspace(bugfix: Path) -> None:
    with RepoEnv(bugfix, base="main") as env:
        _, info = env.reset()
        assert info["workspace"].is_dir()
    assert not info["workspace"].exists()
    env.close()  # again: nothing left to do


def test_a_forgotten_environment_removes_its_workspace(bugfix: Path) -> None:
    env = RepoEnv(bugfix, base="main")
    root = env.reset()[1]["workspace"]
    del env
    gc.collect()
    assert not root.exists()


def test_keep_workspace_keeps_it_after_submit_reset_and_close(bugfix: Path) -> None:
    kept: list[Path] = []
    try:
        with FixedGradeEnv(bugfix, base="main", keep_workspace=True) as env:
            kept.append(env.reset()[1]["workspace"])
            env.step(WriteFile(CORE, SOLUTION))
            env.step(Submit())
            assert env.workspace.root == kept[0]
            assert env.workspace.changed_files() == (CORE,)
            kept.append(env.reset()[1]["workspace"])
        assert all(path.is_dir() for path in kept)
        assert (kept[0] / CORE).read_text() == SOLUTION
    finally:
        for path in kept:
            shutil.rmtree(path)


def test_the_source_repository_is_untouched(bugfix: Path) -> None:
    (bugfix / "untracked.txt").write_text("mine\n")
    git(bugfix, "status")  # refresh the index's stat cache once, before the snapshot

    def snapshot() -> tuple[dict[str, str], str, str]:
        status = git(bugfix, "--no-optional-locks", "status", "--porcelain", "-uall", "--ignored")
        return files_of(bugfix), status, git(bugfix, "for-each-ref")

    before = snapshot()
    with RepoEnv(bugfix, base="main") as env:
        env.reset()
        env.step(WriteFile(CORE, SOLUTION))
        env.step(RunCommand("git add -A && git -c user.name=a -c user.email=a@b commit -qm x"))
        env.step(RunCommand("git branch agent && git tag agent-tag && git gc --quiet"))
        env.step(RunCommand("git push origin HEAD:refs/heads/pushed"))  # there is no remote
        env.step(Submit())
        env.reset()
    assert snapshot() == before
    assert not (bugfix / ".git" / "worktrees").exists()


# -- custom graders: the spec's two routes ("Writing a grader") --------------------------------


def spec_grader() -> CompositeGrader:
    return CompositeGrader(
        [ConstraintGrader(), TestGrader(), NoTodoGrader()],
        weights={"tests": 0.8, "no_todo": 0.2},
    )


class NoTodoEnv(RepoEnv):
    """Route 1: a subclass that grades with its own composite."""

    def _do_submit(self) -> GradeResult:
        return spec_grader().grade_result(self.workspace)


FIX_WITH_TODO = SOLUTION + "# TODO: handle emoji\n"


def test_custom_grader_by_overriding_do_submit(bugfix: Path) -> None:
    with NoTodoEnv(bugfix, base="main") as env:
        env.reset()
        env.step(WriteFile(CORE, FIX_WITH_TODO))
        observation, reward, terminated, _, info = env.step(Submit())
    assert terminated
    assert reward == pytest.approx(0.8)
    result = info["result"]
    assert [c.name for c in result.components] == ["constraints", "tests", "no_todo"]
    assert result.component("no_todo").messages == (f"TODO in {CORE}",)
    assert not result.passed
    assert observation["output"] == result.summary()


def test_custom_grader_on_the_kept_workspace_after_submit(bugfix: Path) -> None:
    with RepoEnv(bugfix, base="main", keep_workspace=True) as env:
        env.reset()
        env.step(WriteFile(CORE, FIX_WITH_TODO))
        _, reward, _, _, _ = env.step(Submit())
        assert reward == 1.0  # the task's own graders do not mind the TODO
        workspace = env.workspace
        try:
            result = spec_grader().grade_result(workspace)
        finally:
            shutil.rmtree(workspace.root)
    assert result.score == pytest.approx(0.8)
    assert result.component("tests").passed
    assert not result.component("no_todo").passed


def test_task_from_a_path_and_repo_from_a_subdirectory(bugfix: Path, tmp_path: Path) -> None:
    task_file = tmp_path / "task.yml"
    task_file.write_text((bugfix / TASK_FILE).read_text())
    sha = git(bugfix, "rev-parse", "main").strip()
    with RepoEnv(bugfix / "src", base=sha, task=task_file) as env:
        assert env.repo == bugfix.resolve()
        assert env.task.source == str(task_file)
        observation, info = env.reset()
        assert sha[:12] in observation["output"]
        assert (info["workspace"] / TASK_FILE).is_file()


# Ties in the order first seen, not alphabetically: the hidden test fails.
NO_TIE_BREAK = """import re
from collections import Counter


def words(text):
    return re.findall(r"[a-z0-9']+", text.lower())


def word_count(text):
    return len(words(text))


def top_words(text, n):
    return Counter(words(text)).most_common(n)
"""
# The workspace's objects are one pack (issue 43), which git reads before a loose object
# of the same id: the agent turns them into loose objects first, then overwrites one.
FORGE_HIDDEN = """git rev-parse HEAD:.repogym/hidden/tests/test_top_words_hidden.py > /tmp/sha
packs=$(mktemp -d) && mv .git/objects/pack/* "$packs"/
for pack in "$packs"/*.pack; do git unpack-objects -q < "$pack"; done
python3 - <<'EOF'
import os, zlib
sha = open("/tmp/sha").read().strip()
forged = b"def test_ties_break_alphabetically():\\n    pass\\n"
os.makedirs(os.path.join(".git", "objects", sha[:2]), exist_ok=True)
path = os.path.join(".git", "objects", sha[:2], sha[2:])
os.chmod(path, 0o644)
with open(path, "wb") as out:
    out.write(zlib.compress(b"blob %d\\0" % len(forged) + forged))
EOF"""


def test_a_rubric_forged_in_the_workspace_is_not_kept_for_the_grade(tmp_path: Path) -> None:
    """The agent plants a loose object under the id of the base's hidden test, then the
    caller reads ``env.workspace.rubric_tree`` (through the workspace's git: the forged
    test): that tree must not become the one the process's grades share, from which the
    Submit's grade injects the hidden tests (issue 23)."""
    repo = build_example_repo("feature", tmp_path / "feature", solution=False)
    with RepoEnv(repo, base="main") as env:
        env.reset()
        env.step(WriteFile("src/textstats/words.py", NO_TIE_BREAK))
        init = EXAMPLES / "feature/solution/src/textstats/__init__.py"
        env.step(WriteFile("src/textstats/__init__.py", init.read_text()))
        assert env.step(RunCommand(FORGE_HIDDEN))[0]["exit_code"] == 0
        hidden = env.workspace.rubric_tree / ".repogym/hidden/tests/test_top_words_hidden.py"
        assert hidden.read_text() == "def test_ties_break_alphabetically():\n    pass\n"
        *_, info = env.step(Submit())
    [tests] = [c for c in info["result"].components if c.name == "tests"]
    assert tests.score == pytest.approx(2 / 3), tests.messages
