"""The templates rendered from real reports, read back with GitHub's own Markdown parser.

Golden files (tests/golden/TEMPLATE/CASE.md) hold what each built-in template renders
from each report of tests/data/reports/ (made by make_reports.py there); regenerate them
with ``pytest tests/report/test_render.py --update-golden`` and review the diff.

What GitHub shows is checked on the HTML of cmark-gfm, the parser GitHub renders
Markdown with: no tag nor link the templates did not write, every ``<details>`` closed
where the template closed it, and no text where GitHub would find a mention, an issue
or a URL (it looks for them in the rendered text, outside code).
"""

from __future__ import annotations

import ast
import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from repogym.errors import UsageError
from repogym.report.render import TEMPLATES, code, fence, md, render, score
from tests.data.reports.make_reports import HOSTILE
from tests.support.github_html import LINKED, Shown, github_html
from tests.support.packaging import ROOT, InstalledWheel

REPORTS = ROOT / "tests" / "data" / "reports"
GOLDEN = ROOT / "tests" / "golden"
CASES = sorted(p.stem for p in REPORTS.glob("*.json"))
ZWSP = "\u200b"


def load(case: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((REPORTS / f"{case}.json").read_text(encoding="utf-8"))
    return report


def golden_path(template: str, case: str) -> Path:
    return GOLDEN / template.removesuffix(".md.j2") / f"{case}.md"


# --- what GitHub shows ---------------------------------------------------------------

# The tags the built-in templates write; Markdown of theirs (tables, lists, code, the
# note) gives the rest.
TAGS = {"h3", "h4", "p", "strong", "ul", "li", "code", "pre", "br", "sub", "blockquote"}
TAGS |= {"table", "thead", "tbody", "tr", "th", "td", "details", "summary"}


def unsafe(markdown: str) -> list[str]:
    """Why ``markdown`` would not show as its template meant on GitHub, if it would not."""
    html = github_html(markdown)
    shown = Shown(html)
    problems = list(shown.problems)
    if "<li>\n<p>" in html:
        problems.append("a loose list: two lists run together, or a list item broke")
    problems += [f"a <{tag}> the template did not write" for tag in set(shown.tags) - TAGS]
    problems += [f"an HTML comment: <!--{c}-->" for c in shown.comments]
    text = "".join(shown.text)
    problems += [f"GitHub would link {m.group()!r}" for m in LINKED.finditer(text)]
    # The raw text too: the Action finds its comment by a marker in it.
    if "<!--" in markdown:
        problems.append("an HTML comment in the Markdown source")
    return problems


def readable(text: str) -> str:
    """What a reader sees of text that went through ``md``: without the zero-width
    spaces that stop links, line breaks as they were."""
    return text.replace(ZWSP, "")


# --- golden files --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("template", TEMPLATES)
def test_golden(template: str, case: str, request: pytest.FixtureRequest) -> None:
    rendered = render(load(case), template)
    path = golden_path(template, case)
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
    assert path.is_file(), f"{path} is missing; run pytest {__file__} --update-golden"
    assert rendered == path.read_text(encoding="utf-8"), f"{path} differs; --update-golden"


def test_every_golden_file_has_its_case() -> None:
    expected = {golden_path(t, c) for t in TEMPLATES for c in CASES}
    assert set(GOLDEN.glob("*/*.md")) == expected


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("template", TEMPLATES)
def test_github_shows_only_what_the_template_wrote(template: str, case: str) -> None:
    assert unsafe(render(load(case), template)) == []


# The values of a closed set (docs/report.schema.json): any other is refused, not shown.
CLOSED = ("role", "level", "kind")


def every_string_hostile(value: Any, payload: str) -> Any:
    """``value`` with every string in it, keys and the closed sets' values aside, replaced
    by ``payload``."""
    if isinstance(value, str):
        return payload
    if isinstance(value, dict):
        return {k: v if k in CLOSED else every_string_hostile(v, payload) for k, v in value.items()}
    if isinstance(value, list):
        return [every_string_hostile(v, payload) for v in value]
    return value


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("payload", [*HOSTILE, " ".join(HOSTILE) + "\n```\n</details>\n"])
def test_a_hostile_string_anywhere_in_a_report_shows_as_text(template: str, payload: str) -> None:
    # Every string, including the names, shas, the error and the output tail: whatever a
    # report read from elsewhere holds, no value escapes its place. A value the schema
    # does not allow there (a line break or a control character in a name, a sha or the
    # summary) is refused in one line naming it, never shown.
    for case in ("fail", "error_task"):
        report = every_string_hostile(load(case), payload)
        if re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", payload):
            with pytest.raises(UsageError, match=r"^report: `[^\n]*` is .*: should be one line"):
                render(report, template)
            report = every_string_hostile(load(case), payload.replace("\n", " "))
            report = json.loads(re.sub(r"\\u00[01][0-9a-f]|\\u007f", " ", json.dumps(report)))
        assert unsafe(render(report, template)) == [], case


def test_the_hostile_report_renders_every_value_as_itself() -> None:
    report = load("hostile")
    shown = Shown(github_html(render(report, "job_summary.md.j2")))
    names = [readable(row[0]) for row in shown.rows[1 : 1 + len(report["components"])]]
    assert names == [c["name"] for c in report["components"]]
    items = {readable(item) for item in shown.items}
    for component in report["components"]:
        for message in component["messages"]:
            assert message in items
    tail = report["components"][1]["details"]["command"]["output_tail"]
    html = github_html(render(report, "job_summary.md.j2"))
    blocks = re.findall(r'<pre lang="text"><code>(.*?)</code></pre>', html, re.DOTALL)
    assert [unescape(b).replace(ZWSP, "") for b in blocks] == [tail + "\n"]


# --- the filters ---------------------------------------------------------------------

AWKWARD = [
    *HOSTILE,
    "tests/__init__.py::test_a_b",
    "**bold** _em_ ~~gone~~ $x^2$ `code` \\` \\",
    "# heading",
    "- item",
    "1. item",
    "    indented",
    "&amp; &#64; &lt;",
    "a\nb\r\nc",
    "ESC \x1b[31m RLO \u202e",
    "fixed in 4fdd4b96cecc71582ef2d7e1b4b18d85889ec1d3 and deadbee, (abcdef1), org/repo@1234567",
]


@pytest.mark.parametrize("text", AWKWARD)
@pytest.mark.parametrize(
    "context",
    ["{}", "- {}", "| a |\n| - |\n| {} |", "<details><summary>{}</summary>\n\nx\n\n</details>"],
    ids=["paragraph", "list item", "table cell", "summary"],
)
def test_md_shows_text_as_itself_wherever_it_stands(context: str, text: str) -> None:
    markdown = context.format(md(text))
    shown = Shown(github_html(markdown))
    assert unsafe(markdown) == []
    expected = re.sub(r"\r\n|\r", "\n", text).replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    assert expected.strip() in readable("".join(shown.text))


def test_md_keeps_ids_legible() -> None:
    # Only what could be markup is escaped: an id reads as itself in the raw text too.
    assert md("tests/test_slugify.py::test_examples[hello, world]") == (
        "tests/test_slugify.py::test_examples&#91;hello, world&#93;"
    )
    assert md("PASS 1.000 (constraints=1.00✓(gate))") == "PASS 1.000 (constraints=1.00✓(gate))"


def test_md_breaks_every_run_of_hex_digits_github_would_link_to_a_commit() -> None:
    assert md("see 4fdd4b96cecc71582ef2d7e1b4b18d85889ec1d3.") == (
        "see 4fdd4b&#8203;96cecc&#8203;71582e&#8203;f2d7e1&#8203;b4b18d&#8203;85889e&#8203;c1d3."
    )
    assert md("deadbee") == "deadbe&#8203;e"
    # Six digits are no sha, nor are digits inside a word.
    assert md("abc123 test_deadbeef0 0xdeadbeef9") == "abc123 test_deadbeef0 0xdeadbeef9"


def test_md_cuts_long_text_and_says_so() -> None:
    assert md("z" * 30, 10) == "z" * 10 + " … (20 more characters)"
    assert md("@" * 5, 2) == "@&#8203;@&#8203; … (3 more characters)"  # cut before escaping


@pytest.mark.parametrize("text", [*AWKWARD, "``a`b``", "`x`", " spaced "])
def test_code_is_a_code_span_of_the_text(text: str) -> None:
    markdown = code(text)
    html = github_html(markdown)
    assert unsafe(markdown) == []
    match = re.fullmatch(r"<p><code>(.*)</code></p>\n", html, re.DOTALL)
    assert match, html
    flat = re.sub(r"\r\n|[\r\n]", " ", text).replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    assert unescape(match.group(1)).replace(ZWSP, "") == flat


@pytest.mark.parametrize(
    "text", ["```\n</details>\n```", "~~~\nx", "``````", "<!-- repogym -->", "a\r\nb\rc"]
)
def test_fence_is_a_code_block_of_the_text(text: str) -> None:
    markdown = f"<details><summary>out</summary>\n\n{fence(text)}\n\n</details>\n"
    html = github_html(markdown)
    assert unsafe(markdown) == []
    match = re.search(r'<pre lang="text"><code>(.*)</code></pre>', html, re.DOTALL)
    assert match, html
    expected = re.sub(r"\r\n|\r", "\n", text).rstrip("\n") + "\n"
    assert unescape(match.group(1)).replace(ZWSP, "") == expected


def test_fence_keeps_the_end_of_long_output_from_a_line_start() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    notice, *kept = fence(text, 30).splitlines()[1:-1]
    assert kept == text.splitlines()[-len(kept) :]
    assert 0 < len("\n".join(kept)) <= 30
    assert notice == f"[… {len(text) - len(chr(10).join(kept))} characters cut]"


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        *[(0.9988, 2, "0.99"), (1.0, 2, "1.00"), (1, 2, "1.00"), (0.29, 2, "0.29")],
        *[(0.0, 2, "0.00"), (2 / 3, 3, "0.666"), (0.9996, 3, "0.999")],
        *[(None, 2, "–"), (True, 2, "–")],
    ],
)
def test_score_is_cut_never_rounded_up(value: object, digits: int, shown: str) -> None:
    assert score(value, digits) == shown


