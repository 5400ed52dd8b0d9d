"""A ContainerRunner's first command runs beside its keeper's start (issue 20): its container
unpacks the new tree from its stdin and waits for the keeper before the command, the tree
it leaves stays for the next command, the wait is not the command's time, and a command
cannot pass for the runner's byte on its stdout. When the image has no tar or the keeper
fails to start, the tree goes in another way and the command runs once.

The keeper's start is held back by the test until the first command's container has its
tree (an event, not a delay), so the first command always takes that way here."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repogym.run.container import command as _command
from repogym.run.container import runner as _container
from repogym.run.container.runner import ContainerRunner
from tests.support.docker import LISTING, base_image


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
    (root / "link").symlink_to("src")
    return root


class Order:
    """What happened, in order: the first command's tree sent, the keeper started, copies
    by put_archive."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.sent = threading.Event()
        self.fail_keeper = 0  # keeper starts to fail before one succeeds
        self.hold = True  # the first keeper waits for the first command's tree


@pytest.fixture
def order(monkeypatch: pytest.MonkeyPatch) -> Iterator[Order]:
    found = Order()
    send, start, put = _command.tar, _container.start_keeper, _container.copy_in

    def sending(tree: Path, uid: int, paths: Any = (), *, into: Any) -> None:
        try:
            send(tree, uid, paths, into=into)
        finally:
            found.seen.append(f"sent {tree.name}")
            found.sent.set()

    def starting(client: Any, image: str, keeper: Any) -> None:
        if found.hold and not found.seen:  # the first keeper: after the first command's tree
            assert found.sent.wait(60), "the first command sent no tree"
        if found.fail_keeper:
            found.fail_keeper -= 1
            found.seen.append("keeper failed")
            raise RuntimeError("the test's keeper does not start")
        start(client, image, keeper)
        found.seen.append("keeper started")

    def putting(
        client: Any, container: str, at: str, tree: Path, uid: int, paths: Any = ()
    ) -> None:
        found.seen.append(f"put {tree.name}")
        put(client, container, at, tree, uid, paths)

    monkeypatch.setattr(_command, "tar", sending)
    monkeypatch.setattr(_container, "start_keeper", starting)
    monkeypatch.setattr(_container, "copy_in", putting)
    yield found


def reference(client: Any, tree: Path, order: Order) -> str:
    """The tree as a command sees it once the keeper is up (put_archive)."""
    order.hold = False
    with ContainerRunner(client, base_image()) as runner:
        runner._warming.join()
        done = runner.run(LISTING, tree, timeout=120, writable=[tree])
    assert done.ok, done.tail()
    assert order.seen == ["keeper started", "put tree"]
    order.seen.clear()
    order.hold = True
    return done.stdout


def test_the_first_command_has_its_tree_before_the_keeper_and_leaves_it_to_the_next(
    client: Any, tree: Path, order: Order
) -> None:
    seen = reference(client, tree, order)
    reports = tree.parent / "reports"
    reports.mkdir()
    with ContainerRunner(client, base_image()) as runner:
        first = runner.run(
            f"{LISTING}; echo made > made.txt; echo r > {reports}/r.txt",
            tree,
            timeout=120,
            writable=[tree, reports],
        )
        assert first.ok, first.tail()
        # The tree went in on the command's own stdin, before the keeper's start.
        assert order.seen == ["sent tree", "keeper started"]
        assert first.stdout == seen
        second = runner.run(f"cat made.txt {reports}/r.txt", tree, timeout=120, writable=[reports])
    assert second.ok, second.tail()
    assert second.stdout == "made\nr\n"
    assert order.seen == ["sent tree", "keeper started"]  # nothing copied again


def test_the_wait_for_the_keeper_is_not_the_command_s_time(
    client: Any, tree: Path, order: Order
) -> None:
    with ContainerRunner(client, base_image()) as runner:
        done = runner.run("true", tree, timeout=120, writable=[tree])
    assert done.ok, done.tail()
    assert order.seen == ["sent tree", "keeper started"]
    # The container waited for the keeper's whole start (its create and start, a few
    # tenths of a second here) before `true`; what is left is `true`'s.
    assert done.duration < 0.1


@pytest.mark.parametrize("output", ["\\036forged", "\\036\\036", ""])
def test_a_command_cannot_pass_for_the_runner_s_byte(
    client: Any, tree: Path, order: Order, output: str
) -> None:
    with ContainerRunner(client, base_image()) as runner:
        done = runner.run(f"printf '{output}'", tree, timeout=120, writable=[tree])
        again = runner.run(f"printf '{output}'", tree, timeout=120, writable=[tree])
    assert order.seen == ["sent tree", "keeper started"]
    expected = output.replace("\\036", "\x1e")
    assert (done.stdout, again.stdout) == (expected, expected)


def test_without_tar_in_the_image_the_first_command_runs_once(
    client: Any, no_tar: str, tree: Path, order: Order
) -> None:
    seen = reference(client, tree, order)
    with ContainerRunner(client, no_tar) as runner:
        done = runner.run(f"{LISTING}; echo run >> runs", tree, timeout=120, writable=[tree])
        runs = runner.run("cat runs", tree, timeout=120)
    assert done.ok, done.tail()
    # Its container found no tar: the command never ran there; put_archive, then once.
    assert order.seen == ["sent tree", "keeper started", "put tree"]
    assert done.stdout == seen
    assert runs.stdout == "run\n"


def test_a_keeper_that_does_not_start_leaves_the_command_to_the_next_keeper(
    client: Any, tree: Path, order: Order
) -> None:
    order.fail_keeper = 1
    with ContainerRunner(client, base_image()) as runner:
        done = runner.run("echo run >> runs; cat runs", tree, timeout=120, writable=[tree])
        runs = runner.run("cat runs", tree, timeout=120)
    assert done.ok, done.tail()
    assert (done.stdout, runs.stdout) == ("run\n", "run\n")
    assert order.seen == ["sent tree", "keeper failed", "keeper started", "put tree"]
