"""The private clone's work tree against the commit it checked out (issue 19).

`git checkout` of a file it cannot write (a name component over 255 bytes) prints an error
and exits 0: the constraints would then pass a tree they never saw. So after the checkout
every path of the head's tree must be in the work tree, as the file, symbolic link or
directory (a submodule's empty one) the tree says; what is not is an error naming it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from repogym.shown import show_undecodable

# What each mode of a tree entry is checked out as (a submodule: an empty directory).
_KINDS = {"100644": "file", "100755": "file", "120000": "symlink", "160000": "directory"}


def unlike_its_tree(listing: bytes, into: Path, stderr: str) -> str | None:
    """The first path of ``listing`` (``git ls-tree -r -z`` of the commit) that the work
    tree ``into`` lacks or holds as another kind, as one line; None when all are there.
    ``stderr`` is what the checkout said, for why a path could not be written."""
    for record in filter(None, listing.split(b"\0")):
        meta, _, name = record.partition(b"\t")
        path = os.fsdecode(name)  # a name that is not UTF-8 is looked up as it is
        wanted = _KINDS.get(meta.split(b" ", 1)[0].decode(), "file")
        try:
            mode = os.lstat(into / path).st_mode
        except OSError as error:
            return (
                f"{show_undecodable(path)}: in the head commit, not in the work tree git "
                f"checked out ({_unwritable(path, error, stderr)}); it cannot be graded: "
                "rename it in the pull request"
            )
        found = _kind(mode)
        if found != wanted:
            return (
                f"{show_undecodable(path)}: a {wanted} in the head commit, a {found} in the work "
                "tree git checked out; it cannot be graded as committed: rename it in the pull "
                "request"
            )
    return None


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "directory" if stat.S_ISDIR(mode) else "special file"


def _unwritable(path: str, error: OSError, stderr: str) -> str:
    """Why git could not write ``path``: a name component too long for the file
    system, else git's own line about it, else the error of looking it up."""
    longest = max(len(os.fsencode(part)) for part in path.split("/"))
    if longest > 255:
        return f"a name component of {longest} bytes; this file system holds at most 255"
    said = [line.strip() for line in stderr.splitlines() if path in line]
    return said[0] if said else (error.strerror or str(error))
