"""Make the JSON reports the renderer's golden files are rendered from.

    python tests/data/reports/make_reports.py [NAME...]   # from the repository root, ~1 minute

The reports of real grades come from grading the bundled examples (repogym._demo) with
`repogym grade --json`: a reference solution, a bad one, one that fails a hidden test,
one graded by every grader. The others are edits of those: reports of a grade that
could not finish (the `error` key of docs/report.md), hostile strings in every place a
submission controls, and a report too long for GitHub. Then regenerate the goldens:
`pytest tests/report/test_render.py --update-golden`.

Until the graders write `findings` (issue 8), a component without any gets the findings
its details describe, in the graders' shape; a report whose graders wrote them keeps its own.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from repogym._demo import build_example_repo

HERE = Path(__file__).resolve().parent

# Every string a hostile submission would try: a mention, a team, issue links, the end of
# the comment's folded part, the comment's marker, HTML, an image, a link, a table cell.
HOSTILE = (
    "@someone",
    "@org/team",
    "#123",
    "GH-123",
    "org/repo#1",
    "</details>",
    "<!-- repogym -->",
    "<img src=x onerror=alert(1)>",
    "![x](http://a/b.png)",
    "[x](javascript:alert(1))",
    "https://evil.example/",
    "a|b",
)


def main(names: list[str]) -> None:
    """Make the reports ``names`` (all of them when none is named)."""
    with tempfile.TemporaryDirectory(prefix="repogym-reports-") as temp:
        root = Path(temp)
        graded = {
            "pass": lambda: grade(root, "bugfix", "pass"),
            "fail": lambda: grade(root, "bugfix", "fail", _bad_bugfix),
            "hidden": lambda: grade(root, "feature", "hidden", _no_tie_break),
            "every_grader": lambda: grade(root, "perf", "every_grader", _every_grader),
            "baseline": lambda: grade(root, "bugfix", "baseline", _baseline),
            "flaky": lambda: grade(root, "bugfix", "flaky", _made_flaky),
        }
        wanted = names or [*graded, *_EDITED]
        reports = {name: make() for name, make in graded.items() if name in wanted}
    for name, (source, edit) in _EDITED.items():
        if name in wanted:
            reports[name] = edit(_read(source, reports))
    for name, report in reports.items():
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        (HERE / f"{name}.json").write_text(text, encoding="utf-8")
        print(f"{name}.json: {report.get('summary') or report['error']['message']}")


def _read(name: str, reports: dict[str, Any]) -> dict[str, Any]:
    if name in reports:
        return reports[name]  # type: ignore[no-any-return]
    loaded: dict[str, Any] = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def grade(root: Path, example: str, name: str, edit: Any = None) -> dict[str, Any]:
    """The JSON report of grading ``example``: its reference solution, or what ``edit``
    (a function of the repository) commits over the baseline."""
    repo = build_example_repo(example, root / name, solution=edit is None)
    if edit is not None:
        edit(repo)
        _git(repo, "add", "--all")
        _git(repo, "commit", "--quiet", "-m", f"{name}: submission")
    out = root / f"{name}.json"
    command = [sys.executable, "-m", "repogym", "grade", "-C", str(repo), "--base", "main"]
    subprocess.run([*command, "--json", str(out)], check=False, stdout=subprocess.DEVNULL)
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    for component in report["components"]:
        if not component.get("findings"):
            component["findings"] = _findings(component)
    return report


def _git(repo: Path, *args: str) -> None:
    identity = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.invalid"}
    identity |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.invalid"}
    subprocess.run(["git", *args], cwd=repo, check=True, env={"PATH": "/usr/bin:/bin", **identity})


def _bad_bugfix(repo: Path) -> None:
    """Edits the protected tests, leaves a breakpoint, fixes one case of two, and does it
    in a function too complex for the task's limit."""
    core = repo / "src/slugify/core.py"
    fixed = core.read_text().replace(
        "    ascii_only =", '    title = title.replace("é", "e").replace("à", "a")\n    ascii_only ='
    )
    core.write_text(
        fixed
        + "\n\ndef fold(char):\n    breakpoint()\n"
        + "".join(f"    if char == {c!r}:\n        return {r!r}\n" for c, r in zip("àáâäéèêëîïôöùûü", "aaaaeeeeiioouuu"))
        + "    return char\n"
    )
    tests = repo / "tests/test_slugify.py"
    tests.write_text(tests.read_text().replace('"deja-vu"', '"dj-vu"'))


