"""Workspace: a submission tree against its baseline commit, on real git repositories."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from repogym.errors import WorkspaceError
from repogym.task import parse_task
from repogym.tree import baselines as _baselines
from repogym.tree import git as _git
from repogym.tree.changes import pathspec_groups
from repogym.workspace import FileChange, Workspace
from tests.support.repo import Repo

TASK = """\
version: 1
type: refactor
constraints:
  max_function_length: 50
"""

LOOSE_TASK = TASK.replace("50", "1000")


def change(path: str, status: str, added: int, removed: int, binary: bool = False) -> FileChange:
    return FileChange(path=path, status=status, added=added, removed=removed, binary=binary)


def based(repo: Repo, files: dict[str, str | bytes] | None = None, task: str = TASK) -> str:
    """Commit the baseline (the task file plus ``files``) and return its sha."""
    return repo.commit("base", {".repogym.yml": task, **(files or {})})


def index_state(repo: Repo) -> tuple[bytes, int]:
    index = repo.root / ".git" / "index"
    return index.read_bytes(), index.stat().st_mtime_ns


def status(repo: Repo) -> str:
    # `git status` may itself refresh the index, so it is read after index_state().
    return repo.git("status", "--porcelain=v1", "-uall", "--ignored") + repo.git("stash", "list")


# -- opening ------------------------------------------------------------------------------


def test_open_resolves_base_ref_to_sha_and_reads_task_at_base(repo: Repo) -> None:
    sha = based(repo, {"a.py": "x = 1\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.base == sha
    assert ws.base_ref == "main"
    assert ws.root == repo.root.resolve()
    assert ws.task.type == "refactor"
    assert ws.task.constraints.max_function_length == 50
    assert ws.task.source == ".repogym.yml@main"


def test_open_accepts_a_sha_a_tag_and_a_subdirectory(repo: Repo) -> None:
    sha = based(repo, {"src/a.py": "x = 1\n"})
    repo.git("tag", "v1")
    repo.commit("later", {"src/a.py": "x = 2\n"})
    by_sha = Workspace.open(repo.root, base=sha)
    by_tag = Workspace.open(repo.root / "src", base="v1")
    assert by_sha.base == by_tag.base == sha
    assert by_tag.root == repo.root.resolve()
    assert by_sha.changed_files() == by_tag.changed_files() == ("src/a.py",)


def test_submission_editing_its_own_task_file_does_not_change_the_task(repo: Repo) -> None:
    based(repo)
    repo.branch("pr")
    repo.commit("loosen the rubric", {".repogym.yml": LOOSE_TASK})
    repo.write({".repogym.yml": LOOSE_TASK.replace("refactor", "feature")})
    ws = Workspace.open(repo.root, base="main")
    assert ws.task.type == "refactor"
    assert ws.task.constraints.max_function_length == 50
    assert ws.changed_files() == (".repogym.yml",)


def test_task_from_a_path_overrides_the_base_task(repo: Repo, tmp_path: Path) -> None:
    based(repo)
    task_file = tmp_path / "other.yml"
    task_file.write_text(TASK.replace("50", "7"))
    ws = Workspace.open(repo.root, base="main", task=task_file)
    assert ws.task.constraints.max_function_length == 7
    assert ws.task.source == str(task_file)
    assert Workspace.open(repo.root, base="main", task=str(task_file)).task == ws.task


def test_task_given_as_a_loaded_task_is_used_as_is(repo: Repo) -> None:
    repo.commit("no task file here", {"a.py": "x = 1\n"})
    task = parse_task(TASK.replace("50", "9"), "given.yml")
    ws = Workspace.open(repo.root, base="main", task=task)
    assert ws.task is task


def test_missing_task_file_at_base_is_a_one_line_error(repo: Repo) -> None:
    repo.commit("base", {"a.py": "x = 1\n"})
    repo.write({".repogym.yml": TASK})  # only in the work tree: must not be used
    with pytest.raises(WorkspaceError) as caught:
        Workspace.open(repo.root, base="main")
    assert len(caught.value.lines) == 1
    assert "\n" not in str(caught.value)
    assert str(caught.value) == (
        ".repogym.yml not found at main: commit a task file on the base branch, "
        "or pass one with --task FILE"
    )


def test_base_ref_that_does_not_exist_is_an_error_naming_it(repo: Repo) -> None:
    based(repo)
    with pytest.raises(WorkspaceError) as caught:
        Workspace.open(repo.root, base="no-such-branch")
    assert len(caught.value.lines) == 1
    assert "`no-such-branch` does not name a commit" in str(caught.value)


def test_an_ambiguous_base_is_an_error_naming_both_refs(repo: Repo) -> None:
    based(repo)
    repo.branch("feature")
    repo.commit("more", {"b.py": "y = 2\n"})
    repo.git("tag", "main")  # a tag that shares the branch's name, on another commit
    with pytest.raises(WorkspaceError) as caught:
        Workspace.open(repo.root, base="main")
    assert str(caught.value) == (
        f"{repo.root}: `main` is ambiguous: it names refs/tags/main and refs/heads/main; "
        "pass the full name of the one you mean, such as refs/heads/main"
    )
    main = repo.git("rev-parse", "refs/heads/main").strip()
    assert Workspace.open(repo.root, base="refs/heads/main").base == main


@pytest.mark.parametrize("kind", ["symlink", "directory"])
def test_a_task_file_that_is_not_a_file_at_the_base(repo: Repo, kind: str) -> None:
    repo.write({"real.yml": TASK})
    if kind == "symlink":
        (repo.root / ".repogym.yml").symlink_to("real.yml")
    else:
        repo.write({".repogym.yml/task.yml": TASK})
    repo.commit("base")
    with pytest.raises(WorkspaceError) as caught:
        Workspace.open(repo.root, base="main")
    assert str(caught.value) == (
        f".repogym.yml at main is a {kind}: commit the task file itself there, "
        "or pass one with --task FILE"
    )


def test_root_outside_any_work_tree_is_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match="not inside a git work tree"):
        Workspace.open(plain, base="main")


# -- the baseline --------------------------------------------------------------------------


def test_baseline_is_the_base_tree_outside_root_and_reused(repo: Repo) -> None:
    sha = based(repo, {"src/a.py": "x = 1\n", "docs/readme.md": "hi\n"})
    repo.commit("after base", {"src/a.py": "x = 2\n", "later.txt": "later\n"})
    repo.write({"src/a.py": "x = 3\n", "untracked.txt": "u\n"})
    ws = Workspace.open(repo.root, base=sha)

    baseline = ws.baseline
    assert baseline.is_dir()
    assert repo.root.resolve() not in baseline.resolve().parents
    assert not baseline.resolve().is_relative_to(repo.root.resolve())
    files = sorted(p.relative_to(baseline).as_posix() for p in baseline.rglob("*") if p.is_file())
    assert files == [".repogym.yml", "docs/readme.md", "src/a.py"]
    assert (baseline / "src" / "a.py").read_text() == "x = 1\n"
    assert (baseline / ".repogym.yml").read_text() == TASK

    assert ws.baseline == baseline  # second access: the same tree, not a new copy
    assert Workspace.open(repo.root, base="main~1").baseline == baseline
    # The work tree is untouched by materialising.
    assert (repo.root / "src" / "a.py").read_text() == "x = 3\n"


def test_baseline_of_another_commit_is_another_tree(repo: Repo) -> None:
    first = based(repo, {"a.txt": "one\n"})
    second = repo.commit("two", {"a.txt": "two\n"})
    one = Workspace.open(repo.root, base=first).baseline
    two = Workspace.open(repo.root, base=second).baseline
    assert one != two
    assert (one / "a.txt").read_text() == "one\n"
    assert (two / "a.txt").read_text() == "two\n"


def test_a_process_keeps_the_trees_of_its_most_recent_bases_only(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch worker grades jobs of many bases: past KEEP, the least recently used tree
    goes, its directory with it, and is made again when it is asked for."""
    monkeypatch.setattr(_baselines, "KEEP", 2)
    monkeypatch.setattr(_baselines, "_SHARED", type(_baselines._SHARED)())
    shas = [based(repo, {"a.txt": "0\n"})]
    shas += [repo.commit(str(n), {"a.txt": f"{n}\n"}) for n in (1, 2)]
    first = Workspace.open(repo.root, base=shas[0]).baseline
    second = Workspace.open(repo.root, base=shas[1]).baseline
    assert Workspace.open(repo.root, base=shas[0]).baseline == first  # used again: kept
    third = Workspace.open(repo.root, base=shas[2]).baseline  # the second goes
    assert first.is_dir() and third.is_dir() and not second.exists()
    again = Workspace.open(repo.root, base=shas[1]).baseline
    assert (again / "a.txt").read_text() == "1\n" and not first.exists()