# --- reports of every kind -------------------------------------------------------------


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_report_that_has_only_its_error_renders(template: str) -> None:
    report = {"error": {"kind": "usage", "message": "--base: no such ref nope"}}
    text = render(report, template)
    assert "could not grade" in text
    assert "--base: no such ref nope" in text
    assert "Check the command line or the workflow's inputs." in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_hidden_tests_are_counted_never_named(template: str) -> None:
    report = load("hidden")
    tests = next(c for c in report["components"] if c["name"] == "tests")
    (hidden_id,) = tests["details"]["hidden"]
    text = render(report, template)
    assert "1 hidden test" in text
    # Neither the id nor any part of it: the file, the test's name; the output tail
    # (which shows both, and the test's code) is left out.
    for part in (hidden_id, *hidden_id.split("::"), "ties_break"):
        assert readable(part) not in readable(text).replace("&#95;", "_")
    assert "hidden tests ran, and it would show their names and code" in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_output_of_a_run_with_hidden_tests_from_outside(template: str) -> None:
    # --hidden DIR: the tests ran with hidden tests that the task does not name.
    report = load("fail")
    shown = render(report, template)
    report["task"]["hidden_tests"] = "outside"
    hidden = render(report, template)
    assert "1 failed, 3 passed" in shown
    assert "1 failed, 3 passed" not in hidden
    assert "hidden tests ran, and it would show their names and code" in hidden


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_problem_of_a_run_with_hidden_tests_shows_no_output(template: str) -> None:
    # The tests grader put the output tail in the message of a run that gave no report,
    # before it left the output out of a run with hidden tests (issue 9): a report of
    # then is still rendered without it.
    report = load("hidden")
    tests = next(c for c in report["components"] if c["name"] == "tests")
    tail = "FAILED tests/test_top_words_hidden.py::test_ties_break_alphabetically"
    tests["messages"] = ["score 0: the test command timed out", "output tail:\n" + tail]
    text = render(report, template)
    # Nor the reason, which the run's output may have given (issue 19): only that it failed.
    assert "score 0: no test could be counted (the command exited with a non-zero code)" in text
    assert "ties" not in text and "timed out" not in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_long_report_is_shortened_to_fit_and_says_so(template: str) -> None:
    text = render(load("long"), template)
    size = len(text.encode())
    assert 20_000 < size <= 65535
    assert "Shortened to fit 65535 bytes" in text
    assert unsafe(text) == []


