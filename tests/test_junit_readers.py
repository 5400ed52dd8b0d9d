"""The C JUnit reader (repogym/_cjunit.c) against the pure Python one, its definition.

Hundreds of seeded random reports, well-formed and not, must give the same cases or the
same error from both readers, whatever the size of the chunks the report is read in. A
mismatch names the seed: ``generate(seed)`` rebuilds its document.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING

import pytest

import repogym.junit
from repogym.junit import MAX_MESSAGE, Case, FirstLine, Outcome, attribute_message, iter_cases

if TYPE_CHECKING:
    from repogym import _cjunit
else:
    _cjunit = pytest.importorskip("repogym._cjunit", reason="the C reader is not built")

DOCUMENTS = 800
CHUNKS = (1, 3, 17, 4096, repogym.junit._CHUNK)
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
            pieces.append("\n" * 9000 + "large")  # over _cjunit's TEXT_FLUSH
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


Result = tuple[str, str | None]  # the cases read (as repr: types count), then the error


def read(path: Path) -> Result:
    cases: list[Case] = []
    try:
        for case in iter_cases(path):
            cases.append(case)
    except repogym.junit.JUnitError as error:
        return repr(cases), str(error)
    return repr(cases), None


def both(path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, Result]:
    with monkeypatch.context() as patch:
        patch.setattr(repogym.junit, "_CHUNK", chunk)
        c_result = read(path)
        patch.setattr(repogym.junit, "_cjunit", None)
        return c_result, read(path)


@pytest.mark.parametrize("first", range(0, DOCUMENTS, 100))
def test_both_readers_agree_on_random_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: int
) -> None:
    path = tmp_path / "report.xml"
    for seed in range(first, first + 100):
        data = generate(seed)
        path.write_bytes(data)
        expected: Result | None = None
        for chunk in CHUNKS:
            if chunk < 17 and len(data) > SMALL:
                continue
            c_result, py_result = both(path, chunk, monkeypatch)
            where = f"seed {seed}, chunk {chunk}: generate({seed}) is\n{data!r}"
            assert c_result == py_result, f"the readers differ, {where}"
            if expected is None:
                expected = py_result
            elif py_result[1] is None or expected[1] is None:  # cases read: all of them
                assert py_result == expected, f"chunking changed the cases, {where}"
            else:  # an error: the cases before it depend on the chunk, the error must not
                assert py_result[1] == expected[1], f"chunking changed the error, {where}"


def test_the_generator_covers_what_it_should() -> None:
    documents = [generate(seed) for seed in range(DOCUMENTS)]
    utf16 = "testsuite".encode("utf-16-le")
    for feature in [b"<!DOCTYPE", b"<!ENTITY", b"no-such-codec", b"utf-32", utf16, b"o\x81k"]:
        assert sum(feature in d for d in documents) >= 3, feature
    for feature in [b"windows-1252", b"iso-8859-1", b'name="1" name', b"&undefined;"]:
        assert sum(feature in d for d in documents) >= 3, feature
    for word in ["flakyFailure", "rerunError", "<wrapper><failure", "<![CDATA[", "\u3000"]:
        assert sum(word in d.decode("utf-8", "replace") for d in documents) >= 20, word
    assert sum(d.startswith(b"\xff\xfe<\x00?\x00x") for d in documents) >= 20  # utf-16
    assert sum(d.startswith(b"\xef\xbb\xbf") for d in documents) >= 20  # a BOM


# -- the C reader's own hazards: leaks, and errors raised by the Python it calls -------------


def parse_all(path: Path) -> int:
    try:
        return len(list(iter_cases(path)))
    except repogym.junit.JUnitError:
        return -1


def test_repeated_parses_do_not_grow_memory(tmp_path: Path) -> None:
    rng = Random(7)
    good = "<testsuites>" + "".join(a_suite(rng, 1) for _ in range(60)) + "</testsuites>"
    documents = [good.encode(), good.encode("utf-16")]  # converted text, too
    documents += ["".join(malform(Random(seed), "", good)).encode() for seed in range(40)]
    documents.append(good.encode()[: len(good) // 2])
    paths = []
    for number, data in enumerate(documents):
        paths.append(tmp_path / f"{number}.xml")
        paths[-1].write_bytes(data)
    assert parse_all(paths[0]) > 100 and -1 in {parse_all(p) for p in paths}

    def parse_each() -> None:
        for path in paths:
            parse_all(path)

    tracemalloc.start()
    try:
        for _ in range(3):  # warm-up: caches, interned strings, free lists
            parse_each()
        gc.collect()
        memory, objects = tracemalloc.get_traced_memory()[0], len(gc.get_objects())
        for _ in range(15):
            parse_each()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - memory
        grown_objects = len(gc.get_objects()) - objects
    finally:
        tracemalloc.stop()
    assert grown < 32_000, f"{grown} bytes more after 15 parses of {len(paths)} reports"
    assert grown_objects < 50, f"{grown_objects} objects more"


def c_reader(
    first_line: type[FirstLine] = FirstLine,
    message: Callable[[str], str | None] = attribute_message,
) -> _cjunit.Reader:
    outcomes = (Outcome.PASSED, Outcome.SKIPPED, Outcome.FAILED, Outcome.ERROR)
    return _cjunit.Reader(Case, outcomes, first_line, message)


class Boom(Exception):
    pass


def failing(calls: list[str], name: str) -> Callable[..., None]:
    def fail(*_: object) -> None:
        calls.append(name)
        raise Boom(name)

    return fail


@pytest.mark.parametrize("where", ["message", "init", "add", "add-large", "line"])
def test_an_error_in_python_called_back_stops_the_parse(where: str) -> None:
    calls: list[str] = []

    class Failing(FirstLine):
        pass

    message: Callable[[str], str | None] = attribute_message
    if where == "message":
        message = failing(calls, where)
    else:
        method = {"init": "__init__", "add": "add", "add-large": "add", "line": "line"}[where]
        setattr(Failing, method, failing(calls, where))
    body = "\n" * 9000 + "x" if where == "add-large" else "line"
    case = f'<testcase name="t"><failure message="">{body}</failure></testcase>'
    xml = f"<testsuite>{case * 5}</testsuite>".encode()
    reader = c_reader(Failing, message)
    with pytest.raises(Boom):
        reader.feed(xml, False)
    assert calls == [where]  # no Python was called once the error was raised
    with pytest.raises(RuntimeError, match="cannot take more input"):
        reader.feed(b"", True)
