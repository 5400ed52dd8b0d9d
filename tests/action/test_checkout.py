"""repogym_action.checkout against real repositories: an origin with refs/pull/N/head and
refs/pull/N/merge, and a workspace cloned from it the way actions/checkout clones one."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import repogym
from repogym_action.checkout import Checkout, prepare
from repogym_action.event import PullRequest, Target
from repogym_action.gitcall import CheckoutError
from repogym_action.settings import GIT_PASSED
from tests.action.gitrepo import (
    EXTRAHEADER,
    Origin,
    Pull,
    actions_checkout,
    checkout_ref,
    files_of,
    git,
)

NUMBER = 7
FIXED = "def parse(text):\n    return text.strip()\n"


def make_origin(root: Path, *, pr_commits: int = 1, base_ahead: int = 1) -> tuple[Origin, str]:
    """An origin whose pull request 7 has ``pr_commits`` commits (the first one fixes
    src/app.py) while main moved ``base_ahead`` commits on; the fork point's sha."""
    origin = Origin(root / "origin.git")
    origin.commit("main", {"src/app.py": "def parse(text):\n    return text\n"}, count=3)
    fork = origin.sha("refs/heads/main")
    origin.commit("feature", {"src/app.py": FIXED}, count=pr_commits, start=fork)
    if base_ahead:
        origin.commit("main", {"NEWS.md": "news\n"}, count=base_ahead)
    origin.open_pull(NUMBER, head="feature")
    return origin, fork


def target_of(pull: Pull, *, base_ref: str | None = None, base_sha: str | None = None) -> Target:
    """The target of a pull_request event for ``pull``; ``base_ref`` as the `base` input."""
    request = PullRequest(
        number=pull.number,
        base_ref=pull.base_ref,
        base_sha=pull.base_sha,
        head_ref=pull.head_ref,
        head_sha=pull.head_sha,
        base_repo="octo-org/octo-repo",
        head_repo="octo-org/octo-repo",
        html_url=f"https://github.com/octo-org/octo-repo/pull/{pull.number}",
    )
    return Target(
        event="pull_request",
        pull=request,
        base_ref=base_ref or pull.base_ref,
        base_sha=pull.base_sha if base_ref is None else base_sha,
        head_sha=pull.head_sha,
        comment=True,
    )


def run_prepare(workspace: Path, target: Target, into: Path) -> tuple[Checkout, list[str]]:
    lines: list[str] = []
    env = {name: os.environ[name] for name in GIT_PASSED if name in os.environ}
    return prepare(workspace, target, into=into, log=lines.append, env=env), lines


def assert_private_clone(checkout: Checkout, origin: Origin, pull: Pull) -> None:
    """The clone has the head checked out, detached and clean, the base's branch, and
    nothing that reaches origin."""
    tree = checkout.tree
    assert git(tree, "rev-parse", "HEAD").strip() == pull.head_sha
    assert git(tree, "rev-parse", "HEAD^{tree}") == git(origin.path, "rev-parse", "feature^{tree}")
    assert (tree / "src/app.py").read_text() == FIXED
    assert git(tree, "status", "--porcelain") == ""
    symbolic = subprocess.run(["git", "-C", tree, "symbolic-ref", "-q", "HEAD"], check=False)
    assert symbolic.returncode == 1  # detached
    assert git(tree, "rev-parse", f"refs/heads/{checkout.base_ref}").strip() == checkout.base
    assert git(tree, "merge-base", checkout.base_ref, "HEAD").strip() == checkout.merge_base
    config = (tree / ".git" / "config").read_text()
    assert "remote" not in config
    assert "extraheader" not in config
    assert "AUTHORIZATION" not in config
    assert git(tree, "remote") == ""


@pytest.mark.parametrize(
    ("pr_commits", "base_ahead", "deepened"),
    [(1, 1, False), (60, 1, True), (1, 300, True)],
    ids=["merge-base-1-deep", "pr-60-commits", "base-300-ahead"],
)
def test_prepare_fetches_down_to_the_merge_base(
    tmp_path: Path, pr_commits: int, base_ahead: int, deepened: bool
) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=pr_commits, base_ahead=base_ahead)
    pull = origin.pull(NUMBER)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    assert git(workspace, "rev-parse", "--is-shallow-repository").strip() == "true"

    checkout, lines = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert (checkout.base, checkout.head, checkout.merge_base) == (
        pull.base_sha,
        pull.head_sha,
        fork,
    )
    assert checkout.base_ref == "main"
    assert_private_clone(checkout, origin, pull)
    assert any("deepening" in line for line in lines) == deepened
    assert f"http.{origin.url}/.extraheader {EXTRAHEADER}" in git(
        workspace, "config", "--get-regexp", "extraheader"
    )


def test_a_complete_workspace_needs_no_fetch(tmp_path: Path) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=5, base_ahead=5)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)
    git(workspace, "fetch", "--quiet", "--unshallow", "origin", pull.base_sha, pull.head_sha)
    git(workspace, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())

    checkout, lines = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert checkout.merge_base == fork
    assert not any("fetching" in line for line in lines)
    assert_private_clone(checkout, origin, pull)