def test_each_level_of_detail_is_shorter_and_stays_whole() -> None:
    report = load("long")
    sizes = []
    for limit in (10**7, 60_000, 30_000, 12_000, 3_000):
        text = render(report, "job_summary.md.j2", max_bytes=limit)
        sizes.append(len(text.encode()))
        assert sizes[-1] <= limit
        assert unsafe(text) == []
        assert ("Shortened to fit" in text) == (limit != 10**7)
    assert sizes == sorted(sizes, reverse=True)


def test_a_limit_no_level_fits_is_one_clear_error() -> None:
    with pytest.raises(UsageError, match=r"comment.md.j2: \d+ bytes even at the least detail"):
        render(load("pass"), "comment.md.j2", max_bytes=100)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.update(score="high"), r"^report: `score` is 'high': should be a finite"),
        (lambda r: r.update(components={}), r"`components` is an object: should be a list"),
        (lambda r: r["components"][0].pop("name"), r"`components\[0\].name` is missing"),
        (
            lambda r: r["components"][1].update(passed=1),
            r"`components\[1\].passed` is 1: should be true or false",
        ),
        (lambda r: r["components"][0]["findings"].append({"line": 3, "message": "m"}), None),
        (
            lambda r: r["components"][0]["findings"].append({"message": "m", "line": "3"}),
            r"`components\[0\].findings\[3\].line` is '3': should be a whole number",
        ),
        (lambda r: r.update(base="main"), r"^report: `base` is 'main': should be an object"),
        (lambda r: r.update(error={"kind": "task"}), r"`error.message` is missing"),
        # details are the graders' own: a template that meets an odd one still renders.
        (lambda r: r["components"][1]["details"].update(hidden=3, command="x"), None),
    ],
)
def test_a_report_of_the_wrong_shape_is_one_line_naming_the_key(change: Any, message: str) -> None:
    report = load("fail")
    change(report)
    if message is None:
        render(report, "comment.md.j2")
        return
    with pytest.raises(UsageError, match=message) as raised:
        render(report, "comment.md.j2")
    assert "\n" not in str(raised.value)


