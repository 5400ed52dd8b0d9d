"""ConstraintGrader: every rule of the gate, on real git repositories."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from repogym.errors import TaskError
from repogym.graders import CompositeGrader, ConstraintGrader
from repogym.models import MAX_FINDINGS, Finding, GradeComponent, Role
from repogym.workspace import Workspace
from tests.support.repo import Repo

TESTS = """\
command: pytest -q --junitxml={junit}
fail_to_pass: [tests/test_a.py::test_x]
pass_to_pass: ['tests/test_b.py::TestB::test_y[a::b]', tests/unit/test_c.py]
"""


def task(constraints: str = "", tests: str | None = None) -> str:
    """A task file. Without ``tests`` it is a refactor task whose only objective is a
    quality limit, which adds no constraint check."""
    lines = ["version: 1", "type: refactor" if tests is None else "type: bugfix"]
    if tests is not None:
        lines += ["tests:", textwrap.indent(textwrap.dedent(tests), "  ").rstrip()]
    section = [] if tests is not None else ["  max_function_length: 1000"]
    if constraints:
        section.append(textwrap.indent(textwrap.dedent(constraints).strip("\n"), "  ").rstrip())
    if section:
        lines += ["constraints:", *section]
    return "\n".join(lines) + "\n"


def based(repo: Repo, task_text: str, files: dict[str, str | bytes] | None = None) -> str:
    return repo.commit("base", {".repogym.yml": task_text, **(files or {})})


def grade(repo: Repo, base: str = "main") -> GradeComponent:
    return ConstraintGrader().grade(Workspace.open(repo.root, base=base))


def check(component: GradeComponent, rule: str) -> dict[str, Any]:
    (found,) = [c for c in component.details["checks"] if c["rule"] == rule]
    return found


def rules(component: GradeComponent) -> list[str]:
    return [c["rule"] for c in component.details["checks"]]


def test_task_helper_builds_what_it_says() -> None:
    assert task("max_files_changed: 3") == (
        "version: 1\ntype: refactor\nconstraints:\n  max_function_length: 1000\n"
        "  max_files_changed: 3\n"
    )


# -- the shape of the component ---------------------------------------------------------


def test_untouched_submission_passes_the_always_on_protected_check(repo: Repo) -> None:
    based(repo, task(), {"src/a.py": "x = 1\n"})
    component = grade(repo)
    assert component.name == "constraints"
    assert component.role is Role.GATE
    assert component.score == 1.0
    assert component.passed is True
    assert component.details == {
        "checks": [{"rule": "protected", "passed": True, "violations": []}]
    }
    assert component.messages == ("no violation (1 check)",)


def test_each_declared_key_is_one_check_in_a_fixed_order(repo: Repo) -> None:
    constraints = r"""
    required_patterns: ['^VERSION = \d+$', '^def main\(']
    forbidden_patterns: ['breakpoint\(', 'import pdb']
    max_lines_changed: 10
    max_files_changed: 3
    allowed_files: [src/**]
    protected: [docs/**]
    paths: [src/**]
    """
    based(repo, task(constraints), {"src/a.py": "VERSION = 1\n\ndef main():\n    pass\n"})
    repo.write({"src/a.py": "VERSION = 2\n\ndef main():\n    pass\n"})
    component = grade(repo)
    assert rules(component) == [
        "protected",
        "allowed_files",
        "max_files_changed",
        "max_lines_changed",
        "forbidden_patterns",
        "required_patterns",
    ]
    assert all(c["passed"] is True and c["violations"] == [] for c in component.details["checks"])
    assert component.score == 1.0
    assert component.passed is True
    assert component.messages == ("no violation (6 checks)",)


@pytest.mark.parametrize(
    ("constraints", "count"),
    [
        ("protected: [docs/**]", 1),  # part of the always-on check
        ("paths: [src/**]", 1),  # selects files, is no check itself
        ("max_cyclomatic_complexity: 3", 1),  # a quality rule, not a constraint
        ("allowed_files: []", 2),
        ("max_files_changed: 0", 2),
        ("max_lines_changed: 0", 2),
        ("forbidden_patterns: []", 2),
        ("required_patterns: []", 2),
    ],
)
def test_which_keys_make_a_check(repo: Repo, constraints: str, count: int) -> None:
    based(repo, task(constraints))
    component = grade(repo)
    assert len(component.details["checks"]) == count
    assert component.score == 1.0
    assert component.passed is True


# -- protected files ----------------------------------------------------------------------


def test_task_file_is_protected_uncommitted(repo: Repo) -> None:
    based(repo, task())
    repo.write({".repogym.yml": task("max_files_changed: 100")})
    component = grade(repo)
    assert component.details == {
        "checks": [
            {
                "rule": "protected",
                "passed": False,
                "violations": [
                    {
                        "path": ".repogym.yml",
                        "message": ".repogym.yml is protected (the task file) and was modified",
                    }
                ],
            }
        ]
    }
    assert component.score == 0.0
    assert component.passed is False
    assert component.messages == (".repogym.yml is protected (the task file) and was modified",)


def test_task_file_is_protected_committed_and_deleted(repo: Repo) -> None:
    based(repo, task())
    repo.branch("pr")
    repo.delete(".repogym.yml")
    repo.commit("drop the rubric")
    component = grade(repo)
    assert check(component, "protected")["violations"] == [
        {
            "path": ".repogym.yml",
            "message": ".repogym.yml is protected (the task file) and was deleted",
        }
    ]
    assert component.passed is False


def test_files_named_by_test_ids_are_protected(repo: Repo) -> None:
    based(
        repo,
        task(tests=TESTS),
        {
            "tests/test_a.py": "def test_x(): pass\n",
            "tests/test_b.py": "class TestB: pass\n",
            "tests/unit/test_c.py": "",
            "src/a.py": "",
        },
    )
    repo.delete("tests/test_a.py")
    repo.write(
        {
            "tests/test_b.py": "class TestB: ...\n",
            "tests/test_new.py": "def test_new(): pass\n",
            "src/a.py": "x = 1\n",
        }
    )
    component = grade(repo)
    assert rules(component) == ["protected"]
    assert check(component, "protected") == {
        "rule": "protected",
        "passed": False,
        "violations": [
            {
                "path": "tests/test_a.py",
                "message": "tests/test_a.py is protected (named by a test id) and was deleted",
            },
            {
                "path": "tests/test_b.py",
                "message": "tests/test_b.py is protected (named by a test id) and was modified",
            },
        ],
    }
    assert component.score == 0.0
    assert component.passed is False


def test_adding_a_file_a_test_id_names_is_caught(repo: Repo) -> None:
    # The target test does not exist yet at base; the submission may not write it.
    based(repo, task(tests=TESTS), {"src/a.py": ""})
    repo.write({"tests/test_a.py": "def test_x(): assert True\n"})
    assert check(grade(repo), "protected")["violations"] == [
        {
            "path": "tests/test_a.py",
            "message": "tests/test_a.py is protected (named by a test id) and was added",
        }
    ]


def test_moving_a_protected_file_is_caught_like_deleting_it(repo: Repo) -> None:
    based(repo, task(tests=TESTS), {"tests/test_a.py": "def test_x(): pass\n"})
    repo.git("mv", "tests/test_a.py", "tests/test_moved.py")
    component = grade(repo)
    assert check(component, "protected")["violations"] == [
        {
            "path": "tests/test_a.py",
            "message": "tests/test_a.py is protected (named by a test id) and was deleted",
        }
    ]


@pytest.mark.parametrize("hidden", [".repogym/hidden", ".repogym/hidden/"])
def test_hidden_tests_and_where_they_are_injected_are_protected(repo: Repo, hidden: str) -> None:
    tests = TESTS + f"hidden: {hidden}\n"
    based(
        repo,
        task(tests=tests),
        {
            ".repogym/hidden/tests/test_h.py": "def test_h(): pass\n",
            ".repogym/hidden/test_top.py": "def test_top(): pass\n",
            ".repogym/other.txt": "not hidden\n",
            "tests/test_a.py": "",
        },
    )
    repo.write(
        {
            ".repogym/hidden/tests/test_h.py": "def test_h(): assert True\n",
            ".repogym/hidden/extra.py": "",
            "tests/test_h.py": "def test_h(): pass\n",
            "test_top.py": "def test_top(): pass\n",
            "tests/test_mine.py": "def test_mine(): pass\n",
            ".repogym/other.txt": "changed\n",
        }
    )
    component = grade(repo)
    assert check(component, "protected")["violations"] == [
        {
            "path": ".repogym/hidden/extra.py",
            "message": ".repogym/hidden/extra.py is protected (a hidden test) and was added",
        },
        {
            "path": ".repogym/hidden/tests/test_h.py",
            "message": ".repogym/hidden/tests/test_h.py is protected (a hidden test) "
            "and was modified",
        },
        {
            "path": "test_top.py",
            "message": "test_top.py is protected (where a hidden test is injected) and was added",
        },
        {
            "path": "tests/test_h.py",
            "message": "tests/test_h.py is protected (where a hidden test is injected) "
            "and was added",
        },
    ]
    assert component.score == 0.0


def test_deleting_a_hidden_test_is_caught(repo: Repo) -> None:
    based(
        repo,
        task(tests=TESTS + "hidden: hidden\n"),
        {"hidden/test_h.py": "def test_h(): pass\n"},
    )
    repo.delete("hidden/test_h.py")
    assert check(grade(repo), "protected")["violations"] == [
        {
            "path": "hidden/test_h.py",
            "message": "hidden/test_h.py is protected (a hidden test) and was deleted",
        }
    ]


def test_protected_globs_add_to_the_always_protected_files(repo: Repo) -> None:
    based(
        repo,
        task("protected: [docs/**, '*.cfg', '!docs/free.md']"),
        {"docs/guide.md": "g\n", "docs/free.md": "f\n", "pkg/setup.cfg": "", "src/a.py": ""},
    )
    repo.write(
        {
            "docs/guide.md": "changed\n",
            "docs/free.md": "changed\n",
            "pkg/setup.cfg": "[x]\n",
            "src/a.py": "x = 1\n",
            ".repogym.yml": task("protected: []"),
        }
    )
    component = grade(repo)
    assert rules(component) == ["protected"]
    assert check(component, "protected")["violations"] == [
        {
            "path": ".repogym.yml",
            "message": ".repogym.yml is protected (the task file) and was modified",
        },
        {
            "path": "docs/guide.md",
            "message": "docs/guide.md is protected (matched by constraints.protected) "
            "and was modified",
        },
        {
            "path": "pkg/setup.cfg",
            "message": "pkg/setup.cfg is protected (matched by constraints.protected) "
            "and was modified",
        },
    ]
    # Three protected files touched are still one violated check.
    assert component.score == 0.0
    assert len(component.messages) == 3


@pytest.mark.parametrize(
    ("tests", "constraints", "changed"),
    [
        (None, "protected: ['./docs/**']", "docs/guide.md"),
        (TESTS.replace("tests/test_a.py::", "./tests/test_a.py::"), "", "tests/test_a.py"),
        (TESTS + "hidden: ./hidden\n", "", "hidden/tests/test_h.py"),
        (TESTS + "hidden: ./hidden\n", "", "tests/test_h.py"),
        (TESTS + "hidden: ./hidden\n", "", "hidden/new_test.py"),
    ],
    ids=["protected-glob", "test-id", "hidden-test", "hidden-injected", "hidden-added"],
)
def test_protection_spelled_with_a_leading_dot_slash_still_protects(
    repo: Repo, tests: str | None, constraints: str, changed: str
) -> None:
    # `./docs/**`, `./tests/test_a.py::test_x` and `hidden: ./hidden` pass the task
    # schema as relative paths; they must either be refused when the task is loaded or
    # protect the same files as without `./`, never protect nothing.
    based(
        repo,
        task(constraints, tests=tests),
        {"docs/guide.md": "g\n", "tests/test_a.py": "", "hidden/tests/test_h.py": ""},
    )
    repo.write({changed: "changed by the submission\n"})
    try:
        component = grade(repo)
    except TaskError as error:
        assert "./" in str(error)
        return
    assert [v["path"] for v in check(component, "protected")["violations"]] == [changed]
    assert component.passed is False


# -- allowed_files, max_files_changed, max_lines_changed -----------------------------------


def test_allowed_files(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**, README.md]"), {"docs/old.md": "o\n", "src/a.py": ""})
    repo.delete("docs/old.md")
    repo.write({"src/pkg/a.py": "x = 1\n", "README.md": "r\n", "setup.py": "s\n"})
    component = grade(repo)
    assert check(component, "allowed_files") == {
        "rule": "allowed_files",
        "passed": False,
        "violations": [
            {
                "path": "docs/old.md",
                "message": "docs/old.md changed but is outside allowed_files (src/**, README.md)",
            },
            {
                "path": "setup.py",
                "message": "setup.py changed but is outside allowed_files (src/**, README.md)",
            },
        ],
    }
    assert check(component, "protected")["passed"] is True
    assert component.score == 0.5
    assert component.passed is False


def test_a_path_that_does_not_print_is_quoted_so_each_message_is_one_line(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]\nforbidden_patterns: [TODO]"), {"src/a.py": ""})
    odd = "notes\nTODO.txt"
    repo.write({odd: "TODO\n"})
    (repo.root / os.fsdecode(b"bad\xff.txt")).write_text("TODO\n")
    messages = [
        v["message"]
        for rule in ("allowed_files", "forbidden_patterns")
        for v in check(grade(repo), rule)["violations"]
    ]
    assert messages == [
        '"bad\\xff.txt" changed but is outside allowed_files (src/**)',
        '"notes\\nTODO.txt" changed but is outside allowed_files (src/**)',
        "\"bad\\xff.txt\":1: forbidden pattern 'TODO'",
        "\"notes\\nTODO.txt\":1: forbidden pattern 'TODO'",
    ]


def test_allowed_files_all_inside_passes(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]"), {"src/a.py": ""})
    repo.write({"src/a.py": "x = 1\n", "src/deep/er/b.py": "y = 2\n"})
    component = grade(repo)
    assert check(component, "allowed_files") == {
        "rule": "allowed_files",
        "passed": True,
        "violations": [],
    }
    assert component.score == 1.0


@pytest.mark.parametrize(("limit", "passed"), [(3, True), (2, False), (0, False)])
def test_max_files_changed(repo: Repo, limit: int, passed: bool) -> None:
    based(repo, task(f"max_files_changed: {limit}"), {"a.txt": "a\n", "b.txt": "b\n"})
    repo.git("mv", "a.txt", "moved.txt")  # a rename is two changed paths
    repo.write({"b.txt": "B\n"})
    component = grade(repo)
    expected = (
        []
        if passed
        else [{"value": 3, "limit": limit, "message": f"3 files changed; at most {limit} allowed"}]
    )
    assert check(component, "max_files_changed") == {
        "rule": "max_files_changed",
        "passed": passed,
        "violations": expected,
    }
    assert component.score == (1.0 if passed else 0.5)
    assert component.passed is passed


@pytest.mark.parametrize(("limit", "passed"), [(6, True), (5, False), (0, False)])
def test_max_lines_changed_counts_added_plus_removed(repo: Repo, limit: int, passed: bool) -> None:
    based(
        repo,
        task(f"max_lines_changed: {limit}"),
        {"a.txt": "1\n2\n3\n", "gone.txt": "g\n", "img.bin": b"\0\1"},
    )
    repo.write({"a.txt": "1\nTWO\n3\n4\n", "img.bin": b"\0\2" * 100, "new.txt": "n\nn\n"})
    repo.delete("gone.txt")
    # a.txt: +2 -1, gone.txt: -1, new.txt: +2, img.bin: binary, 0.
    component = grade(repo)
    expected = (
        []
        if passed
        else [
            {
                "value": 6,
                "limit": limit,
                "message": f"6 lines changed (added + removed); at most {limit} allowed",
            }
        ]
    )
    assert check(component, "max_lines_changed") == {
        "rule": "max_lines_changed",
        "passed": passed,
        "violations": expected,
    }
    assert component.score == (1.0 if passed else 0.5)


def test_max_lines_changed_sees_through_gitattributes_marking_text_binary(repo: Repo) -> None:
    based(repo, task("max_lines_changed: 5"), {"src/a.py": "x = 1\n"})
    repo.write(
        {
            "src/a.py": "".join(f"x{i} = {i}\n" for i in range(20)),
            ".gitattributes": "*.py -diff\n",
        }
    )
    component = grade(repo)
    # src/a.py: +20 -1; .gitattributes: +1.
    assert check(component, "max_lines_changed")["violations"] == [
        {
            "value": 22,
            "limit": 5,
            "message": "22 lines changed (added + removed); at most 5 allowed",
        }
    ]
    assert component.passed is False


# -- forbidden_patterns ---------------------------------------------------------------------


def test_forbidden_patterns_scan_the_whole_content_of_changed_files(repo: Repo) -> None:
    based(
        repo,
        task(r"forbidden_patterns: ['breakpoint\(', '^import pdb$']"),
        {
            "src/a.py": "x = 1\nimport pdb\ny = 2\n",
            "src/untouched.py": "breakpoint()\n",
            "src/gone.py": "breakpoint()\n",
            "blob.bin": b"\0",
        },
    )
    repo.write(
        {
            # line 2 is not changed, but is in a changed file: the whole file is scanned.
            "src/a.py": "".join(
                [
                    "x = 1\n",
                    "import pdb\n",
                    "y = 3\n",
                    "breakpoint()\n",
                    "z = breakpoint() or breakpoint()\n",
                ]
            ),
            "notes/new.txt": "  import pdb\nok\nimport pdb\n",
            "blob.bin": b"\0breakpoint(import pdb",
        }
    )
    repo.delete("src/gone.py")
    component = grade(repo)

    def hit(path: str, line: int, pattern: str) -> dict[str, Any]:
        return {
            "path": path,
            "line": line,
            "pattern": pattern,
            "message": f"{path}:{line}: forbidden pattern {pattern!r}",
        }

    assert check(component, "forbidden_patterns") == {
        "rule": "forbidden_patterns",
        "passed": False,
        "violations": [
            hit("notes/new.txt", 3, "^import pdb$"),
            hit("src/a.py", 4, r"breakpoint\("),
            hit("src/a.py", 5, r"breakpoint\("),
            hit("src/a.py", 2, "^import pdb$"),
        ],
    }
    assert component.messages[1] == r"src/a.py:4: forbidden pattern 'breakpoint\\('"
    # Two patterns, four hits: one violated check out of two.
    assert component.score == 0.5
    assert component.passed is False


def test_forbidden_pattern_spanning_lines_is_reported_at_its_first_line(repo: Repo) -> None:
    based(repo, task(r"forbidden_patterns: ['try:\n\s+pass']"), {"a.py": ""})
    repo.write({"a.py": "x = 1\ntry:\n    pass\nexcept Exception:\n    pass\n"})
    assert [
        (v["path"], v["line"]) for v in check(grade(repo), "forbidden_patterns")["violations"]
    ] == [("a.py", 2)]


def test_forbidden_pattern_only_in_unchanged_files_passes(repo: Repo) -> None:
    based(repo, task("forbidden_patterns: ['TODO']"), {"old.py": "# TODO\n", "new.py": ""})
    repo.write({"new.py": "done = True\n"})
    component = grade(repo)
    assert check(component, "forbidden_patterns") == {
        "rule": "forbidden_patterns",
        "passed": True,
        "violations": [],
    }
    assert component.passed is True


def test_forbidden_patterns_list_at_most_fifty_violations(repo: Repo) -> None:
    based(repo, task("forbidden_patterns: ['^BAD$']"))
    repo.write({"bad.txt": "BAD\n" * 55})
    component = grade(repo)
    found = check(component, "forbidden_patterns")
    assert len(found["violations"]) == 50
    assert found["violations"][-1]["line"] == 50
    assert found["violations_not_listed"] == 5
    assert len(component.messages) == 50
    assert component.score == 0.5


@pytest.mark.parametrize("target", ["src", "does-not-exist"])
def test_forbidden_patterns_with_a_symlink_to_a_directory_or_nowhere(
    repo: Repo, target: str
) -> None:
    # To git a symlink is a blob holding its target; neither that name, nor a directory,
    # nor a missing file holds a forbidden pattern, and grading must not crash on it.
    based(repo, task(r"forbidden_patterns: ['breakpoint\(']"), {"src/a.py": "x = 1\n"})
    (repo.root / "link").symlink_to(target)
    component = grade(repo)
    assert check(component, "forbidden_patterns") == {
        "rule": "forbidden_patterns",
        "passed": True,
        "violations": [],
    }
    assert component.passed is True


def test_symlink_leading_outside_is_never_read(repo: Repo, tmp_path: Path) -> None:
    # Symlinks are not followed by the pattern rules: the file outside is never read,
    # so its content can neither trip a forbidden pattern nor satisfy a required one.
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    based(repo, task("forbidden_patterns: ['TOP SECRET']\nrequired_patterns: ['SECRET']"))
    (repo.root / "link.txt").symlink_to(secret)
    ws = Workspace.open(repo.root, base="main")
    constraints = CompositeGrader([ConstraintGrader()]).grade_result(ws).component("constraints")
    assert check(constraints, "forbidden_patterns")["passed"] is True
    assert check(constraints, "required_patterns")["passed"] is False
    assert not any("TOP SECRET" in m for m in constraints.messages)


def test_text_marked_binary_by_the_submission_is_still_scanned(repo: Repo) -> None:
    # The submission's own .gitattributes must not hide a file from forbidden_patterns.
    based(repo, task(r"forbidden_patterns: ['breakpoint\(']"), {"src/a.py": "x = 1\n"})
    repo.write({"src/a.py": "x = 1\nbreakpoint()\n", ".gitattributes": "*.py -diff\n"})
    assert check(grade(repo), "forbidden_patterns")["violations"] == [
        {
            "path": "src/a.py",
            "line": 2,
            "pattern": r"breakpoint\(",
            "message": r"src/a.py:2: forbidden pattern 'breakpoint\\('",
        }
    ]


# -- required_patterns ----------------------------------------------------------------------


def test_required_patterns_on_paths(repo: Repo) -> None:
    based(
        repo,
        task(r"""
        paths: ['src/**/*.py']
        required_patterns: ['def parse_\w+\(', '^__all__ = ']
        """),
        {"src/pkg/parse.py": "def parse(s):\n    return s\n", "docs/example.py": "__all__ = []\n"},
    )
    repo.write({"src/pkg/parse.py": "def parse_unicode(s):\n    return s\n"})
    component = grade(repo)
    found = check(component, "required_patterns")
    assert found["passed"] is False
    assert [v["pattern"] for v in found["violations"]] == ["^__all__ = "]
    assert found["violations"][0]["message"].endswith(
        "under paths (src/**/*.py) matches required pattern '^__all__ = '"
    )
    assert component.score == 0.5
    assert component.passed is False


def test_required_patterns_all_found_pass(repo: Repo) -> None:
    based(
        repo,
        task(r"""
        paths: ['src/**/*.py']
        required_patterns: ['def parse_\w+\(', '^__all__ = ']
        """),
        {"src/pkg/parse.py": "def parse(s):\n    return s\n"},
    )
    repo.write({"src/pkg/parse.py": "__all__ = []\ndef parse_x(s):\n    return s\n"})
    component = grade(repo)
    assert check(component, "required_patterns") == {
        "rule": "required_patterns",
        "passed": True,
        "violations": [],
    }
    assert component.score == 1.0


def test_required_patterns_without_paths_search_every_file(repo: Repo) -> None:
    based(repo, task(r"required_patterns: ['^NEEDED = \d']"), {"a.txt": ""})
    repo.write({"deep/dir/untracked.cfg": "NEEDED = 1\n"})
    assert check(grade(repo), "required_patterns")["passed"] is True


def test_required_pattern_in_a_deleted_or_binary_file_does_not_count(repo: Repo) -> None:
    based(repo, task(r"required_patterns: ['^NEEDED = \d']"), {"gone.txt": "NEEDED = 1\n"})
    repo.delete("gone.txt")
    repo.write({"blob.bin": b"\0NEEDED = 1\n"})
    found = check(grade(repo), "required_patterns")
    assert found["passed"] is False
    assert [v["pattern"] for v in found["violations"]] == [r"^NEEDED = \d"]


def test_required_pattern_is_not_satisfied_by_the_task_file_itself(repo: Repo) -> None:
    # The pattern as written in `.repogym.yml` must not count as the submission having
    # written it: otherwise every literal required pattern passes on an empty submission.
    based(repo, task("required_patterns: ['def parse_unicode']"), {"src/parse.py": "x = 1\n"})
    found = check(grade(repo), "required_patterns")
    assert found["passed"] is False
    assert [v["pattern"] for v in found["violations"]] == ["def parse_unicode"]


def test_required_patterns_survive_a_symlink_to_a_directory_in_the_tree(repo: Repo) -> None:
    based(
        repo, task(r"required_patterns: ['^def main\(']"), {"src/a.py": "def main():\n    pass\n"}
    )
    (repo.root / "lib").symlink_to("src")
    repo.git("add", "lib")
    repo.git("commit", "-q", "-m", "a symlink to a directory, committed at base")
    component = grade(repo)
    assert check(component, "required_patterns") == {
        "rule": "required_patterns",
        "passed": True,
        "violations": [],
    }


# -- scores ----------------------------------------------------------------------------------


def test_three_checks_one_violated_scores_two_thirds(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]\nmax_files_changed: 5"), {"src/a.py": ""})
    repo.write({"src/a.py": "x = 1\n", "README.md": "r\n"})
    component = grade(repo)
    assert [(c["rule"], c["passed"]) for c in component.details["checks"]] == [
        ("protected", True),
        ("allowed_files", False),
        ("max_files_changed", True),
    ]
    assert component.score == pytest.approx(2 / 3, abs=1e-12)
    assert component.passed is False
    assert component.messages == ("README.md changed but is outside allowed_files (src/**)",)


def test_six_checks_two_then_five_violated(repo: Repo) -> None:
    constraints = r"""
    allowed_files: [src/**]
    max_files_changed: 1
    max_lines_changed: 100
    forbidden_patterns: ['print\(']
    required_patterns: ['^NEVER_THERE$']
    paths: [src/**]
    """
    based(repo, task(constraints), {"src/a.py": ""})
    repo.write({"src/a.py": "print(1)\n"})
    component = grade(repo)
    assert [(c["rule"], c["passed"]) for c in component.details["checks"]] == [
        ("protected", True),
        ("allowed_files", True),
        ("max_files_changed", True),
        ("max_lines_changed", True),
        ("forbidden_patterns", False),
        ("required_patterns", False),
    ]
    assert component.score == pytest.approx(4 / 6, abs=1e-12)
    repo.write({".repogym.yml": "tampered\n"})  # now protected, allowed_files and max_files too
    component = grade(repo)
    assert [c["rule"] for c in component.details["checks"] if not c["passed"]] == [
        "protected",
        "allowed_files",
        "max_files_changed",
        "forbidden_patterns",
        "required_patterns",
    ]
    assert component.score == pytest.approx(1 / 6, abs=1e-12)


def test_every_check_violated_scores_zero(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]\nmax_lines_changed: 0"), {"src/a.py": ""})
    repo.write({".repogym.yml": "x\n"})
    component = grade(repo)
    assert component.score == 0.0
    assert component.passed is False


# -- in the composite -----------------------------------------------------------------------


def test_failing_constraints_gate_zeroes_the_total(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]\nmax_files_changed: 5"), {"src/a.py": ""})
    repo.write({"src/a.py": "x = 1\n", "README.md": "r\n"})
    ws = Workspace.open(repo.root, base="main")
    result = CompositeGrader.for_workspace(ws).grade_result(ws)
    assert [c.name for c in result.components] == ["constraints", "quality"]
    assert result.summary() == "FAIL 0.000 (constraints=0.66✗(gate), quality=1.00✓)"
    assert result.component("constraints").weight == 0.0
    assert result.files_changed == ("README.md", "src/a.py")


def test_passing_constraints_gate_lets_the_objective_count(repo: Repo) -> None:
    based(repo, task("allowed_files: [src/**]"), {"src/a.py": ""})
    repo.write({"src/a.py": "x = 1\n"})
    ws = Workspace.open(repo.root, base="main")
    result = CompositeGrader.for_workspace(ws).grade_result(ws)
    assert result.summary() == "PASS 1.000 (constraints=1.00✓(gate), quality=1.00✓)"


def test_hidden_tests_from_elsewhere_are_protected_where_injected(
    repo: Repo, tmp_path: Path
) -> None:
    # The Action can take hidden tests from outside the base tree; their injection paths
    # are as protected as those of tests.hidden.
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_secret.py").write_text("def test_secret():\n    pass\n")
    based(repo, task())
    repo.write({"tests/test_secret.py": "def test_secret():\n    assert True\n"})
    workspace = Workspace.open(repo.root, base="main")
    assert ConstraintGrader().grade(workspace).passed
    component = ConstraintGrader(hidden=hidden).grade(workspace)
    assert check(component, "protected")["violations"] == [
        {
            "path": "tests/test_secret.py",
            "message": "tests/test_secret.py is protected (where a hidden test is injected) "
            "and was added",
        }
    ]
    graders = CompositeGrader.from_task(workspace.task, hidden=hidden).graders
    # One constructor: every built-in grader is handed them (the quality grader ignores them).
    assert [type(g).__name__ for g in graders] == ["ConstraintGrader", "QualityGrader"]
    assert [getattr(g, "hidden", None) for g in graders] == [hidden, hidden]
    assert ConstraintGrader(hidden=str(hidden)).grade(workspace).details == component.details


# -- findings -----------------------------------------------------------------------------


def test_every_violation_is_a_finding_at_its_file_and_line(repo: Repo) -> None:
    constraints = r"""
    protected: [docs/**]
    allowed_files: [src/**]
    max_files_changed: 2
    max_lines_changed: 3
    forbidden_patterns: ['breakpoint\(']
    required_patterns: ['^def main\(']
    """
    based(repo, task(constraints), {"src/a.py": "x = 1\n", "docs/guide.md": "old\n"})
    repo.write(
        {
            "src/a.py": "x = 1\nbreakpoint()\ny = 2\nbreakpoint(); breakpoint()\n",
            "docs/guide.md": "new\n",
            "notes.txt": "n\n",
        }
    )
    component = grade(repo)
    assert component.findings == (
        Finding(
            title="protected",
            path="docs/guide.md",
            message="docs/guide.md is protected (matched by constraints.protected) "
            "and was modified",
        ),
        Finding(
            title="allowed_files",
            path="docs/guide.md",
            message="docs/guide.md changed but is outside allowed_files (src/**)",
        ),
        Finding(
            title="allowed_files",
            path="notes.txt",
            message="notes.txt changed but is outside allowed_files (src/**)",
        ),
        Finding(title="max_files_changed", message="3 files changed; at most 2 allowed"),
        Finding(
            title="max_lines_changed",
            message="6 lines changed (added + removed); at most 3 allowed",
        ),
        # Two matches on one line are one finding there.
        Finding(
            title="forbidden_patterns",
            path="src/a.py",
            line=2,
            message=r"forbidden pattern 'breakpoint\\('",
        ),
        Finding(
            title="forbidden_patterns",
            path="src/a.py",
            line=4,
            message=r"forbidden pattern 'breakpoint\\('",
        ),
        Finding(
            title="required_patterns",
            message=r"no file matches required pattern '^def main\\('",
        ),
    )
    assert component.to_dict()["findings"][5] == {
        "path": "src/a.py",
        "line": 2,
        "title": "forbidden_patterns",
        "message": r"forbidden pattern 'breakpoint\\('",
        "level": "failure",
    }


def test_a_passing_gate_has_no_finding(repo: Repo) -> None:
    based(repo, task(r"forbidden_patterns: ['breakpoint\(']"), {"src/a.py": "x = 1\n"})
    repo.write({"src/a.py": "x = 2\n"})
    component = grade(repo)
    assert component.passed and component.findings == ()


def test_findings_stop_at_the_cap_and_count_the_rest(repo: Repo) -> None:
    based(repo, task(r"forbidden_patterns: ['breakpoint\(']"), {"src/a.py": ""})
    repo.write({"src/a.py": "breakpoint()\n" * (MAX_FINDINGS + 30)})
    findings = grade(repo).findings
    assert len(findings) == MAX_FINDINGS + 1
    assert [f.line for f in findings[:MAX_FINDINGS]] == list(range(1, MAX_FINDINGS + 1))
    assert findings[-1] == Finding(
        title="not listed", message="30 more violations not listed", level="notice"
    )