def test_credentials_included_from_another_file_stay_out_of_the_clone(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path, pr_commits=60)
    workspace = tmp_path / "workspace"
    credentials = tmp_path / "runner_temp" / "git-credentials-1.config"
    credentials.parent.mkdir()
    actions_checkout(origin, NUMBER, workspace, credentials_file=credentials)
    pull = origin.pull(NUMBER)

    checkout, _ = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert_private_clone(checkout, origin, pull)
    assert "includeIf" not in (checkout.tree / ".git" / "config").read_text()
    assert EXTRAHEADER in credentials.read_text()


@pytest.mark.parametrize("included", [False, True], ids=["in .git/config", "included"])
def test_the_files_with_credentials_are_left_readable_by_their_owner_only(
    tmp_path: Path, included: bool
) -> None:
    # The submission's code runs as another user, who could read the workspace's
    # .git/config (tests/container/test_malicious_pr.py).
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    credentials = tmp_path / "runner_temp" / "git-credentials-1.config"
    credentials.parent.mkdir()
    actions_checkout(origin, NUMBER, workspace, credentials_file=credentials if included else None)
    holder = credentials if included else workspace / ".git" / "config"
    holder.chmod(0o644)  # as actions/checkout leaves it

    run_prepare(workspace, target_of(origin.pull(NUMBER)), tmp_path / "tree")

    assert stat.S_IMODE(holder.stat().st_mode) == 0o600
    assert EXTRAHEADER in holder.read_text()  # still there for the job's later steps


def test_the_users_global_config_is_neither_read_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin, _ = make_origin(tmp_path, pr_commits=60)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    home = tmp_path / "home"
    home.mkdir()
    # Read, this would send every fetch from a file:// URL to a path that does not exist.
    user_config = (
        f'[user]\n\tname = someone\n[url "{tmp_path / "nowhere"}/"]\n\tinsteadOf = file://\n'
    )
    (home / ".gitconfig").write_text(user_config)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    pull = origin.pull(NUMBER)

    checkout, _ = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert_private_clone(checkout, origin, pull)
    assert (home / ".gitconfig").read_text() == user_config
    assert sorted(path.name for path in home.iterdir()) == [".gitconfig"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_workspace_of_another_uid(tmp_path: Path) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=60)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    subprocess.run(["chown", "-R", "12345:12345", workspace], check=True)
    plain = subprocess.run(
        ["git", "-C", workspace, "status"],
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode != 0
    assert "dubious ownership" in plain.stderr
    pull = origin.pull(NUMBER)

    checkout, _ = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert checkout.merge_base == fork
    assert_private_clone(checkout, origin, pull)


def test_an_origin_without_the_history_asks_for_fetch_depth_0(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path, pr_commits=60)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)
    # Origin loses the history: replaced by a clone 3 commits deep of every ref.
    shallow = tmp_path / "shallow.git"
    clone = ["clone", "--quiet", "--bare", "--depth=3", "--no-single-branch"]
    git(tmp_path, *clone, origin.url, str(shallow))
    git(shallow, "fetch", "--quiet", "--depth=3", origin.url, "+refs/pull/*:refs/pull/*")
    git(workspace, "remote", "set-url", "origin", shallow.as_uri())

    with pytest.raises(CheckoutError) as raised:
        run_prepare(workspace, target_of(pull), tmp_path / "tree")

    message = str(raised.value)
    assert "\n" not in message
    assert "does not reach the merge base" in message
    assert "`fetch-depth: 0`" in message


def test_a_failing_fetch_names_gits_reason_and_the_setting(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)
    shutil.rmtree(origin.path)

    with pytest.raises(CheckoutError) as raised:
        run_prepare(workspace, target_of(pull), tmp_path / "tree")

    message = str(raised.value)
    assert "\n" not in message
    assert "`git fetch origin` failed: fatal:" in message
    assert "does not appear to be a git repository" in message
    assert "`fetch-depth: 0`" in message


def test_without_persisted_credentials_the_error_says_to_keep_them(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace, persist_credentials=False)
    pull = origin.pull(NUMBER)
    shutil.rmtree(origin.path)

    with pytest.raises(CheckoutError, match=r"keep `persist-credentials: true`"):
        run_prepare(workspace, target_of(pull), tmp_path / "tree")


def test_an_origin_that_refuses_shas_is_fetched_by_refs(tmp_path: Path) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=60)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)
    # main moves on after the event: its sha is no longer a tip, which protocol v0
    # (an older server) will not give by sha.
    origin.commit("main", {"NEWS.md": "later\n"})
    git(workspace, "config", "protocol.version", "0")
    refused = subprocess.run(
        ["git", "-C", workspace, "fetch", "--depth=1", "origin", pull.base_sha],
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull},
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0

    checkout, _ = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert (checkout.base, checkout.merge_base) == (pull.base_sha, fork)
    assert_private_clone(checkout, origin, pull)


