"""JUnit reports: real report shapes from pytest, Surefire and Node, and hostile ones."""

from __future__ import annotations

import re
import time
import tracemalloc
from pathlib import Path

import pytest

import repogym.junit
from repogym.junit import MAX_MESSAGE, Case, JUnitError, Outcome, iter_cases

# Every test here runs with both readers (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("junit_reader")


def report(tmp_path: Path, xml: str | bytes, name: str = "report.xml") -> Path:
    path = tmp_path / name
    path.write_bytes(xml.encode() if isinstance(xml, str) else xml)
    return path


def cases(tmp_path: Path, xml: str | bytes, **kwargs: int) -> list[Case]:
    return list(iter_cases(report(tmp_path, xml), **kwargs))


def one(tmp_path: Path, testcase_body: str, attrs: str = 'classname="c" name="t"') -> Case:
    """The single case of a report whose one testcase has ``testcase_body`` as children."""
    (case,) = cases(
        tmp_path, f"<testsuite><testcase {attrs}>{testcase_body}</testcase></testsuite>"
    )
    return case


def error(tmp_path: Path, xml: str | bytes, **kwargs: int) -> str:
    with pytest.raises(JUnitError) as caught:
        cases(tmp_path, xml, **kwargs)
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
        JUnitError, match=f"^JUnit report {re.escape(str(tmp_path))} is not a regular file$"
    ):
        list(iter_cases(tmp_path))


def test_a_report_over_max_bytes_is_refused_unread(tmp_path: Path) -> None:
    # Not even well-formed: the size is checked before a byte is parsed.
    message = error(tmp_path, "<testsuite><testcase>" * 10, max_bytes=100)
    assert message == (
        f"JUnit report {tmp_path / 'report.xml'} is 210 bytes, over the limit of 100: "
        "reduce the captured output in the report, or raise the limit"
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
    start = time.perf_counter()
    try:
        with pytest.raises(JUnitError) as caught:
            list(iter_cases(path))
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"JUnit report {path} declares a DTD (<!DOCTYPE testsuite> at line 2) and repogym "
        "refuses DTDs, since entity expansion and external entities make them unsafe: "
        "write the report without one"
    )
    assert elapsed < 1
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
    assert path.stat().st_size > 4 * repogym.junit._CHUNK
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
        monkeypatch.setattr(repogym.junit, "_CHUNK", size)
        assert cases(tmp_path, xml) == whole