def _baseline(repo: Path) -> None:
    """The bugfix example graded without lists (issue 22): on the base, a task of
    `fail_to_pass: added` and `pass_to_pass: baseline`; the submission fixes the accents
    and adds a test of them and one that passes anyway, and drops digits on the way, which
    breaks an old test."""
    task = repo / ".repogym.yml"
    text = task.read_text()
    start, end = text.index("  fail_to_pass:"), text.index("  timeout:")
    text = text[:start] + "  fail_to_pass: added\n  pass_to_pass: baseline\n" + text[end:]
    text = text.replace("  protected: [tests/**]\n", "").replace("[src/**]", "[src/**, tests/**]")
    _git(repo, "checkout", "--quiet", "main")
    task.write_text(text)
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "-m", "baseline")
    _git(repo, "checkout", "--quiet", "submission")
    _git(repo, "rebase", "--quiet", "main")
    core = repo / "src/slugify/core.py"
    core.write_text(
        core.read_text()
        .replace("import re\n", "import re\nimport unicodedata\n")
        .replace('title.encode("ascii"', 'unicodedata.normalize("NFKD", title).encode("ascii"')
        .replace("[a-z0-9]+", "[a-z]+")
    )
    (repo / "tests/test_accents.py").write_text(
        "from slugify import slugify\n\n\ndef test_cedilla():\n"
        '    assert slugify("Façade") == "facade"\n\n\ndef test_plain_word():\n'
        '    assert slugify("word") == "word"\n'
    )


def _made_flaky(repo: Path) -> None:
    """The reference fix, with a cache that is wrong the first time it is used in a copy
    of the tree (it leaves a file there): the first test to run fails, here a regression
    test, which then fails its first rerun too (a copy of its own) and passes its second.
    Made flaky by the change (issue 47): the grade fails, and the report says so."""
    solution = Path(__file__).resolve().parents[3] / "examples/bugfix/solution/src/slugify/core.py"
    fixed = solution.read_text().replace(
        '    """Lower-case words joined by hyphens: "Crème brûlée" -> "creme-brulee"."""\n',
        '    """Lower-case words joined by hyphens: "Crème brûlée" -> "creme-brulee"."""\n'
        "    if not os.path.exists(\".warm\"):\n"
        "        open(\".warm\", \"w\").close()\n"
        "        return \"\"\n",
    )
    (repo / "src/slugify/core.py").write_text(fixed.replace("import re\n", "import os\nimport re\n"))


def _no_tie_break(repo: Path) -> None:
    """top_words without the alphabetical tie-break that only the hidden test checks."""
    words = repo / "src/textstats/words.py"
    words.write_text(
        words.read_text()
        + "\n\ndef top_words(text, n):\n    return Counter(words(text)).most_common(n)\n"
    )
    init = repo / "src/textstats/__init__.py"
    if "top_words" not in init.read_text():
        init.write_text(init.read_text() + "from textstats.words import top_words\n")
    text = words.read_text()
    if "from collections import Counter" not in text:
        words.write_text("from collections import Counter\n" + text)


