"""JUnit reports: real report shapes from pytest, Surefire and Node, and hostile ones."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path
from random import Random
from xml.etree import ElementTree

import pytest

import repogym.junit
import repogym.junit.parser
from repogym.junit import MAX_MESSAGE, Case, JUnitError, Limits, Outcome, iter_cases


def report(tmp_path: Path, xml: str | bytes, name: str = "report.xml") -> Path:
    path = tmp_path / name
    path.write_bytes(xml.encode() if isinstance(xml, str) else xml)
    return path


def cases(tmp_path: Path, xml: str | bytes, **limits: int) -> list[Case]:
    return list(iter_cases(report(tmp_path, xml), limits=Limits(**limits)))


def one(tmp_path: Path, testcase_body: str, attrs: str = 'classname="c" name="t"') -> Case:
    """The single case of a report whose one testcase has ``testcase_body`` as children."""
    (case,) = cases(
        tmp_path, f"<testsuite><testcase {attrs}>{testcase_body}</testcase></testsuite>"
    )
    return case


def error(tmp_path: Path, xml: str | bytes, **limits: int) -> str:
    with pytest.raises(JUnitError) as caught:
        cases(tmp_path, xml, **limits)
    assert len(caught.value.lines) == 1
    return str(caught.value)


# -- outcomes ----------------------------------------------------------------------------

PYTEST = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests">
  <testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
    <testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py" line="3"
              time="0.001" />
    <testcase classname="tests.test_a" name="test_fails" file="tests/test_a.py" time="0.01">
      <failure message="AssertionError: assert 1 == 2">def test_fails():
&gt;       assert 1 == 2
E       AssertionError</failure>
      <system-out>printed by the test</system-out>
    </testcase>
    <testcase classname="tests.test_a" name="test_broken_fixture" file="tests/test_a.py">
      <error message="failed on setup with &quot;RuntimeError: no db&quot;">trace</error>
    </testcase>
    <testcase classname="tests.test_a" name="test_later" file="tests/test_a.py">
      <skipped type="pytest.skip" message="needs the network">tests/test_a.py:9: needs</skipped>
    </testcase>
    <testcase classname="tests.test_a" name="test_param[1-a]" file="tests/test_a.py">
      <system-out>only output</system-out>
      <system-err>and errors</system-err>
      <properties><property name="k" value="v" /></properties>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_each_outcome_of_a_pytest_report(tmp_path: Path) -> None:
    def case(name: str, outcome: Outcome, message: str = "", line: str | None = None) -> Case:
        return Case(
            name=name,
            classname="tests.test_a",
            file="tests/test_a.py",
            suites=("pytest",),
            outcome=outcome,
            message=message,
            line=line,
        )

    assert cases(tmp_path, PYTEST) == [
        case("test_ok", Outcome.PASSED, line="3"),
        case("test_fails", Outcome.FAILED, "AssertionError: assert 1 == 2"),
        case("test_broken_fixture", Outcome.ERROR, 'failed on setup with "RuntimeError: no db"'),
        case("test_later", Outcome.SKIPPED, "needs the network"),
        case("test_param[1-a]", Outcome.PASSED),
    ]


@pytest.mark.parametrize(
    ("children", "outcome", "message"),
    [
        # pytest: a failing test whose teardown also fails
        ('<failure message="call"/><error message="teardown"/>', Outcome.ERROR, "teardown"),
        ('<error message="setup"/><failure message="call"/>', Outcome.ERROR, "setup"),
        ('<skipped message="skip"/><failure message="call"/>', Outcome.FAILED, "call"),
        ('<failure message="call"/><skipped message="skip"/>', Outcome.FAILED, "call"),
        ('<failure message="first"/><failure message="second"/>', Outcome.FAILED, "first"),
        ('<skipped message="a"/><skipped message="b"/>', Outcome.SKIPPED, "a"),
    ],
)
def test_of_several_children_the_worst_wins(
    tmp_path: Path, children: str, outcome: Outcome, message: str
) -> None:
    case = one(tmp_path, children)
    assert (case.outcome, case.message, case.flaky) == (outcome, message, False)


@pytest.mark.parametrize("tag", ["flakyFailure", "flakyError", "rerunFailure", "rerunError"])
def test_reruns_mark_a_case_flaky_without_changing_its_outcome(tmp_path: Path, tag: str) -> None:
    passed = one(
        tmp_path, f'<{tag} message="first run" type="E"><stackTrace>x</stackTrace></{tag}>'
    )
    assert (passed.outcome, passed.flaky, passed.message) == (Outcome.PASSED, True, "")
    failed = one(tmp_path, f'<{tag} message="run 1"/><failure message="run 2"/>')
    assert (failed.outcome, failed.flaky, failed.message) == (Outcome.FAILED, True, "run 2")


def test_flakiness_and_outcome_do_not_leak_into_the_next_case(tmp_path: Path) -> None:
    found = cases(
        tmp_path,
        '<testsuite><testcase name="a"><rerunFailure/><error message="e"/></testcase>'
        '<testcase name="b"/></testsuite>',
    )
    assert [(c.name, c.outcome, c.flaky, c.message) for c in found] == [
        ("a", Outcome.ERROR, True, "e"),
        ("b", Outcome.PASSED, False, ""),
    ]


def test_only_direct_children_decide(tmp_path: Path) -> None:
    case = one(tmp_path, '<properties><failure message="no"/><flakyError/></properties>')
    assert (case.outcome, case.flaky) == (Outcome.PASSED, False)


# -- messages ----------------------------------------------------------------------------


def test_message_attribute_is_kept_as_written(tmp_path: Path) -> None:
    case = one(tmp_path, '<failure message="assert 3 == 4&#10; +  where 3 = f()">text</failure>')
    assert case.message == "assert 3 == 4\n +  where 3 = f()"


def test_without_message_attribute_the_first_non_empty_line_of_text(tmp_path: Path) -> None:
    text = "\n   \n    AssertionError: expected 3  \n    at Foo.test(Foo.java:10)\n"
    assert one(tmp_path, f"<failure>{text}</failure>").message == "AssertionError: expected 3"
    assert one(tmp_path, f'<error message="  ">{text}</error>').message == (
        "AssertionError: expected 3"
    )
    assert one(tmp_path, "<skipped>   </skipped>").message == ""
    assert one(tmp_path, "<skipped/>").message == ""


def test_text_in_cdata_as_surefire_writes_it(tmp_path: Path) -> None:
    case = one(tmp_path, "<failure><![CDATA[\nexpected: <1> but was: <2>\n\tat X]]></failure>")
    assert case.message == "expected: <1> but was: <2>"


def test_messages_are_cut_at_max_message(tmp_path: Path) -> None:
    long = "x" * (MAX_MESSAGE + 100)
    assert one(tmp_path, f'<failure message="{long}"/>').message == "x" * MAX_MESSAGE
    assert one(tmp_path, f"<failure>{long}\nsecond line</failure>").message == "x" * MAX_MESSAGE
    assert one(tmp_path, f"<error>\n{long}</error>").message == "x" * MAX_MESSAGE


def test_output_is_never_the_message(tmp_path: Path) -> None:
    case = one(tmp_path, "<system-out>out\n</system-out><failure/><system-err>err\n</system-err>")
    assert (case.outcome, case.message) == (Outcome.FAILED, "")


def test_node_reporter_failure_attribute_on_the_testcase_does_not_count(tmp_path: Path) -> None:
    # node --test --test-reporter=junit: testcases directly under <testsuites>.
    xml = """<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testcase name="adds" time="0.001" classname="test" />
  <testcase name="divides" time="0.002" classname="test" failure="Expected values">
    <failure type="testCodeFailure" message="Expected values to be strictly equal">
