"""Output paths that are not regular files: a device, a link to our own stdout."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest


def device(tmp_path: Path, name: str) -> Path:
    """``/dev/NAME`` (null, full) when a rename over it would fail anyway (not root); as
    root, a node of the same device in ``tmp_path``, so that a regression that replaces
    what it writes to cannot replace the machine's own."""
    if os.geteuid() != 0:
        return Path("/dev", name)
    node = tmp_path / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, {"null": 3, "full": 7}[name]))
    except PermissionError:
        pytest.skip("root without CAP_MKNOD: no private device node to write to")
    return node


def stdout_link(tmp_path: Path) -> Path:
    """What /dev/stdout is, a link to /proc/self/fd/1, but one a regression may replace."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    return link
