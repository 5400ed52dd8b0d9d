"""Parts of repogym.run.container.runner that need no engine (issue 20): whose a labelled container
is (a grader sweeps only what graders gone from its own host and pid namespace left, and
what is past its expiry), and which members of the archive a command's tree comes back
in are made on the host, on a Python with tarfile's filters or without (Debian
bookworm's 3.11.2, the Action's image on the tests' base)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from repogym.run.container.archive import _member
from repogym.run.container.engine import HOST, LABEL, OWNER, _abandoned, labels


def _gone_pid() -> int:
    """The pid of a process that has exited."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_a_live_owner_is_not_swept_and_a_gone_one_is() -> None:
    assert not _abandoned(labels(60))
    assert OWNER.startswith(f"{HOST}/{os.getpid()}/")
    gone = {f"{LABEL}.owner": f"{HOST}/{_gone_pid()}/1", f"{LABEL}.expires": str(time.time() + 60)}
    assert _abandoned(gone)


def test_an_owner_in_another_pid_namespace_waits_for_its_expiry() -> None:
    """A grader in a container started with the host's network has the host's name and
    pids of its own: its pid 1 is not this namespace's pid 1."""
    later = str(int(time.time() + 60))
    other = f"{socket.gethostname()}[4026599999]/1/12345"
    assert not _abandoned({f"{LABEL}.owner": other, f"{LABEL}.expires": later})
    assert _abandoned({f"{LABEL}.owner": other, f"{LABEL}.expires": str(int(time.time() - 1))})


def _info(
    name: str, kind: bytes = tarfile.REGTYPE, *, mode: int = 0o644, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid, info.uname = kind, mode, link, 0, "root"
    return info


def test_the_members_made_on_the_host(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to("/etc")  # a link an earlier member made
    (tmp_path / "in").symlink_to(tmp_path / "sub")
    (tmp_path / "sub").mkdir()
    kept = _member(_info("report.xml", mode=0o6777), tmp_path)
    assert kept is not None and kept.mode == 0o755 and kept.uid == os.geteuid()
    assert kept.uname == ""
    assert _member(_info("in/report.xml"), tmp_path) is not None
    assert _member(_info("dir", tarfile.DIRTYPE, mode=0o1777), tmp_path).mode == 0o755  # type: ignore[union-attr]
    link = _member(_info("link", tarfile.SYMTYPE, link="/etc/passwd"), tmp_path)
    assert link is not None  # made as a link, never followed by what comes after
    hard = _member(_info("hard", tarfile.LNKTYPE, link="tree/report.xml"), tmp_path)
    assert hard is not None and hard.linkname == "report.xml"
    for refused in (
        _info("out/passwd"),  # through a link to outside
        _info("/etc/passwd"),
        _info("../escape"),
        _info("a/../../escape"),
        _info("fifo", tarfile.FIFOTYPE),
        _info("dev", tarfile.CHRTYPE),
        _info("hard", tarfile.LNKTYPE, link="tree/../../etc/passwd"),
        _info("hard", tarfile.LNKTYPE, link="/etc/passwd"),
        _info("hard", tarfile.LNKTYPE, link="tree/out/passwd"),
        _info("out/link", tarfile.SYMTYPE, link="x"),
    ):
        assert _member(refused, tmp_path) is None, refused.name