# -- changed files and diff stats -----------------------------------------------------------


def test_no_change_means_nothing_changed(repo: Repo) -> None:
    based(repo, {"a.py": "x = 1\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ()
    assert ws.diff_stats() == {}
    assert ws.patch() == ""


def test_changed_files_sorted_with_every_kind_of_change(repo: Repo) -> None:
    based(
        repo,
        {
            "src/b.py": "b = 1\n",
            "src/old.py": "old = 1\n",
            "gone.txt": "one\ntwo\n",
            "same.txt": "same\n",
        },
    )
    repo.write({".gitignore": "*.log\nbuild/\n"})
    repo.git("add", ".gitignore")
    repo.git("commit", "-q", "-m", "ignore logs")
    repo.git("mv", "src/old.py", "src/new.py")  # staged rename
    repo.delete("gone.txt")  # unstaged deletion
    repo.write(
        {
            "src/b.py": "b = 2\nc = 3\n",  # unstaged modification
            "zeta.txt": "z\n",  # untracked
            "debug.log": "ignored\n",  # ignored
            "build/out.txt": "ignored\n",  # ignored directory
        }
    )
    ws = Workspace.open(repo.root, base="main~1")
    assert ws.changed_files() == (
        ".gitignore",
        "gone.txt",
        "src/b.py",
        "src/new.py",
        "src/old.py",
        "zeta.txt",
    )
    assert ws.diff_stats() == {
        ".gitignore": change(".gitignore", "A", 2, 0),
        "gone.txt": change("gone.txt", "D", 0, 2),
        "src/b.py": change("src/b.py", "M", 2, 1),
        "src/new.py": change("src/new.py", "A", 1, 0),
        "src/old.py": change("src/old.py", "D", 0, 1),
        "zeta.txt": change("zeta.txt", "A", 1, 0),
    }


def test_many_changes_are_read_by_a_git_process_per_core_as_one_would_read_them(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Enough changes that the snapshot deals the files to hash among a git process per
    # core (repogym.tree.snapshot) and the line counts among a git diff per core
    # (repogym.tree.changes): four of them, whatever this machine has.
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    count = 4 * 500 + 7
    based(repo, {f"d{i % 9}/f{i}.txt": f"base {i}\n" for i in range(count)})
    repo.write({f"d{i % 9}/f{i}.txt": f"base {i}\n" + "edit\n" * (i % 3 + 1) for i in range(count)})
    repo.write({f"new/n{i}.txt": f"{i}\n" * (i % 5 + 1) for i in range(50)})
    # A file that became a directory: a pathspec `d0/f0.txt` would also hold the file in it.
    repo.delete("d0/f0.txt")
    repo.write({"d0/f0.txt/y": "y\n"})
    ws = Workspace.open(repo.root, base="main")
    stats = ws.diff_stats()
    # What one git process sees of the same files.
    repo.git("add", "-A")
    numstat = repo.git("diff", "--cached", "--no-renames", "--numstat", "main").splitlines()
    statuses = repo.git("diff", "--cached", "--no-renames", "--name-status", "main").splitlines()
    expected = {
        path: change(path, status, int(added), int(removed))
        for (added, removed, path), (status, _) in zip(
            (line.split("\t") for line in numstat),
            (line.split("\t") for line in statuses),
            strict=True,
        )
    }
    assert len(expected) == count + 50 + 1 and "d0/f0.txt/y" in expected
    assert stats == expected and list(stats) == sorted(stats)
    assert ws.snapshot().tree == repo.git("write-tree").strip()


def test_pathspec_groups_hold_each_path_once_and_balance_the_load() -> None:
    paths = sorted(
        [f"src/a/{i}" for i in range(300)]
        + [f"src/b/{i}" for i in range(290)]
        + ["src/c", "src/c/x", "top"]  # src/c was a file and is now a directory
    )
    groups = pathspec_groups(paths, 2)

    def held(path: str) -> list[str]:
        return [p for g in groups for p in g if path == p or path.startswith(p + "/")]

    assert all(len(held(path)) == 1 for path in paths)
    assert "src/c" in {p for g in groups for p in g}  # not split: `src/c` holds both
    sizes = sorted(sum(len(held(p)) for p in paths if held(p)[0] in g) for g in groups)
    assert sizes == [293, 300]
    # A flat directory of many files is not cut into thousands of pathspecs: git
    # would match every entry it walks against each of them.
    assert pathspec_groups([f"flat/{i}" for i in range(5000)], 4) == [["flat"]]


def test_committed_and_uncommitted_changes_both_count(repo: Repo) -> None:
    sha = based(repo, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    repo.branch("pr")
    repo.commit("committed", {"a.txt": "a\nA\n", "new.txt": "n\n"})
    repo.write({"b.txt": "B\n"})
    repo.git("add", "b.txt")  # staged, not committed
    repo.write({"c.txt": "c\nC\nCC\n"})  # not staged
    ws = Workspace.open(repo.root, base=sha)
    assert ws.changed_files() == ("a.txt", "b.txt", "c.txt", "new.txt")
    assert ws.diff_stats() == {
        "a.txt": change("a.txt", "M", 1, 0),
        "b.txt": change("b.txt", "M", 1, 1),
        "c.txt": change("c.txt", "M", 2, 0),
        "new.txt": change("new.txt", "A", 1, 0),
    }


def test_a_change_committed_then_reverted_in_the_work_tree_is_no_change(repo: Repo) -> None:
    based(repo, {"a.txt": "a\n"})
    repo.commit("change", {"a.txt": "changed\n"})
    repo.write({"a.txt": "a\n"})
    ws = Workspace.open(repo.root, base="main~1")
    assert ws.changed_files() == ()


def test_file_untracked_by_git_rm_cached_but_unchanged_is_no_change(repo: Repo) -> None:
    based(repo, {"a.txt": "a\n"})
    repo.git("rm", "--cached", "--quiet", "a.txt")
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ()
    assert "a.txt" in ws.files()


def test_same_size_edit_in_the_second_of_the_last_index_write_is_seen(repo: Repo) -> None:
    # git trusts an index entry whose size and mtime match the file, unless the entry is
    # "racily clean": its mtime is not older than the index file itself. A private copy
    # of the index must keep that protection, or an edit of the same size made in the
    # same second as the last `git add` is missed (found flaking: 12 in 1,500 runs).
    # Times are pinned so it happens every run; ctime is left out as core.trustctime
    # allows, since no test can set a file's ctime.
    based(repo)
    repo.git("config", "core.trustctime", "false")
    past = time.time_ns() - 1_000 * 10**9
    target = repo.root / "a.py"
    target.write_text("x = 1\n")
    os.utime(target, ns=(past, past))
    repo.git("add", "a.py")
    repo.git("commit", "--quiet", "-m", "a")
    target.write_text("x = 2\n")
    os.utime(target, ns=(past, past))
    os.utime(repo.root / ".git" / "index", ns=(past, past))
    assert repo.git("diff", "--name-only", "main") == "a.py\n"  # git itself sees it
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ("a.py",)
    assert ws.diff_stats() == {"a.py": change("a.py", "M", 1, 1)}


def test_rename_is_a_deletion_plus_an_addition(repo: Repo) -> None:
    based(repo, {"pkg/mod.py": "one\ntwo\nthree\n"})
    repo.branch("pr")
    repo.git("mv", "pkg/mod.py", "pkg/renamed.py")
    repo.commit("rename")
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ("pkg/mod.py", "pkg/renamed.py")
    assert ws.diff_stats() == {
        "pkg/mod.py": change("pkg/mod.py", "D", 0, 3),
        "pkg/renamed.py": change("pkg/renamed.py", "A", 3, 0),
    }
    assert "rename from" not in ws.patch()


def test_ignored_files_are_not_part_of_the_submission(repo: Repo) -> None:
    based(repo, {".gitignore": "secret/\n*.pyc\n"})
    repo.write({"secret/key.txt": "k\n", "a.pyc": b"\0\1", "kept.py": "x = 1\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ("kept.py",)
    assert ws.files() == (".gitignore", ".repogym.yml", "kept.py")


def test_empty_untracked_file_is_an_addition_of_no_lines(repo: Repo) -> None:
    based(repo)
    repo.write({"empty.txt": ""})
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats() == {"empty.txt": change("empty.txt", "A", 0, 0)}


def test_file_replaced_by_a_symlink_is_a_type_change(repo: Repo) -> None:
    based(repo, {"a.txt": "a\nb\n", "b.txt": "b\n"})
    repo.delete("a.txt")
    (repo.root / "a.txt").symlink_to("b.txt")
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats() == {"a.txt": change("a.txt", "T", 1, 2)}


def test_paths_with_spaces_and_unicode(repo: Repo) -> None:
    based(repo, {"dir with space/naïve file.py": "x = 1\n", "tab\tname.txt": "t\n"})
    repo.write(
        {
            "dir with space/naïve file.py": "x = 2\n",
            "日本語/ファイル.txt": "一\n二\n",
            "tab\tname.txt": "t\nu\n",
        }
    )
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == (
        "dir with space/naïve file.py",
        "tab\tname.txt",
        "日本語/ファイル.txt",
    )
    assert ws.diff_stats()["日本語/ファイル.txt"] == change("日本語/ファイル.txt", "A", 2, 0)
    assert ws.diff_stats()["tab\tname.txt"] == change("tab\tname.txt", "M", 1, 0)
    assert ws.read("日本語/ファイル.txt") == "一\n二\n"
    assert ws.read("dir with space/naïve file.py") == "x = 2\n"
    patch = ws.patch()
    assert "+++ b/日本語/ファイル.txt" in patch
    assert "diff --git a/dir with space/naïve file.py b/dir with space/naïve file.py" in patch


def test_binary_files_count_no_lines_and_are_marked_in_the_patch(repo: Repo) -> None:
    based(repo, {"img.bin": b"\x89PNG\0\1\2\3", "text.txt": "a\n"})
    repo.write({"img.bin": b"\x89PNG\0\1\2\4", "new.bin": b"\0" * 10, "text.txt": "b\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats() == {
        "img.bin": change("img.bin", "M", 0, 0, binary=True),
        "new.bin": change("new.bin", "A", 0, 0, binary=True),
        "text.txt": change("text.txt", "M", 1, 1),
    }
    patch = ws.patch()
    assert "Binary files a/img.bin and b/img.bin differ" in patch
    assert "Binary files /dev/null and b/new.bin differ" in patch
    assert "-a\n+b\n" in patch


@pytest.mark.parametrize("attribute", ["-diff", "binary"])
def test_gitattributes_marking_text_as_binary_does_not_hide_lines(
    repo: Repo, attribute: str
) -> None:
    based(repo, {"data.txt": "a\nb\n"})
    repo.write({"data.txt": "a\nb\nc\nd\ne\n", ".gitattributes": f"data.txt {attribute}\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats() == {
        ".gitattributes": change(".gitattributes", "A", 1, 0),
        "data.txt": change("data.txt", "M", 3, 0),
    }


def test_committed_gitattributes_marking_text_as_binary_does_not_hide_lines(repo: Repo) -> None:
    based(repo, {"src/big.py": "".join(f"x{i} = {i}\n" for i in range(10))})
    repo.branch("pr")
    repo.commit(
        "hide the rewrite",
        {
            ".gitattributes": "*.py -diff\n",
            "src/big.py": "".join(f"y{i} = {i}\n" for i in range(10)),
        },
    )
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats()["src/big.py"] == change("src/big.py", "M", 10, 10)


def test_gitattributes_do_not_turn_real_binary_into_text(repo: Repo) -> None:
    based(repo, {"blob.dat": b"\0\1\2"})
    repo.write({"blob.dat": b"\0\1\2\3", ".gitattributes": "blob.dat -diff\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats()["blob.dat"] == change("blob.dat", "M", 0, 0, binary=True)


def test_stats_and_patch_are_git_s_own(repo: Repo) -> None:
    # A result difflib would not give: git's blob ids, hunk headers and
    # "\ No newline at end of file" markers, exactly as `git diff` prints them.
    sha = based(repo, {"a.py": "one\ntwo\nthree\n", "b.txt": "no newline"})
    repo.write({"a.py": "one\n2\nthree\nfour\n", "b.txt": "no newline either"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.patch() == repo.git("diff", "--no-color", sha)
    numstat = repo.git("diff", "--numstat", sha)
    assert numstat == "2\t1\ta.py\n1\t1\tb.txt\n"
    assert ws.diff_stats() == {
        "a.py": change("a.py", "M", 2, 1),
        "b.txt": change("b.txt", "M", 1, 1),
    }
    blob = repo.git("hash-object", "a.py").strip()
    assert re.search(rf"^index [0-9a-f]{{7,}}\.\.{blob[:7]}[0-9a-f]* 100644$", ws.patch(), re.M)
    assert "\\ No newline at end of file" in ws.patch()


def test_patch_includes_untracked_and_deleted_files(repo: Repo) -> None:
    based(repo, {"gone.txt": "bye\n"})
    repo.delete("gone.txt")
    repo.write({"new.txt": "hi\n"})
    patch = Workspace.open(repo.root, base="main").patch()
    assert "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n" in patch
    assert "diff --git a/new.txt b/new.txt\nnew file mode 100644\n" in patch
    assert patch.endswith("@@ -0,0 +1 @@\n+hi\n")


# -- files and read ------------------------------------------------------------------------


def test_files_lists_tracked_and_untracked_not_ignored_nor_deleted(repo: Repo) -> None:
    based(repo, {".gitignore": "*.tmp\n", "a.txt": "a\n", "gone.txt": "g\n"})
    repo.delete("gone.txt")
    repo.write({"new/b.txt": "b\n", "x.tmp": "t\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.files() == (".gitignore", ".repogym.yml", "a.txt", "new/b.txt")


def test_baseline_files_lists_a_directory_at_base(repo: Repo) -> None:
    based(repo, {"hidden/t/test_a.py": "", "hidden/test_b.py": "", "hiddenness.txt": ""})
    repo.write({"hidden/test_c.py": ""})
    ws = Workspace.open(repo.root, base="main")
    assert ws.baseline_files("hidden") == ("hidden/t/test_a.py", "hidden/test_b.py")
    assert ws.baseline_files("hidden/") == ("hidden/t/test_a.py", "hidden/test_b.py")
    assert ws.baseline_files("nowhere") == ()


def test_read_returns_the_submission_s_content(repo: Repo) -> None:
    based(repo, {"a.txt": "old\n", "same.txt": "same\n"})
    repo.write({"a.txt": "new\n", "u.txt": "untracked\n", "bad.txt": b"caf\xe9\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.read("a.txt") == "new\n"
    assert ws.read("same.txt") == "same\n"
    assert ws.read("u.txt") == "untracked\n"
    assert ws.read("./a.txt") == "new\n"
    assert ws.read("bad.txt") == "caf\ufffd\n"
    assert ws.read_bytes("bad.txt") == b"caf\xe9\n"


def test_read_of_a_deleted_file_is_empty(repo: Repo) -> None:
    based(repo, {"gone.txt": "bye\n"})
    repo.delete("gone.txt")
    ws = Workspace.open(repo.root, base="main")
    assert ws.read("gone.txt") == ""
    assert ws.read_bytes("gone.txt") == b""


def test_read_of_a_path_that_is_not_there_is_an_error(repo: Repo) -> None:
    based(repo, {"src/a.py": ""})
    ws = Workspace.open(repo.root, base="main")
    with pytest.raises(WorkspaceError, match=r"^nothing\.txt: no such file in the submission$"):
        ws.read("nothing.txt")
    with pytest.raises(WorkspaceError, match=r"^src: is a directory, not a file$"):
        ws.read("src")


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.txt", "a/../../outside.txt", "a/../a.txt", ".."]
)
def test_read_refuses_paths_outside_the_tree(repo: Repo, path: str) -> None:
    based(repo, {"a.txt": "a\n"})
    (repo.root.parent / "outside.txt").write_text("secret\n")
    ws = Workspace.open(repo.root, base="main")
    with pytest.raises(WorkspaceError, match="not a relative path inside the work tree"):
        ws.read(path)


def test_read_refuses_an_empty_path(repo: Repo) -> None:
    based(repo)
    with pytest.raises(WorkspaceError):
        Workspace.open(repo.root, base="main").read("")


def test_read_refuses_symlinks_leading_outside_the_tree(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    based(repo)
    (repo.root / "file_link").symlink_to(outside / "secret.txt")
    (repo.root / "dir_link").symlink_to("../outside")
    ws = Workspace.open(repo.root, base="main")
    for path in ["file_link", "dir_link/secret.txt"]:
        with pytest.raises(WorkspaceError, match="leads outside the work tree"):
            ws.read(path)
        with pytest.raises(WorkspaceError, match="leads outside the work tree"):
            ws.read_bytes(path)


def test_read_follows_symlinks_inside_the_tree(repo: Repo) -> None:
    based(repo, {"real/target.txt": "inside\n"})
    (repo.root / "link.txt").symlink_to("real/target.txt")
    (repo.root / "dir_link").symlink_to("real")
    ws = Workspace.open(repo.root, base="main")
    assert ws.read("link.txt") == "inside\n"
    assert ws.read("dir_link/target.txt") == "inside\n"


# -- grading leaves the repository alone ---------------------------------------------------


def test_grading_does_not_change_index_status_or_files(repo: Repo) -> None:
    from repogym.graders import CompositeGrader

    based(repo, {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", ".gitignore": "*.log\n"})
    repo.write({"a.txt": "staged\n"})
    repo.git("add", "a.txt")
    repo.write({"a.txt": "staged then changed\n", "b.txt": "unstaged\n"})
    repo.git("rm", "--quiet", "--cached", "c.txt")
    repo.write({"new.txt": "untracked\n", "x.log": "ignored\n"})
    status_before = status(repo)
    index_before = index_state(repo)
    contents = {p.name: p.read_bytes() for p in repo.root.iterdir() if p.is_file()}

    ws = Workspace.open(repo.root, base="main")
    ws.changed_files()
    ws.diff_stats()
    ws.patch()
    ws.files()
    ws.read("a.txt")
    assert ws.baseline.is_dir()
    result = CompositeGrader.for_workspace(ws).grade_result(ws)

    assert result.files_changed == ("a.txt", "b.txt", "new.txt")
    assert index_state(repo) == index_before  # not even rewritten with the same entries
    assert status(repo) == status_before
    assert {p.name: p.read_bytes() for p in repo.root.iterdir() if p.is_file()} == contents
    assert repo.git("diff", "--cached", "--name-only") == "a.txt\nc.txt\n"


def test_head_is_the_work_tree_s_commit(repo: Repo) -> None:
    based(repo)
    head = repo.commit("next", {"a.txt": "a\n"})
    assert Workspace.open(repo.root, base="main~1").head == head


def test_head_is_none_on_an_unborn_branch(repo: Repo) -> None:
    based(repo, {"a.txt": "a\n"})
    repo.git("checkout", "--quiet", "--orphan", "fresh")
    ws = Workspace.open(repo.root, base="main")
    assert ws.head is None
    assert ws.changed_files() == ()


def test_mode_change_alone_is_a_change_of_no_lines(repo: Repo) -> None:
    based(repo, {"run.sh": "echo hi\n"})
    (repo.root / "run.sh").chmod(0o755)
    ws = Workspace.open(repo.root, base="main")
    assert ws.diff_stats() == {"run.sh": change("run.sh", "M", 0, 0)}
    assert "old mode 100644\nnew mode 100755\n" in ws.patch()


def test_name_with_a_newline(repo: Repo) -> None:
    based(repo)
    repo.write({"two\nlines.txt": "x\n"})
    ws = Workspace.open(repo.root, base="main")
    assert ws.changed_files() == ("two\nlines.txt",)
    assert ws.read("two\nlines.txt") == "x\n"


def test_root_may_be_relative_to_the_current_directory(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    based(repo, {"src/a.py": "x = 1\n"})
    repo.write({"src/a.py": "x = 2\n"})
    monkeypatch.chdir(repo.root / "src")
    ws = Workspace.open(".", base="main")
    assert ws.root == repo.root.resolve()
    assert ws.changed_files() == ("src/a.py",)


def test_linked_worktree_is_a_submission_sharing_the_baseline(repo: Repo, tmp_path: Path) -> None:
    based(repo, {"a.txt": "a\n"})
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "--quiet", "-b", "feature", str(linked))
    (linked / "a.txt").write_text("changed a lot\n")
    (linked / "new.txt").write_text("n\n")
    index_before = index_state(repo)
    ws = Workspace.open(linked, base="main")
    assert ws.root == linked.resolve()
    assert ws.changed_files() == ("a.txt", "new.txt")
    assert ws.read("a.txt") == "changed a lot\n"
    assert ws.baseline == Workspace.open(repo.root, base="main").baseline
    assert (ws.baseline / "a.txt").read_text() == "a\n"
    assert index_state(repo) == index_before


def test_no_merge_base_says_why(repo: Repo, tmp_path: Path) -> None:
    based(repo)
    repo.branch("feature")
    head = repo.commit("feature work", {"b.py": "y = 2\n"})
    main = repo.git("rev-parse", "main").strip()
    assert _git.merge_base(repo.root, "main", main, head) == main
    # A shallow clone of the feature branch, with the tip of main fetched alone.
    shallow = tmp_path / "shallow"
    url = f"file://{repo.root}"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "-b", "feature", url, str(shallow)], check=True
    )
    subprocess.run(
        ["git", "fetch", "-q", "--depth", "1", "origin", "main:main"], cwd=shallow, check=True
    )
    with pytest.raises(WorkspaceError) as caught:
        _git.merge_base(shallow, "main", main, head)
    assert str(caught.value) == (
        f"{shallow}: no common ancestor of `main` and HEAD in this shallow clone: fetch more "
        "history (`git fetch --unshallow`, or `fetch-depth: 0` for actions/checkout)"
    )
    # Unrelated histories.
    repo.git("checkout", "--quiet", "--orphan", "other")
    other = repo.commit("unrelated", {"c.py": "z = 3\n"})
    with pytest.raises(WorkspaceError, match="have no common ancestor \\(unrelated histories\\)"):
        _git.merge_base(repo.root, "main", main, other)
