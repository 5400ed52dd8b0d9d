"""Poisoning later grades (issue 9): the tests write into the grader's virtual
environment or its git configuration, or the submission makes the grader's own outputs
land outside the tree. After each, a second grade, of an empty submission, must still
fail, and the poison must not have landed (the harness compares the grader's
site-packages, HOME and the sentinel directory before and after each grade)."""

from __future__ import annotations

import textwrap

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case, check_all, site_packages
from tests.security._poison import POISON_MODULE

# The grader found through /proc, its virtual environment from its command line (argv[0]
# is the venv's python); a .pth there imports the poison. (An attacker would also try
# every site-packages the grader has mapped, /proc/<pid>/maps; here that would be the
# virtual environment running these tests, which a failing protection must not poison.)
POISON_VENV = p.FIND_GRADER + textwrap.dedent(
    """
    import glob
    import os

    POISON = {poison!r}


    def _site_packages(pid, args):
        if not args:
            return []
        prefix = os.path.dirname(os.path.dirname(args[0]))
        return glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))


    _pid, _args = _grader()
    for _place in _site_packages(_pid, _args) if _pid else ():
        try:
            with open(os.path.join(_place, "zz_{{marker}}_poison.py"), "w") as f:
                f.write(POISON)
            with open(os.path.join(_place, "zz_{{marker}}.pth"), "w") as f:
                f.write("import zz_{{marker}}_poison\\n")
        except OSError:
            pass
    """
).format(poison=POISON_MODULE)

# A clean filter in the grader's global git config (HOME read from its environment), on
# every file through a global attributes file: the grader's next `git diff` runs it.
POISON_GITCONFIG = p.FIND_GRADER + textwrap.dedent(
    """
    import os

    _pid, _ = _grader()
    _home = None
    try:
        with open(f"/proc/{_pid}/environ", "rb") as f:
            for _entry in f.read().split(b"\\0"):
                if _entry.startswith(b"HOME="):
                    _home = _entry[5:].decode()
    except OSError:
        pass
    if _home:
        try:
            with open(os.path.join(_home, ".gitattributes-{marker}"), "w") as f:
                f.write("* filter=x{marker}\\n")
            with open(os.path.join(_home, ".gitconfig"), "a") as f:
                f.write(
                    '[filter "x{marker}"]\\n'
                    "\\tclean = touch /tmp/pwned-{marker}; cat\\n"
                    "[core]\\n"
                    f"\\tattributesFile = {_home}/.gitattributes-{marker}\\n"
                )
        except OSError:
            pass
    """
)


@pytest.mark.parametrize(
    "poison", ["venv_pth", "home_gitconfig"], ids=["pth_in_the_graders_venv", "gitconfig"]
)
def test_the_tests_cannot_poison_the_next_grade(own_case: Case, poison: str) -> None:
    case = own_case
    case.base(task=LOOSE_TASK)
    payload = POISON_VENV if poison == "venv_pth" else POISON_GITCONFIG
    case.submit({"src/slugify/__init__.py": p.package_init(payload)})
    attack = case.grade()
    after = case.grade_empty()
    check_all((attack, "FAIL"), (after, "fail_to_pass: 0 of 2 passed"))


@pytest.mark.parametrize("output", ["json", "markdown", "json_through_a_directory"])
def test_outputs_are_not_written_through_the_submissions_symlinks(
    own_case: Case, output: str
) -> None:
    case = own_case
    case.base(task=LOOSE_TASK)
    # What a line in a .pth runs, if the grader wrote its markdown there.
    target = site_packages(case.python) / f"zz_{case.marker}.pth"
    root = case.repo.root
    if output == "json_through_a_directory":
        (root / "out").symlink_to(site_packages(case.python))
        json_path, markdown_path = root / "out" / f"zz_{case.marker}.pth", None
    else:
        name = "report.json" if output == "json" else "summary.md"
        (root / name).symlink_to(target)
        json_path = root / name if output == "json" else None
        markdown_path = root / name if output == "markdown" else None
    case.submit({"src/slugify/core.py": p.FIXED_CORE})
    attack = case.grade(json_path=json_path, markdown_path=markdown_path)
    after = case.grade_empty()
    check_all((attack, ""), (after, "fail_to_pass: 0 of 2 passed"))
    assert not target.exists()