def _every_grader(repo: Path) -> None:
    """The perf example's solution graded by every grader: quality limits and a custom
    grader (the spec's NoTodoGrader) added to the task on the baseline, a TODO left in
    the solution; one benchmark run per side, to be quick."""
    task = repo / ".repogym.yml"
    text = task.read_text().replace("runs: 3", "runs: 1").replace("warmup: 1", "warmup: 0")
    text = text.replace("allowed_files: [src/**]", "allowed_files: [src/**]\n  paths: [src/**/*.py]")
    task.write_text(
        text
        + "  max_function_length: 20\n  max_cyclomatic_complexity: 5\n"
        + "grading:\n  weights: {perf: 0.8, no_todo: 0.2}\n"
        + "  graders: ['tools.graders:NoTodoGrader']\n"
    )
    (repo / "tools").mkdir()
    (repo / "tools/__init__.py").write_text("")
    (repo / "tools/graders.py").write_text(
        "from repogym.graders import Grader\n"
        "from repogym.models import GradeComponent\n\n\n"
        "class NoTodoGrader(Grader):\n"
        '    name = "no_todo"\n\n'
        "    def grade(self, workspace):\n"
        '        bad = [f for f in workspace.changed_files() if "TODO" in workspace.read(f)]\n'
        "        return GradeComponent(name=self.name, score=float(not bad), passed=not bad,\n"
        '                              messages=[f"TODO in {f}" for f in bad])\n'
    )
    _git(repo, "checkout", "--quiet", "main")
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "-m", "every grader")
    _git(repo, "checkout", "--quiet", "submission")
    _git(repo, "rebase", "--quiet", "main")
    core = repo / "src/dedupe/core.py"
    core.write_text(
        '"""Order-preserving de-duplication."""\n\n\n'
        "def unique(items):\n"
        '    """The items in first-seen order, each once."""\n'
        "    # TODO: a generator for very long inputs\n"
        "    return list(dict.fromkeys(items))\n"
    )


def _findings(component: dict[str, Any]) -> list[dict[str, Any]]:
    """What a component's details describe, as the graders' findings (models.Finding)."""
    details, name = component["details"], component["name"]
    if name == "constraints":
        return [
            _finding(
                check["rule"],
                v["message"] if check["rule"] != "forbidden_patterns" else
                f"forbidden pattern {v['pattern']!r}",
                v.get("path"),
                v.get("line"),
            )
            for check in details["checks"]
            for v in check["violations"]
        ]
    if name == "quality":
        keys = {"length": "max_function_length", "complexity": "max_cyclomatic_complexity"}
        return [
            _finding(
                keys[v["metric"]],
                f"{v['function']} has {v['metric']} {v['value']} (limit {v['limit']})",
                v["path"],
                v["line"],
            )
            for v in details["violations"]
        ]
    if name == "tests":
        found = []
        hidden = set(details["hidden"])
        for kind, bad in (("fail_to_pass", "passed"), ("pass_to_pass", "passed")):
            for test_id, outcome in details[kind].items():
                if outcome != bad and test_id not in hidden:
                    path = test_id.split("::", 1)[0]
                    found.append(_finding(kind, f"{test_id} {outcome}", path, None))
        failing = [i for i in hidden if details["fail_to_pass"].get(i, "passed") != "passed"]
        if failing:
            found.append(_finding("hidden", f"{len(failing)} hidden test not passing", None, None))
        return found
    return []


def _finding(title: str, message: str, path: str | None, line: int | None) -> dict[str, Any]:
    return {"path": path, "line": line, "title": title, "message": message, "level": "failure"}


def _error_task(fail: dict[str, Any]) -> dict[str, Any]:
    """A task file that does not parse: the commits are known, the task only by its place."""
    return {
        "version": fail["version"],
        "tool": fail["tool"],
        "error": {
            "kind": "task",
            "message": ".repogym.yml@main: line 7: `tests.timeout` (-5) must be positive; "
            "give the seconds a test run may take, such as 900",
        },
        "base": fail["base"],
        "merge_base": fail["merge_base"],
        "head": fail["head"],
        "task": {"source": fail["task"]["source"]},
    }


