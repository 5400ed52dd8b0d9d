"""A tree's copy into a ContainerRunner's volume (issue 20): a large tree goes in through
the image's own tar (the engine's put_archive takes five times as long a file), a small
one or one for an image without tar through put_archive, and either way the command sees
the same tree: names, kinds, modes, owner, sizes, link targets and hard links."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym.run.container import archive as _archive
from repogym.run.container import runner as _container
from repogym.run.container.runner import ContainerRunner
from tests.support.docker import LISTING, base_image

ENTRYPOINT = "repogym-test-entrypoint:1"


@pytest.fixture(scope="module")
def entrypoint(client: Any) -> str:
    """The base with an entrypoint that runs nothing (node's images have one of their own)."""
    dockerfile = f'FROM {base_image()}\nENTRYPOINT ["/bin/false"]\nCMD ["node"]\n'
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=ENTRYPOINT, rm=True)
    return str(image.id)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tmp_path.chmod(0o711)
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("A = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "private").write_text("x")
    (root / "private").chmod(0o600)
    (root / "empty").mkdir()
    (root / "link").symlink_to("src")
    (root / "dangling").symlink_to("/nowhere")
    os.link(root / "run.sh", root / "hard")
    for n in range(40):
        (root / "many" / f"d{n // 10}").mkdir(parents=True, exist_ok=True)
        (root / "many" / f"d{n // 10}" / f"f{n}.txt").write_text(str(n))
    return root


@pytest.fixture
def put_archives(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The trees copied in by put_archive."""
    copied: list[Path] = []
    inner = _container.copy_in

    def copy_in(
        client: Any, container: str, at: str, tree: Path, uid: int, paths: Any = ()
    ) -> None:
        copied.append(tree)
        inner(client, container, at, tree, uid, paths)

    monkeypatch.setattr(_container, "copy_in", copy_in)
    yield copied


def listing(client: Any, image: str, tree: Path) -> str:
    with ContainerRunner(client, image) as runner:
        done = runner.run(LISTING, tree, timeout=120)
    assert done.ok, done.tail()
    return done.stdout


@pytest.mark.parametrize("unpack_from", [1, 1_000_000], ids=["tar", "put_archive"])
def test_the_command_sees_the_tree_as_it_is(
    client: Any,
    tree: Path,
    put_archives: list[Path],
    monkeypatch: pytest.MonkeyPatch,
    unpack_from: int,
) -> None:
    monkeypatch.setattr(_container, "UNPACK_FROM", 1_000_000)
    reference = listing(client, base_image(), tree)
    assert put_archives == [tree]
    assert "./private f 600 10001 10001 1" in reference
    assert "./run.sh f 755 10001 10001 10  2" in reference
    assert "./dangling l 777 10001 10001 8 /nowhere 1" in reference
    put_archives.clear()
    monkeypatch.setattr(_container, "UNPACK_FROM", unpack_from)
    assert listing(client, base_image(), tree) == reference
    assert put_archives == ([] if unpack_from == 1 else [tree])


def test_an_image_without_tar_gets_the_tree_by_put_archive(
    client: Any, no_tar: str, tree: Path, put_archives: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_container, "UNPACK_FROM", 1_000_000)
    reference = listing(client, base_image(), tree)
    put_archives.clear()
    monkeypatch.setattr(_container, "UNPACK_FROM", 1)
    assert listing(client, no_tar, tree) == reference
    assert put_archives == [tree]


def test_a_tree_is_counted_only_up_to_the_threshold(tree: Path) -> None:
    entries = sum(1 for _ in tree.rglob("*"))
    assert _archive.has_entries(tree, entries)
    assert not _archive.has_entries(tree, entries + 1)


def test_an_image_s_entrypoint_is_not_what_runs(
    client: Any,
    entrypoint: str,
    tree: Path,
    tmp_path: Path,
    put_archives: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every container runs /bin/sh -c, whatever ENTRYPOINT the image has: the first command
    (its container unpacks the tree), the keeper it waits for, the tar that unpacks a large
    tree and a later command. Had the image's /bin/false run in any of them, that command
    would fail or its tree would have gone in by put_archive."""
    monkeypatch.setattr(_container, "UNPACK_FROM", 1)
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("B\n")
    with ContainerRunner(client, entrypoint) as runner:
        first = runner.run("cat src/a.py", tree, timeout=120)
        unpacked = runner.run("cat b.txt", other, timeout=120)
        later = runner.run('echo "$0"; cat src/a.py', tree, timeout=120)
    assert (first.exit_code, first.stdout) == (0, "A = 1\n"), first.tail()
    assert (unpacked.exit_code, unpacked.stdout) == (0, "B\n"), unpacked.tail()
    assert (later.exit_code, later.stdout) == (0, "/bin/sh\nA = 1\n"), later.tail()
    assert put_archives == []