# --- templates of one's own --------------------------------------------------------------


def test_templates_of_ones_own_replace_those_they_name() -> None:
    templates = {
        "comment.md.j2": '{% import "_macros.md.j2" as m with context %}'
        "Ours: {{ report.summary | md }}\n{{ m.table(report) }}"
    }
    report = load("pass")
    ours = render(report, "comment.md.j2", templates=templates)
    assert ours.startswith("Ours: PASS 1.000 (constraints=1.00✓(gate)")
    assert "| tests | objective | 1 | 1.00 | ✅ |" in ours  # the built-in macros
    # The names it does not have are the built-in ones.
    assert render(report, "job_summary.md.j2", templates=templates) == render(
        report, "job_summary.md.j2"
    )


@pytest.mark.parametrize(
    ("files", "template", "message"),
    [
        ({"c.md.j2": ""}, "nope.md.j2", r"template nope.md.j2: neither in the template dir"),
        ({"c.md.j2": "{% if %}"}, "c.md.j2", r"c.md.j2:1: Expected an expression"),
        ({"c.md.j2": "{{ report.nope }}"}, "c.md.j2", r"template c.md.j2: .*'nope'.*docs/report"),
        (
            {"c.md.j2": "{{ ''.__class__.__mro__ }}"},
            "c.md.j2",
            r"template c.md.j2: access to attribute '__class__' of 'str' object is unsafe",
        ),
        ({"c.md.j2": "{{ report.score + 'a' }}"}, "c.md.j2", r"c.md.j2: TypeError: unsupported"),
        ({"c.md.j2": "{{ 1 // 0 }}"}, "c.md.j2", r"c.md.j2: ZeroDivisionError: integer div"),
        (
            {"c.md.j2": "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"},
            "c.md.j2",
            r"c.md.j2: RecursionError: maximum recursion depth exceeded",
        ),
        # Sources, not paths: an include that would leave the directory finds nothing.
        (
            {"c.md.j2": '{% include "../../etc/passwd" %}'},
            "c.md.j2",
            r"template c.md.j2: ../../etc/passwd is neither in the template directory nor a ",
        ),
        (
            {"c.md.j2": '{% include "/proc/self/environ" %}'},
            "c.md.j2",
            r"template c.md.j2: /proc/self/environ is neither in the template directory nor",
        ),
    ],
    ids=["missing", "syntax", "undefined", "sandbox", "type", "zero", "recursion", "up", "abs"],
)
def test_a_bad_template_is_one_line(files: dict[str, str], template: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as raised:
        render(load("pass"), template, templates=files)
    assert len(raised.value.lines) == 1 and "\n" not in raised.value.lines[0]


def test_the_renderer_knows_the_report_not_github() -> None:
    tree = ast.parse((ROOT / "repogym" / "report" / "render.py").read_text(encoding="utf-8"))
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "functools", "re", "collections", "dataclasses"} | {
        "decimal",
        "pathlib",
        "typing",
        "jinja2",
        "repogym",
    }


