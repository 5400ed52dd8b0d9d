"""repogym.report.template_files: a template directory read whole, from a commit through git or
from disk, refusing what could reach outside it (issue 19)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repogym.report.render import render
from repogym.report.template_files import MAX_BYTES, TemplateFilesError, templates_at, templates_in
from tests.action.gitrepo import Origin, Symlink, git

REPORTS = Path(__file__).parent.parent / "data" / "reports"


@pytest.fixture
def origin(tmp_path: Path) -> Origin:
    return Origin(tmp_path / "origin.git")


def test_a_commits_directory_is_read_by_name_with_its_subdirectories(origin: Origin) -> None:
    sha = origin.commit(
        "main",
        {
            "ci/t/comment.md.j2": '{% include "parts/row.md.j2" %}',
            "ci/t/parts/row.md.j2": "a row\n",
            "ci/other.txt": "not a template of this directory",
        },
    )
    sources = templates_at(origin.path, sha, "ci/t", at="main")
    assert sources == {
        "comment.md.j2": '{% include "parts/row.md.j2" %}',
        "parts/row.md.j2": "a row\n",
    }
    assert render({"version": 2}, "comment.md.j2", templates=sources) == "a row\n"
    assert templates_at(origin.path, sha, "ci/nothing", at="main") is None


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ({"t/env.md.j2": Symlink("/proc/self/environ")}, "t/env.md.j2 at main is a symbolic link"),
        ({"t": Symlink("/etc")}, "t at main is a symbolic link, not a directory"),
        ({"t": "a file"}, "t at main is a file, not a directory"),
        ({"t/x.md.j2": b"\xff\xfe"}, "t/x.md.j2 at main is not UTF-8 text"),
        ({"t/x.md.j2": "x" * (MAX_BYTES + 1)}, f"t/x.md.j2 at main is over {MAX_BYTES} bytes"),
    ],
    ids=["link", "link-dir", "file", "binary", "large"],
)
def test_what_a_commit_holds_that_is_no_template_is_refused(
    origin: Origin, files: dict[str, str | bytes | Symlink], says: str
) -> None:
    sha = origin.commit("main", files)
    with pytest.raises(TemplateFilesError, match=says):
        templates_at(origin.path, sha, "t", at="main")


@pytest.mark.parametrize("name", ["../up", "/etc", ""])
def test_a_directory_outside_the_repository_is_refused(origin: Origin, name: str) -> None:
    sha = origin.commit("main", {"a": "b"})
    with pytest.raises(TemplateFilesError, match="is not a directory inside the repository"):
        templates_at(origin.path, sha, name, at="main")


def test_a_directory_on_disk_is_read_by_name(tmp_path: Path) -> None:
    (tmp_path / "t" / "parts").mkdir(parents=True)
    (tmp_path / "t" / "comment.md.j2").write_text("c")
    (tmp_path / "t" / "parts" / "row.md.j2").write_text("r")
    assert templates_in(tmp_path / "t", shown="t") == {"comment.md.j2": "c", "parts/row.md.j2": "r"}


@pytest.mark.parametrize("kind", ["file link", "directory link", "fifo", "the directory a link"])
def test_a_link_or_a_fifo_on_disk_is_refused(tmp_path: Path, kind: str) -> None:
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "comment.md.j2").write_text("c")
    if kind == "file link":
        (directory / "env.md.j2").symlink_to("/proc/self/environ")
        says = "t/env.md.j2 is a symbolic link"
    elif kind == "directory link":
        (directory / "up").symlink_to(tmp_path)
        says = "t/up is a symbolic link"
    elif kind == "fifo":
        os.mkfifo(directory / "pipe.md.j2")
        says = "t/pipe.md.j2 is not a regular file"
    else:
        (tmp_path / "link").symlink_to(directory)
        with pytest.raises(TemplateFilesError, match="link is not a directory"):
            templates_in(tmp_path / "link", shown="link")
        return
    with pytest.raises(TemplateFilesError, match=says):
        templates_in(directory, shown="t")


def test_a_directory_that_is_not_there_is_named(tmp_path: Path) -> None:
    with pytest.raises(TemplateFilesError, match=r"^nope is not a directory \("):
        templates_in(tmp_path / "nope", shown="nope")


def test_a_checkouts_git_is_never_asked(origin: Origin, tmp_path: Path) -> None:
    """Read from the commit: a work tree whose files differ is not read at all."""
    sha = origin.commit("main", {"t/comment.md.j2": "the commit's"})
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", origin.url, str(work))
    (work / "t" / "comment.md.j2").write_text("the work tree's")
    assert templates_at(work, sha, "t", at="main") == {"comment.md.j2": "the commit's"}