def _error_environment(fail: dict[str, Any]) -> dict[str, Any]:
    """The task's Dockerfile does not build (issue 20): the build log's tail comes along."""
    return {
        "version": fail["version"],
        "tool": fail["tool"],
        "error": {
            "kind": "environment",
            "message": ".repogym.yml@main: `environment.dockerfile` env/Dockerfile (at "
            "4fdd4b96cecc) does not build: The command '/bin/sh -c npm ci' returned a "
            "non-zero code: 1; fix it on the base branch (the build log's last lines follow)",
            "log_tail": "Step 2/3 : RUN npm ci\n ---> Running in 2f2f3281b35e\n"
            "npm ERR! `npm ci` can only install packages when your package.json and "
            "package-lock.json are in sync.\n<details> @someone #123",
        },
        "base": fail["base"],
        "merge_base": fail["merge_base"],
        "head": fail["head"],
        "task": {"source": fail["task"]["source"]},
    }


def _error_internal(passed: dict[str, Any]) -> dict[str, Any]:
    """An error that is nobody's but repogym's, before anything was known."""
    return {
        "version": passed["version"],
        "tool": passed["tool"],
        "error": {
            "kind": "internal",
            "message": "OSError: [Errno 28] No space left on device; "
            "the traceback is in /tmp/repogym-error-1a2b3c.txt",
        },
    }


def _hostile(fail: dict[str, Any]) -> dict[str, Any]:
    """The bad submission's report with every hostile string where a submission writes:
    test names, messages, paths, finding titles, the output tail, a grader's name."""
    report = copy.deepcopy(fail)
    everything = " ".join(HOSTILE)
    tests = next(c for c in report["components"] if c["name"] == "tests")
    odd_id = "tests/test_x.py::test_a[" + everything + "\nsecond line]"
    tests["details"]["fail_to_pass"][odd_id] = "failed"
    tests["messages"] += [f"fail_to_pass failed: {odd_id}: AssertionError: {everything}"]
    tests["findings"] += [
        _finding("fail_to_pass", f"{odd_id} failed: " + everything, "tests/test_x.py", 3),
        _finding(everything, "a title no grader writes", "src/" + everything + ".py", 1),
    ]
    tail = "\n".join([*HOSTILE, "```", "`````` backticks", "~~~", "end of the tail"])
    tests["details"]["command"]["output_tail"] = tail
    for component in report["components"]:
        component["messages"] = [*component["messages"], everything]
    custom = {
        "name": "<img src=x onerror=alert(1)> @org/team",
        "role": "objective",
        "score": 0.0,
        "passed": False,
        "weight": 1.0,
        "details": {},
        "messages": ["TODO in " + everything],
        "findings": [_finding("no_todo", everything, "src/@org/team#123.py", 2)],
    }
    report["components"].append(custom)
    marks = ", ".join(
        f"{c['name']}={c['score']:.2f}{'✓' if c['passed'] else '✗'}"
        + ("(gate)" if c["role"] == "gate" else "")
        for c in report["components"]
    )
    report["summary"] = f"FAIL 0.000 ({marks})"
    report["files_changed"] = [*report["files_changed"], "src/" + everything + ".py"]
    report["base"]["ref"] = "main@{#123} @org/team"
    return report


def _long(fail: dict[str, Any]) -> dict[str, Any]:
    """Too long for a check run's summary: many long messages and findings, a test id of
    10,000 characters, an output tail of 200,000."""
    report = copy.deepcopy(fail)
    tests = next(c for c in report["components"] if c["name"] == "tests")
    long_id = "tests/test_long.py::test_" + "x" * 10_000
    tests["messages"] += [f"fail_to_pass failed: {long_id}"]
    for component in report["components"]:
        component["messages"] += [f"message {i}: " + "words " * 400 for i in range(60)]
    tests["findings"] += [
        _finding("fail_to_pass", f"test_{i} failed: " + "because " * 200, "tests/t.py", i + 1)
        for i in range(300)
    ]
    lines = [f"line {i}: " + "output " * 20 for i in range(1400)]
    tests["details"]["command"]["output_tail"] = "\n".join(lines)
    return report


# The reports made by editing another: the report they edit, and the edit.
_EDITED = {
    "error_task": ("fail", _error_task),
    "error_internal": ("pass", _error_internal),
    "error_environment": ("fail", _error_environment),
    "hostile": ("fail", _hostile),
    "long": ("fail", _long),
}


if __name__ == "__main__":
    main(sys.argv[1:])