# --- the wheel -----------------------------------------------------------------------------


def test_the_wheel_holds_the_templates_and_every_module(installed_wheel: InstalledWheel) -> None:
    names = set(installed_wheel.names)
    for template in ("_macros.md.j2", *TEMPLATES):
        assert f"repogym/_templates/{template}" in names
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "repogym").rglob("*.py")}
    assert modules <= names, "modules the wheel lacks: add their package to pyproject.toml"


def test_an_installed_wheel_renders_as_the_source_tree_does(
    installed_wheel: InstalledWheel, tmp_path: Path
) -> None:
    script = (
        "import json, sys\n"
        "import repogym.report.render\n"
        "from repogym.report.render import render\n"
        "print(repogym.report.render.__file__, file=sys.stderr)\n"
        "sys.stdout.write(render(json.load(open(sys.argv[1])), 'comment.md.j2'))\n"
    )
    done = installed_wheel.run("python", "-c", script, str(REPORTS / "fail.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(str(installed_wheel.venv))  # not this source tree
    assert done.stdout == golden_path("comment.md.j2", "fail").read_text(encoding="utf-8")


# --- links the Action gives ----------------------------------------------------------

LINKS = {
    "check_run": "https://github.example/o/r/runs/7",
    "workflow_run": "https://github.example/o/r/actions/runs/9/attempts/2",
    "base": "https://github.example/o/r/commit/" + "a" * 40,
    "merge_base": "https://github.example/o/r/commit/" + "b" * 40,
    "head": "https://github.example/o/r/commit/" + "c" * 40,
}


@pytest.mark.parametrize("template", TEMPLATES)
def test_links_are_the_only_links(template: str) -> None:
    report = load(CASES[0])
    report["base"] = {"ref": "main", "sha": "a" * 40}
    report["merge_base"] = {"sha": "b" * 40}
    report["head"] = {"sha": "c" * 40}
    html = github_html(render(report, template, links=LINKS))
    assert sorted(re.findall(r'<a href="([^"]*)"', html)) == sorted(LINKS.values())
    assert '<a href="' not in github_html(render(report, template))


@pytest.mark.parametrize(
    ("links", "error"),
    [
        ({"check_run": "javascript:alert(1)"}, "link check_run: 'javascript:alert(1)' is not"),
        ({"check_run": "https://x.example/a) [b](https://evil"}, "is not a plain http(s) URL"),
        ({"elsewhere": "https://x.example/"}, "link 'elsewhere': not one of check_run"),
    ],
)
def test_a_link_that_is_not_a_plain_url_is_refused(links: dict[str, str], error: str) -> None:
    with pytest.raises(UsageError, match=re.escape(error)):
        render(load(CASES[0]), "comment.md.j2", links=links)
