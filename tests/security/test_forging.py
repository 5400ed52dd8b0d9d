"""Forging results from inside the test process (issue 9): the submission's package,
imported by the tests, changes what pytest writes. Each is graded against examples/bugfix
with its constraints loosened (LOOSE_TASK): the only change is the package's
``__init__.py`` (or a module beside it)."""

from __future__ import annotations

import textwrap

import pytest

from tests.security import _payloads as p
from tests.security._harness import LOOSE_TASK, Case

# pytest's JUnit writer told to leave failures out: each failed test is written as a
# testcase with nothing in it, which reads as a pass; pytest still exits 1.
PATCH_JUNIT_WRITER = textwrap.dedent(
    """
    import sys

    _junit = sys.modules.get("_pytest.junitxml")
    if _junit is not None:
        _junit._NodeReporter.append_failure = lambda self, report: None
    """
)

# The test module that imports the package is swapped, in sys.modules, for a copy
# compiled without its assertions: pytest collects that copy.
STRIP_ASSERTIONS = textwrap.dedent(
    """
    import ast
    import sys
    import types


    class _NoAsserts(ast.NodeTransformer):
        def visit_Assert(self, node):
            return ast.copy_location(ast.Pass(), node)


    def _swap_importer():
        frame = sys._getframe(1)
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            path = frame.f_globals.get("__file__") or ""
            if path.rsplit("/", 1)[-1].startswith("test_"):
                break
            frame = frame.f_back
        if frame is None:
            return
        with open(path, encoding="utf-8") as f:
            tree = _NoAsserts().visit(ast.parse(f.read()))
        module = types.ModuleType(name)
        module.__file__ = path
        sys.modules[name] = module
        exec(compile(ast.fix_missing_locations(tree), path, "exec"), module.__dict__)


    _swap_importer()
    """
)

# The report rewritten at exit, after pytest has written its own.
REWRITE_AT_EXIT = p.FORGE_JUNIT + '\n\n__import__("at" + "exit").register(_forge_junit)\n'

# The real test module skipped as a whole, the moment it imports the package ...
SKIP_THE_REAL_TESTS = textwrap.dedent(
    """
    import pytest

    pytest.skip("not on this platform", allow_module_level=True)
    """
)
# ... and tests elsewhere that pass under the names of the real ones.
IMPERSONATORS = textwrap.dedent(
    """
    import pytest

    NAMES = [
        "test_ascii",
        "test_accents_are_transliterated",
        "test_examples[hello, world]",
        "test_examples[cr\\\\xe8me br\\\\xfbl\\\\xe9e]",
    ]


    @pytest.mark.parametrize("name", NAMES)
    def test_impersonate(name, record_xml_attribute):
        record_xml_attribute("classname", "tests.test_slugify")
        record_xml_attribute("name", name)
        record_xml_attribute("file", "tests/test_slugify.py")
    """
)

ATTACKS = {
    "patch_junit_writer": {"src/slugify/__init__.py": p.package_init(PATCH_JUNIT_WRITER)},
    # After the package's own imports: the stripped copy imports the package again.
    "strip_assertions": {"src/slugify/__init__.py": p.BASE_INIT + STRIP_ASSERTIONS},
    "rewrite_report_at_exit": {"src/slugify/__init__.py": p.package_init(REWRITE_AT_EXIT)},
    "record_xml_attribute_impersonation": {
        "src/slugify/__init__.py": p.package_init(SKIP_THE_REAL_TESTS),
        "src/slugify/test_compat.py": IMPERSONATORS,
    },
}


# Code under test runs in the test process: a package that rewrites the tests that
# import it, before they run, makes the runner's report and exit status agree on a pass.
# No grader can catch that (docs/security.md, "What no grader can promise"); this case
# stays here to show the limit, and turns into a failure if it is ever caught.
_UNCATCHABLE = pytest.mark.xfail(
    strict=True, reason="same-process code can rewrite its tests (docs/security.md)"
)


@pytest.mark.parametrize(
    "attack",
    [
        pytest.param(a, marks=_UNCATCHABLE) if a == "strip_assertions" else a
        for a in sorted(ATTACKS)
    ],
)
def test_results_cannot_be_forged_from_the_test_process(case: Case, attack: str) -> None:
    case.base(task=LOOSE_TASK)
    case.submit(ATTACKS[attack])
    case.grade().check("FAIL")