def test_a_head_that_is_not_on_origin(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)
    gone = Origin(tmp_path / "elsewhere.git").commit("main", {"x": "y\n"})
    target = dataclasses.replace(target_of(pull), head_sha=gone)

    with pytest.raises(CheckoutError, match=rf"the head commit {gone} is not on origin"):
        run_prepare(workspace, target, tmp_path / "tree")


def test_the_base_input_names_a_branch_of_origin(tmp_path: Path) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=60)
    release = origin.commit("release", {"RELEASE": "1\n"}, start=fork)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)

    checkout, _ = run_prepare(workspace, target_of(pull, base_ref="release"), tmp_path / "tree")

    assert (checkout.base_ref, checkout.base, checkout.merge_base) == ("release", release, fork)
    assert_private_clone(checkout, origin, pull)


def test_a_base_input_that_names_nothing(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    target = target_of(origin.pull(NUMBER), base_ref="no-such-branch")

    with pytest.raises(CheckoutError, match=r"^input `base`: `no-such-branch` names no branch"):
        run_prepare(workspace, target, tmp_path / "tree")


def test_a_base_with_no_common_history(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    origin.commit("orphan", {"other.txt": "unrelated\n"}, count=2)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    target = target_of(origin.pull(NUMBER), base_ref="orphan")

    with pytest.raises(CheckoutError, match=r"have no common ancestor \(unrelated histories\)"):
        run_prepare(workspace, target, tmp_path / "tree")


def test_a_workspace_that_is_no_checkout(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    (tmp_path / "workspace").mkdir()

    with pytest.raises(CheckoutError, match=r"not the top of a git checkout .*actions/checkout"):
        run_prepare(tmp_path / "workspace", target_of(origin.pull(NUMBER)), tmp_path / "tree")


def test_the_clone_goes_only_into_an_empty_directory(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    into = tmp_path / "tree"
    into.mkdir()
    (into / "leftover").write_text("x")

    with pytest.raises(CheckoutError, match=r"exists and is not an empty directory"):
        run_prepare(workspace, target_of(origin.pull(NUMBER)), into)


def test_a_merge_group_grades_the_queues_head(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path, pr_commits=3, base_ahead=60)
    base = origin.sha("refs/heads/main")
    queue = "gh-readonly-queue/main/pr-7-" + base
    head = origin.commit(queue, {"src/app.py": FIXED}, message="Merge pull request #7", start=base)
    workspace = tmp_path / "workspace"
    assert checkout_ref(origin, f"refs/heads/{queue}", workspace) == head
    target = Target(
        event="merge_group", pull=None, base_ref="main", base_sha=base, head_sha=head, comment=False
    )

    checkout, _ = run_prepare(workspace, target, tmp_path / "tree")

    assert (checkout.base, checkout.head, checkout.merge_base) == (base, head, base)
    assert checkout.base_ref == "main"
    assert (checkout.tree / "src/app.py").read_text() == FIXED


def test_history_beyond_the_deepenings_is_fetched_whole(tmp_path: Path) -> None:
    origin, fork = make_origin(tmp_path, pr_commits=1700)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    pull = origin.pull(NUMBER)

    checkout, lines = run_prepare(workspace, target_of(pull), tmp_path / "tree")

    assert checkout.merge_base == fork
    assert "fetching the whole history to reach the merge base" in lines
    assert git(workspace, "rev-parse", "--is-shallow-repository").strip() == "false"
    assert not (checkout.tree / ".git" / "shallow").exists()
    assert_private_clone(checkout, origin, pull)


def test_a_base_input_is_never_an_option_to_git(tmp_path: Path) -> None:
    origin, _ = make_origin(tmp_path)
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    marker = tmp_path / "ran"
    target = target_of(
        origin.pull(NUMBER), base_ref=f"--upload-pack=touch {marker};git-upload-pack"
    )

    with pytest.raises(CheckoutError, match=r"^input `base`: `--upload-pack="):
        run_prepare(workspace, target, tmp_path / "tree")
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_repogym_grades_the_clone_of_another_uids_workspace(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "bugfix"
    origin = Origin(tmp_path / "origin.git")
    fork = origin.commit("main", files_of(example / "repo"), message="the task")
    origin.commit("fix", files_of(example / "solution"), start=fork, count=70)
    origin.commit("main", {"NEWS.md": "news\n"}, count=5)
    pull = origin.open_pull(NUMBER, head="fix")
    workspace = tmp_path / "workspace"
    actions_checkout(origin, NUMBER, workspace)
    subprocess.run(["chown", "-R", "12345:12345", workspace], check=True)

    checkout, _ = run_prepare(workspace, target_of(pull), tmp_path / "tree")
    grading = repogym.grade(checkout.tree, base=checkout.base_ref)

    assert (grading.base_ref, grading.merge_base) == ("main", fork)
    assert grading.result.passed, grading.result.summary()