[Error [ERR_TEST_FAILURE]: Expected values to be strictly equal
    </failure>
  </testcase>
  <testsuite name="math"><testcase name="nested" classname="test"/></testsuite>
</testsuites>
"""
    assert cases(tmp_path, xml) == [
        Case(name="adds", classname="test", file=None, suites=(), outcome=Outcome.PASSED),
        Case(
            name="divides",
            classname="test",
            file=None,
            suites=(),
            outcome=Outcome.FAILED,
            message="Expected values to be strictly equal",
        ),
        Case(name="nested", classname="test", file=None, suites=("math",), outcome=Outcome.PASSED),
    ]


# -- structure ---------------------------------------------------------------------------


def test_suites_are_the_enclosing_testsuite_names_outermost_first(tmp_path: Path) -> None:
    xml = """<testsuites name="all">
  <testsuite name="outer">
    <testcase name="a"/>
    <testsuite name="inner">
      <testcase name="b"/>
      <testsuite><testcase name="c"/></testsuite>
    </testsuite>
    <testcase name="d"/>
  </testsuite>
  <testsuite name="second"><testcase name="e"/></testsuite>
</testsuites>"""
    assert [(c.name, c.suites) for c in cases(tmp_path, xml)] == [
        ("a", ("outer",)),
        ("b", ("outer", "inner")),
        ("c", ("outer", "inner", "")),
        ("d", ("outer",)),
        ("e", ("second",)),
    ]


def test_a_lone_testsuite_and_missing_attributes(tmp_path: Path) -> None:
    assert cases(tmp_path, "<testsuite name='s'><testcase/></testsuite>") == [
        Case(name="", classname="", file=None, suites=("s",), outcome=Outcome.PASSED)
    ]


# -- the file ----------------------------------------------------------------------------


def test_missing_empty_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope.xml"
    with pytest.raises(
        JUnitError, match=f"^JUnit report {re.escape(str(missing))} does not exist: "
    ):
        list(iter_cases(missing))
    assert error(tmp_path, b"").startswith(f"JUnit report {tmp_path / 'report.xml'} is empty: ")
    with pytest.raises(
        JUnitError,
        match=f"^JUnit report {re.escape(str(tmp_path))} is a directory, not a regular file: "
        "the test command must write its report there as a file$",
    ):
        list(iter_cases(tmp_path))


def test_a_report_over_max_bytes_is_refused_unread(tmp_path: Path) -> None:
    # Not even well-formed: the size is checked before a byte is parsed.
    message = error(tmp_path, "<testsuite><testcase>" * 10, max_bytes=100)
    assert message == (
        f"JUnit report {tmp_path / 'report.xml'} is 210 bytes, over the limit of 100: "
        "reduce the captured output in the report"
    )
    assert len(cases(tmp_path, "<testcase/>", max_bytes=11)) == 1


def test_no_testcase_is_raised_at_the_end(tmp_path: Path) -> None:
    path = report(tmp_path, '<testsuites><testsuite name="empty" tests="0"/></testsuites>')
    found = iter_cases(path)
    with pytest.raises(JUnitError) as caught:
        next(found)
    assert str(caught.value) == (
        f"JUnit report {path} (60 bytes) contains no <testcase> element: "
        "did the test command collect and run any test?"
    )
    assert "no <testcase>" in error(tmp_path, "<html><body>Internal Server Error</body></html>")


@pytest.mark.parametrize(
    ("xml", "problem"),
    [
        (
            "<testsuite>\n  <testcase name='a'>\n</testsuite>\n",
            "mismatched tag at line 3, column 3",
        ),
        ("<testsuite>\n<testcase name='a' name='b'/>", "duplicate attribute at line 2, column 20"),
        (
            "<testsuite><testcase name='&nbsp;'/></testsuite>",
            "undefined entity at line 1, column 12",
        ),
        ("not xml", "syntax error at line 1, column 1"),
        ("<testsuite><testcase/>", "no element found at line 1, column 23"),
    ],
)
def test_malformed_xml_says_where(tmp_path: Path, xml: str, problem: str) -> None:
    path = tmp_path / "report.xml"
    assert error(tmp_path, xml) == f"JUnit report {path} is not well-formed XML: {problem}"


def test_encodings_other_than_utf8(tmp_path: Path) -> None:
    latin1 = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<testsuite name="caf\xe9">'
    latin1 += '<testcase name="na\xefve"><failure message="\xbfqu\xe9?"/></testcase></testsuite>'
    (case,) = cases(tmp_path, latin1.encode("latin-1"))
    assert (case.suites, case.name, case.message) == (("café",), "naïve", "¿qué?")
    cp1252 = '<?xml version="1.0" encoding="windows-1252"?><testcase name="\u20ac5"/>'
    assert cases(tmp_path, cp1252.encode("cp1252"))[0].name == "€5"
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><testcase name="\u00e9t\u00e9"/>'
    assert cases(tmp_path, utf16.encode("utf-16"))[0].name == "été"


@pytest.mark.parametrize(
    ("encoding", "why"),
    [("no-such-codec", "unknown encoding: no-such-codec"), ("shift_jis", "multi-byte")],
)
def test_an_encoding_that_cannot_be_read_is_one_clear_error(
    tmp_path: Path, encoding: str, why: str
) -> None:
    xml = f'<?xml version="1.0" encoding="{encoding}"?><testsuite><testcase name="a"/></testsuite>'
    message = error(tmp_path, xml)
    assert message.startswith(f"JUnit report {tmp_path / 'report.xml'} declares an encoding")
    assert why in message
    assert message.endswith("write the report in UTF-8")


# -- hostile reports ---------------------------------------------------------------------

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE testsuite [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite><testcase name="&lol9;"><failure message="&lol9;">&lol9;</failure></testcase></testsuite>
"""


def test_an_entity_bomb_is_refused_at_once(tmp_path: Path) -> None:
    path = report(tmp_path, BILLION_LAUGHS)
    tracemalloc.start()
    try:
        with pytest.raises(JUnitError) as caught:
            list(iter_cases(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"JUnit report {path} declares a DTD (<!DOCTYPE testsuite> at line 2) and repogym "
        "refuses DTDs, since entity expansion and external entities make them unsafe: "
        "write the report without one"
    )
    # Refused before any expansion (no clock: a busy machine must not fail this test).
    assert peak < 1 << 20  # expanded, &lol9; alone would be 3 GB


def test_an_external_entity_is_refused_and_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    xml = f"""<?xml version="1.0"?>
<!DOCTYPE testsuite [<!ENTITY x SYSTEM "file://{secret}">]>
<testsuite><testcase name="&x;"><failure message="&x;">&x;</failure></testcase></testsuite>
"""
    path = report(tmp_path, xml)
    found: list[Case] = []
    with pytest.raises(JUnitError, match=r"declares a DTD \(<!DOCTYPE testsuite> at line 2\)"):
        found.extend(iter_cases(path))
    assert found == []
    assert "TOP-SECRET" not in error(tmp_path, xml)


def test_any_doctype_is_refused_even_without_entities(tmp_path: Path) -> None:
    xml = '<!DOCTYPE testsuite SYSTEM "http://example.invalid/junit.dtd"><testsuite/>'
    assert "declares a DTD (<!DOCTYPE testsuite> at line 1) and repogym refuses DTDs" in (
        error(tmp_path, xml)
    )


# -- streaming ---------------------------------------------------------------------------


def generated(count: int, output: int = 0, broken_end: bool = False) -> str:
    """A report of ``count`` cases, every tenth failing, each with ``output`` chars printed."""
    parts = ['<?xml version="1.0"?>\n<testsuites><testsuite name="gen">\n']
    for n in range(count):
        attrs = f'classname="tests.test_gen.TestGen" name="test_{n}" file="tests/test_gen.py"'
        failure = f"<failure>\nAssertionError: {n}\n  more\n</failure>" if n % 10 == 9 else ""
        out = f"<system-out>{'o' * output}</system-out>" if output else ""
        parts.append(f"<testcase {attrs}>{failure}{out}</testcase>\n")
    parts.append("<broken" if broken_end else "</testsuite></testsuites>\n")
    return "".join(parts)


def test_a_large_report_in_document_order(tmp_path: Path) -> None:
    found = cases(tmp_path, generated(30_000))
    assert len(found) == 30_000
    assert [c.name for c in found[:3]] == ["test_0", "test_1", "test_2"]
    assert found[-1] == Case(
        name="test_29999",
        classname="tests.test_gen.TestGen",
        file="tests/test_gen.py",
        suites=("gen",),
        outcome=Outcome.FAILED,
        message="AssertionError: 29999",
    )
    assert sum(c.outcome is Outcome.FAILED for c in found) == 3_000


def test_cases_are_yielded_before_the_whole_file_is_read(tmp_path: Path) -> None:
    # The end of the file is broken: the first cases come out before that is known.
    path = report(tmp_path, generated(5_000, broken_end=True))
    assert path.stat().st_size > 4 * repogym.junit.parser._CHUNK
    assert next(iter_cases(path)).name == "test_0"
    with pytest.raises(
        JUnitError, match=r"not well-formed XML: unclosed token at line 6503, column 1$"
    ):
        list(iter_cases(path))


def test_memory_stays_flat_whatever_the_output(tmp_path: Path) -> None:
    path = report(tmp_path, generated(400, output=20_000))  # 8 MB, mostly <system-out>
    tracemalloc.start()
    try:
        found = sum(1 for _ in iter_cases(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == 400
    assert peak < 1 << 20


def test_chunk_boundaries_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xml = PYTEST.replace(
        "</testsuites>",
        '<testcase name="text"><failure>\n\n   first line\nsecond</failure></testcase>'
        '<testcase name="cdata"><error><![CDATA[  boom\n]]></error><flakyError/></testcase>'
        f'<testcase name="long"><skipped>{"y" * 600}</skipped></testcase></testsuites>',
    )
    whole = cases(tmp_path, xml)
    assert [(c.name, c.outcome, c.message, c.flaky) for c in whole[5:]] == [
        ("text", Outcome.FAILED, "first line", False),
        ("cdata", Outcome.ERROR, "boom", True),
        ("long", Outcome.SKIPPED, "y" * MAX_MESSAGE, False),
    ]
    for size in (1, 2, 7, 64):
        monkeypatch.setattr(repogym.junit.parser, "_CHUNK", size)
        assert cases(tmp_path, xml) == whole


# -- random reports ----------------------------------------------------------------------
# Hundreds of seeded random reports, well-formed and not, each read in chunks of several
# sizes: the same cases or the same error whatever the chunking, and, for a report read
# whole, the cases that a plain tree walk of the rules above finds (tree_cases). A
# mismatch names the seed: ``generate(seed)`` rebuilds its document.

DOCUMENTS = 800
CHUNKS = (1, 17, 4096, repogym.junit.parser._CHUNK)  # 1 splits every token and character
SMALL = 16_000  # documents above this many bytes skip the tiny chunks (they only cost time)

SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\x85", "\u2028", "&#10;", "&#x3000;"]
WORDS = ["ok", "assert 1 == 2", "é", "中文", "😀", "a&amp;b", "&lt;x&gt;", "&quot;q&apos;"]
RERUNS = ["flakyFailure", "flakyError", "rerunFailure", "rerunError"]
VERDICTS = ["failure", "error", "skipped"]
ENCODINGS = ["utf-8", "utf-8", "iso-8859-1", "windows-1252", "utf-16", None, "bom"]


def long_line(rng: Random) -> str:
    """Words to about MAX_MESSAGE characters, with blanks and a newline near the cut."""
    head = "".join(rng.choice(["x", "é", "中", "😀", " "]) for _ in range(MAX_MESSAGE - 4))
    tail = "".join(rng.choice([" ", "\t", "\u3000", "y", "\n", "z"]) for _ in range(8))
    return head + tail + "x" * rng.randrange(0, 2 * MAX_MESSAGE)


def text(rng: Random, depth: int = 0) -> str:
    """Character content as a report could write it, markup and all."""
    pieces: list[str] = []
    if rng.random() < 0.5:
        pieces.append("".join(rng.choice(SPACES) for _ in range(rng.randrange(8))))
    for _ in range(rng.randrange(6)):
        kind = rng.randrange(10)
        if kind == 0:
            pieces.append(f"<![CDATA[{rng.choice(SPACES[:8])}{rng.choice(WORDS[:5])} <&>]]>")
        elif kind == 1:
            pieces.append(f"<!--{rng.choice(WORDS[:5])}\n-->")
        elif kind == 2:
            pieces.append(f"<?pi {rng.choice(WORDS[:5])}?>")
        elif kind == 3 and depth < 2:
            tag = rng.choice(["b", "failure", "error", *RERUNS])
            pieces.append(f"<{tag}>{text(rng, depth + 1)}</{tag}>")
        elif kind == 4:
            pieces.append(long_line(rng))
        elif kind == 5 and rng.random() < 0.05:
            pieces.append("\n" * 9000 + "large")  # over expat's text buffer
        else:
            pieces.append(rng.choice(SPACES) + rng.choice(WORDS))
    return "".join(pieces)


def message(rng: Random) -> str:
    choice = rng.randrange(8)
    if choice == 0:
        return ""  # no attribute
    value = [
        "",
        "   ",
        " &#10;\t&#10; ",
        "&#10;first&#10;second",
        "boom &amp; &lt;bang&gt; 中 😀",
        "m" * (MAX_MESSAGE + 20),
        long_line(rng).replace("\n", "&#10;"),
    ][choice - 1]
    return f' message="{value}"'


def attrs(rng: Random, names: list[str]) -> str:
    values = ["", "a", "t[中 😀]", "x &amp; y", "a&#10;b", "file.py"]
    chosen = [n for n in names if rng.random() < 0.6]
    return "".join(f' {n}="{rng.choice(values)}"' for n in chosen)


def a_case(rng: Random) -> str:
    children: list[str] = []
    for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 5])):
        kind = rng.randrange(11)
        if kind < 4:
            tag = rng.choice(VERDICTS)
            children.append(f"<{tag}{message(rng)}>{text(rng)}</{tag}>")
        elif kind == 4:
            tag = rng.choice(RERUNS)
            inner = rng.choice(["", "<failure>deep</failure>", text(rng)])
            children.append(f"<{tag}{message(rng)}>{inner}</{tag}>")
        elif kind == 5:
            children.append('<properties><property name="k" value="v"/></properties>')
        elif kind == 6:
            tag = rng.choice(["system-out", "system-err"])
            children.append(f"<{tag}>{text(rng)}</{tag}>")
        elif kind == 7:  # verdicts and reruns deeper than direct children do not count
            tag = rng.choice([*VERDICTS, *RERUNS])
            children.append(f"<wrapper><{tag}{message(rng)}>{text(rng)}</{tag}></wrapper>")
        elif kind == 8:
            children.append(rng.choice(["<!-- c -->", "<?pi x?>", "\n  ", "<![CDATA[ x ]]>"]))
        elif kind == 9:
            children.append(rng.choice(VERDICTS).join(["<", "/>"]))
        else:  # neither counts as a case or suite of its own
            children.append("<testcase name='in'/><testsuite name='in' file='in'/>")
    body = "".join(children)
    open_tag = f"<testcase{attrs(rng, ['name', 'classname', 'file', 'line', 'time'])}"
    return f"{open_tag}>{body}</testcase>" if body or rng.random() < 0.5 else open_tag + "/>"


def a_suite(rng: Random, depth: int) -> str:
    parts: list[str] = []
    for _ in range(rng.randrange(1, 6)):
        kind = rng.randrange(8)
        if kind < 5:
            parts.append(a_case(rng))
        elif kind == 5 and depth < 3:
            parts.append(a_suite(rng, depth + 1))
        elif kind == 6:
            parts.append('<properties><property name="p" value="1"/></properties>')
        else:
            parts.append(f"<system-out>{text(rng)}</system-out><!-- between -->")
    return f"<testsuite{attrs(rng, ['name', 'file'])}>\n{''.join(parts)}\n</testsuite>"


def malform(rng: Random, prolog: str, body: str) -> tuple[str, str]:
    """The prolog and body made malformed, or refused, one of several ways."""
    kind = rng.randrange(9)
    if kind == 0:
        return prolog, body.replace("</testcase>", "</testcasex>", 1)
    if kind == 1:
        return prolog, body.replace("<testcase", '<testcase name="1" name="2"', 1)
    if kind == 2:
        return prolog, body.replace("</testsuite>", "&undefined;</testsuite>", 1)
    if kind == 3:
        return prolog + "<!DOCTYPE testsuite>\n", body
    if kind == 4:
        subset = '<!ENTITY e "expanded"><!ATTLIST testcase name CDATA "dflt">'
        return prolog + f"<!DOCTYPE testsuites [\n{subset}\n]>\n", body.replace("ok", "&e;")
    if kind == 5:
        return prolog + '<!DOCTYPE x SYSTEM "file:///etc/passwd">', body
    if kind == 6:
        return prolog, body.replace("<testsuite", "<testsuite a='<'", 1)
    if kind == 7:
        return prolog, body.replace("<testcase", "<testcase><bad", 1)
    return prolog, body + "<trailing/>"


def generate(seed: int) -> bytes:
    """The document of one seed, encoded as its declaration says."""
    rng = Random(seed)
    roots = [a_suite(rng, 1) for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.02:
        roots = ["<testsuite name='empty'><properties/></testsuite>"]
    body = f"<testsuites>\n{''.join(roots)}</testsuites>" if len(roots) > 1 else roots[0]
    if rng.random() < 0.3:
        body = f"<testsuites name='all'>{body}</testsuites>"
    encoding = rng.choice(ENCODINGS)
    declared = encoding
    if rng.random() < 0.03:  # unknown to expat and to Python, or multi-byte: refused
        encoding, declared = "utf-8", rng.choice(["no-such-codec", "utf-32", "shift_jis"])
    prolog = "\n<!-- report -->\n"
    if rng.random() < 0.15:
        prolog, body = malform(rng, prolog, body)
    if declared not in (None, "bom"):
        prolog = f'<?xml version="1.0" encoding="{declared}"?>' + prolog
    xml = f"{prolog}{body}\n"
    if encoding in (None, "bom", "utf-8"):
        data = ("\ufeff" if encoding == "bom" else "").encode() + xml.encode()
    else:
        data = xml.encode(encoding, errors="xmlcharrefreplace")
    if encoding == "windows-1252" and rng.random() < 0.1:
        data = data.replace(b"ok", b"o\x81k")  # a byte cp1252 leaves undefined
    if rng.random() < 0.08:
        data = data[: rng.randrange(1, len(data))]  # truncated, maybe inside a character
    return data


def tree_cases(data: bytes) -> list[Case]:
    """The cases of a report by the rules, from a whole tree rather than a stream."""
    found: list[Case] = []

    def walk(element: ElementTree.Element, suites: tuple[str, ...], file: str | None) -> None:
        for child in element:
            if child.tag == "testcase":
                found.append(tree_case(child, suites, file))
            elif child.tag == "testsuite":
                walk(child, (*suites, child.get("name", "")), child.get("file") or file)
            else:
                walk(child, suites, file)

    root = ElementTree.fromstring(data)
    wrapper = ElementTree.Element("document")
    wrapper.append(root)
    walk(wrapper, (), None)
    return found


def tree_case(element: ElementTree.Element, suites: tuple[str, ...], file: str | None) -> Case:
    severities = {"skipped": 1, "failure": 2, "error": 3}
    verdicts = [child for child in element if child.tag in severities]
    # max() keeps the first of several alike: of those, the first one's message counts.
    worst = max(verdicts, key=lambda child: severities[str(child.tag)], default=None)
    outcome, message = Outcome.PASSED, ""
    if worst is not None:
        outcome = {"skipped": Outcome.SKIPPED, "failure": Outcome.FAILED, "error": Outcome.ERROR}[
            str(worst.tag)
        ]
        attribute = worst.get("message", "")
        if attribute.strip():
            message = attribute[:MAX_MESSAGE]
        else:
            text = "".join(worst.itertext())
            message = text.lstrip()[:MAX_MESSAGE].split("\n", 1)[0].rstrip()
    return Case(
        name=element.get("name", ""),
        classname=element.get("classname", ""),
        file=element.get("file") or file,
        suites=suites,
        outcome=outcome,
        flaky=any(child.tag in RERUNS for child in element),
        message=message,
        line=element.get("line"),
    )


Result = tuple[str, str | None]  # the cases read (as repr: types count), then the error


def read(path: Path) -> Result:
    found: list[Case] = []
    try:
        for case in iter_cases(path):
            found.append(case)
    except JUnitError as error:
        return repr(found), str(error)
    return repr(found), None


@pytest.fixture(scope="module")
def documents() -> list[bytes]:
    """The document of every seed, generated once for the tests below."""
    return [generate(seed) for seed in range(DOCUMENTS)]


@pytest.mark.parametrize("first", range(0, DOCUMENTS, 100))
def test_random_reports_whatever_the_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, documents: list[bytes], first: int
) -> None:
    path = tmp_path / "report.xml"
    for seed in range(first, first + 100):
        data = documents[seed]
        path.write_bytes(data)
        where = f"seed {seed}: generate({seed}) is\n{data!r}"
        monkeypatch.setattr(repogym.junit.parser, "_CHUNK", CHUNKS[-1])
        expected = read(path)
        if expected[1] is None:
            assert expected[0] == repr(tree_cases(data)), f"not the rules' cases, {where}"
        for chunk in CHUNKS[:-1]:
            if chunk < 17 and len(data) > SMALL:
                continue
            monkeypatch.setattr(repogym.junit.parser, "_CHUNK", chunk)
            result = read(path)
            if result[1] is None or expected[1] is None:  # cases read: all of them
                assert result == expected, f"chunks of {chunk} changed the cases, {where}"
            else:  # an error: the cases before it depend on the chunk, the error must not
                assert result[1] == expected[1], f"chunks of {chunk} changed the error, {where}"


def test_the_generator_covers_what_it_should(documents: list[bytes]) -> None:
    utf16 = "testsuite".encode("utf-16-le")
    for feature in [b"<!DOCTYPE", b"<!ENTITY", b"no-such-codec", b"utf-32", utf16, b"o\x81k"]:
        assert sum(feature in d for d in documents) >= 3, feature
    for feature in [b"windows-1252", b"iso-8859-1", b'name="1" name', b"&undefined;"]:
        assert sum(feature in d for d in documents) >= 3, feature
    for word in ["flakyFailure", "rerunError", "<wrapper><failure", "<![CDATA[", "\u3000"]:
        assert sum(word in d.decode("utf-8", "replace") for d in documents) >= 20, word
    assert sum(d.startswith(b"\xff\xfe<\x00?\x00x") for d in documents) >= 20  # utf-16
    assert sum(d.startswith(b"\xef\xbb\xbf") for d in documents) >= 20  # a BOM
