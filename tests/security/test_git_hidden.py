"""What git does not show (issue 9): files that run in the tests but are not in the diff
the constraints check, and HEAD moved while the tests run. What runs must be what was
graded, and the report must name the commit that was graded.

Graded against examples/bugfix as it ships: were these files in the diff, the
constraints would see them (a conftest.py, `import pdb`, a forbidden pattern).
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from tests.security import _payloads as p
from tests.security._harness import Case, git_env


def test_a_file_hidden_by_info_exclude_does_not_run(case: Case) -> None:
    case.base()
    case.submit({"src/conftest.py": p.FLIP_CONFTEST}, commit=False)
    (case.repo.root / ".git" / "info" / "exclude").write_text("src/conftest.py\n")
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_an_ident_attribute_hides_nothing(case: Case) -> None:
    # git collapses `$Id: ...$` to `$Id$` when it reads the work tree: the diff shows one
    # harmless line, the tests run a fix that imports pdb (a forbidden pattern).
    hidden = (
        '_ = "$Id: "; import pdb, unicodedata; _orig = slugify; '
        'slugify = lambda t: _orig(unicodedata.normalize("NFKD", t)); _ = "$"\n'
    )
    case.base()
    case.submit({"src/.gitattributes": "*.py ident\n"})
    core = case.repo.root / "src" / "slugify" / "core.py"
    core.write_text(core.read_text() + hidden)
    case.grade().check("FAIL")


def test_an_untracked_nested_repository_does_not_run(case: Case) -> None:
    case.base()
    vendor = case.repo.root / "src" / "vendor"
    vendor.mkdir()
    # A vendored checkout with a commit of its own, the conftest.py in it.
    (vendor / "conftest.py").write_text(p.FLIP_CONFTEST)
    for command in (["init", "--quiet"], ["add", "--all"], ["commit", "--quiet", "-m", "v"]):
        subprocess.run(["git", "-C", str(vendor), *command], check=True, env=git_env())
    case.grade().check("fail_to_pass: 0 of 2 passed")


def test_a_file_hidden_by_the_submissions_gitignore_does_not_run(case: Case) -> None:
    case.base()
    case.submit({"src/.gitignore": "conftest.py\n"})
    case.submit({"src/conftest.py": p.FLIP_CONFTEST}, commit=False)
    case.grade().check("fail_to_pass: 0 of 2 passed")


# The tests move HEAD of the tree they run in, and of the grader's working directory, to
# a commit with the fix: its core.py is what the tests then import.
MOVE_HEAD = p.FIND_GRADER + textwrap.dedent(
    """
    import os
    import subprocess

    _pid, _ = _grader()
    for _tree in (os.getcwd(), f"/proc/{_pid}/cwd"):
        subprocess.run(
            ["git", "-C", _tree, "checkout", "--quiet", "--force", "other"], capture_output=True
        )
    """
)


def test_head_moved_during_the_run(case: Case) -> None:
    case.base()
    case.repo.branch("other")
    other = case.repo.commit("the fix", {"src/slugify/core.py": p.FIXED_CORE})
    case.repo.git("checkout", "--quiet", "main")
    case.repo.branch("attack-head")
    graded_sha = case.repo.commit("attack", {"src/slugify/__init__.py": p.package_init(MOVE_HEAD)})
    graded = case.grade()
    problems = graded.problems("fail_to_pass: 0 of 2 passed")
    report = graded.report or {}
    head = report.get("head")
    if head != {"sha": graded_sha}:
        problems.append(f"the report names head {head}, not the graded {graded_sha} ({other=})")
    assert not problems, "\n".join(problems) + "\n" + json.dumps(head)
