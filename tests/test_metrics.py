"""The metrics rules, one at a time, with the numbers worked out by hand."""

from __future__ import annotations

import ast
import dataclasses
import gc
import pathlib
import textwrap
import warnings
from typing import Any

import pytest

from repogym import metrics
from repogym.metrics import FunctionMetrics, measure_file, measure_source


def measure(code: str) -> dict[str, int]:
    """Complexity by qualname of the functions in ``code`` (dedented)."""
    found = measure_source(textwrap.dedent(code), "t.py")
    by_name = {m.qualname: m.complexity for m in found}
    assert len(by_name) == len(found), "a qualname is reported twice"
    return by_name


def complexity(code: str) -> int:
    """Complexity of the one function ``f`` in ``code``."""
    return measure(code)["f"]


# Decision points: statements


def test_a_function_without_branches_has_complexity_one() -> None:
    assert complexity("def f():\n    x = 1\n    return x\n") == 1
    assert complexity("def f(): pass\n") == 1


def test_each_if_and_elif_counts_and_else_does_not() -> None:
    code = """
        def f(a, b, c):
            if a:
                pass
            elif b:
                pass
            elif c:
                pass
            else:
                pass
            if a:
                if b:
                    pass
    """
    assert complexity(code) == 1 + 3 + 2


def test_each_loop_counts_and_its_else_does_not() -> None:
    code = """
        def f(xs):
            for x in xs:
                pass
            else:
                pass
            while xs:
                break
            else:
                pass
    """
    assert complexity(code) == 1 + 2


def test_async_def_and_async_for_count_like_their_plain_forms() -> None:
    code = """
        async def f(xs):
            async for x in xs:
                if x:
                    pass
    """
    assert complexity(code) == 1 + 2


def test_each_except_counts_but_try_else_and_finally_do_not() -> None:
    code = """
        def f():
            try:
                pass
            except ValueError:
                pass
            except (TypeError, KeyError):
                pass
            except:
                pass
            else:
                pass
            finally:
                pass
            try:
                pass
            finally:
                pass
    """
    assert complexity(code) == 1 + 3


def test_each_except_star_counts() -> None:
    code = """
        def f():
            try:
                pass
            except* ValueError:
                pass
            except* TypeError:
                pass
            else:
                pass
    """
    assert complexity(code) == 1 + 2


def test_each_assert_counts_with_the_operators_in_it() -> None:
    code = """
        def f(a, b):
            assert a
            assert a and b, "message"
    """
    assert complexity(code) == 1 + 1 + 2


def test_each_match_case_counts_and_guards_only_by_their_operators() -> None:
    code = """
        def f(command):
            match command:
                case "go":
                    pass
                case ["move", x] if x:
                    pass
                case {"jump": y} if y and y > 1:
                    pass
                case _:
                    pass
    """
    assert complexity(code) == 1 + 4 + 1


def test_with_does_not_count() -> None:
    code = """
        async def f(a, b):
            with a as x, b:
                pass
            async with a:
                pass
    """
    assert complexity(code) == 1


# Decision points: expressions


@pytest.mark.parametrize(
    ("expression", "added"),
    [
        ("a or b", 1),
        ("a and b and c", 2),  # one BoolOp with three values
        ("(a and b) or (c and d)", 3),  # three BoolOps of two values
        ("a and (b or c) and d", 3),
        ("not (a and b)", 1),
        ("a if b else c", 1),
        ("a if b else c if d else e", 2),
        ("(a or b) if c and d else e", 3),
        ("[x for x in xs]", 1),
        ("[x for x in xs if x if x > 1 for y in x if y]", 2 + 3),
        ("{x: y for x, y in xs if x}", 2),
        ("{x for x in xs}", 1),
        ("(x for x in xs if x)", 2),
        ("[[y for y in x if y] for x in xs]", 2 + 1),
        ("[x for x in (y for y in xs if y or z)]", 2 + 1 + 1),
        ("lambda x: x if x else 0", 1),
        ("lambda x=(a or b): x", 1),
        ("f'{a if b else c}'", 1),
        ("1if a else 2", 1),
        ("0x1for x in xs", 1),  # 0x1f or (x in xs)
    ],
)
def test_expressions_count_toward_the_function_holding_them(expression: str, added: int) -> None:
    assert complexity(f"def f(a, b, c, d, e, xs):\n    return {expression}\n") == 1 + added


def test_expressions_in_statement_headers_count() -> None:
    code = """
        def f(a, b, xs):
            if a and b:  # 1 + 1
                pass
            while a or b:  # 1 + 1
                pass
            for x in [y for y in xs if y]:  # 1 + 2
                pass
            with (a if b else xs):  # 1
                pass
            try:
                pass
            except (ValueError if a else TypeError):  # 1 + 1
                pass
            match a or b:  # 1
                case _:  # 1
                    pass
    """
    assert complexity(code) == 1 + 2 + 2 + 3 + 1 + 2 + 2


def test_async_comprehensions_count() -> None:
    code = "async def f(xs):\n    return [x async for x in xs if x]\n"
    assert complexity(code) == 1 + 2


# What belongs to which function


def test_nested_function_owns_its_decorators_defaults_and_annotations() -> None:
    code = """
        def outer(p, q, r, s, t, u, v):
            @decorate(1 if p else 2)
            def inner(
                a=(1 if q else 2),
                /,
                b: (int if r else str) = 3,
                *args: (int if s else str),
                c=(1 if t else 2),
                **kwargs: (int if u else str),
            ) -> (int if v else str):
                return a
            return inner
    """
    assert measure(code) == {"outer": 1, "outer.<locals>.inner": 1 + 7}


def test_top_level_function_owns_its_decorators_and_signature() -> None:
    code = """
        @decorate(a or b)
        @other(c if d else e)
        def f(x=(y and z)) -> (t if u else v):
            pass
    """
    assert complexity(code) == 1 + 4


def test_class_in_a_function_counts_toward_nothing_but_its_methods() -> None:
    code = """
        def factory(flag):
            @decorate(flag or None)
            class Local(Base if flag else Other, metaclass=Meta if flag else type):
                attribute = 1 if flag else 2
                values = [v for v in range(3) if v]

                def method(self):
                    return 1 if self else 2
            return Local
    """
    assert measure(code) == {"factory": 1, "factory.<locals>.Local.method": 2}


def test_module_and_class_code_counts_toward_nothing() -> None:
    code = """
        if a:
            x = b or c
        for y in [z for z in zs if z]:
            pass
        class C:
            assert d
            attribute = e if f else g
            def m(self):
                pass
    """
    assert measure(code) == {"C.m": 1}


def test_lambdas_in_defaults_count_toward_the_function_defined() -> None:
    code = """
        def outer():
            def inner(key=lambda x: x or 0):
                return key
            return [lambda y: y if y else 1]
    """
    assert measure(code) == {"outer": 2, "outer.<locals>.inner": 2}


# Where the keywords are in the text (the walk skips statements without them)


@pytest.mark.parametrize(
    "code",
    [
        "def f(a, b):\n    x = 1; y = a or b\n",  # two statements on one line
        "def f(a, b):\n    return (a\n            or b)\n",  # the keyword on a later line
        "def f(a, b):\n    return a \\\n        or b\n",  # after a backslash
        'def f(a, b):\n    s = "é"; return a or b\n',  # non-ASCII before the keyword
        'def f(a, b):\n    s = "\u2028"\n    return a or b\n',  # not a line break to Python
        "\x0c\ndef f(a, b):\n    return a or b\n",  # nor is a form feed
        "def f(a, b):\r    x = 1\r    return a or b\r",  # old Mac line ends
        "def f(a, b):\r\n    x = 1\r\n    return a or b\r\n",
        'def f(s="é", t=(a or b)): pass\n',  # non-ASCII in the signature
        "def f(x,\n      y=(a or b)): return x\n",  # body on the signature's last line
        "@d(a or b)\ndef f(): pass\n",
        "@(\n  a or b\n)\ndef f(): pass\n",
    ],
)
def test_keywords_are_found_wherever_they_stand(code: str) -> None:
    assert complexity(code) == 2


def test_keywords_in_strings_and_comments_do_not_count() -> None:
    code = """
        def f(a):
            x = "if this or that"  # and for these
            return a  # if
    """
    assert complexity(code) == 1


# Qualnames, lines and lengths


def test_qualnames_are_written_as_python_writes_them() -> None:
    code = """
        def f():
            def g():
                def h():
                    pass
            class C:
                def m(self):
                    pass
                class D:
                    async def n(self):
                        pass
        class A:
            class B:
                def m(self):
                    pass
            def __private(self):
                pass
    """
    assert list(measure(code)) == [
        "f",
        "f.<locals>.g",
        "f.<locals>.g.<locals>.h",
        "f.<locals>.C.m",
        "f.<locals>.C.D.n",
        "A.B.m",
        "A.__private",
    ]


def test_names_declared_global_are_named_as_at_the_top_level() -> None:
    code = """
        def f():
            global g, K
            def g():
                def inner():
                    pass
            class K:
                def m(self):
                    pass
        class C:
            global h
            def h(self):
                pass
    """
    assert list(measure(code)) == ["f", "g", "g.<locals>.inner", "K.m", "h"]


def test_qualnames_match_the_interpreter() -> None:
    code = textwrap.dedent(
        """
        functions = []

        def record(function):
            functions.append(function)
            return function

        @record
        def outer():
            global made_global

            @record
            def made_global():
                pass

            class Local:
                @record
                def method(self):
                    @record
                    async def deepest():
                        pass

                    return (lambda: None)()

            Local().method()

        class Top:
            @record
            def method(self):
                pass

            class __Inner:
                global free

                @record
                def free():
                    pass

                @record
                def __hidden(self):
                    pass

        outer()
        """
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "sample.py", "exec"), namespace)  # defines and calls the functions
    real = [function.__qualname__ for function in namespace["functions"]]
    assert len(real) == 7  # every function but ``record`` itself
    measured = [m.qualname for m in measure_source(code, "sample.py")]
    assert sorted(measured) == sorted([*real, "record"])


def test_line_is_the_def_line_and_length_excludes_decorators() -> None:
    code = """\
@decorate
@decorate(
    1
)
def f():
    x = 1

    return x
def g(): return 1
"""
    assert measure_source(code, "pkg/mod.py") == [
        FunctionMetrics(path="pkg/mod.py", line=5, qualname="f", length=4, complexity=1),
        FunctionMetrics(path="pkg/mod.py", line=9, qualname="g", length=1, complexity=1),
    ]


def test_functions_come_in_source_order() -> None:
    code = """
        class A:
            def late(self):
                def inner():
                    pass
        def f():
            if x:
                def in_if():
                    pass
            def after():
                pass
        def g():
            pass
    """
    found = measure_source(textwrap.dedent(code), "t.py")
    assert [m.qualname for m in found] == [
        "A.late",
        "A.late.<locals>.inner",
        "f",
        "f.<locals>.in_if",
        "f.<locals>.after",
        "g",
    ]
    assert [m.line for m in found] == sorted(m.line for m in found)


# Input and errors


def test_bytes_are_decoded_with_their_encoding_cookie() -> None:
    code = "# -*- coding: latin-1 -*-\ndef f(s):\n    return 'é' if s else ''\n"
    (found,) = measure_source(code.encode("latin-1"), "t.py")
    assert (found.line, found.qualname, found.complexity) == (2, "f", 2)


def test_keywords_hidden_by_the_codec_still_count() -> None:
    # The raw bytes hold no ``if``: only the decoded text does.
    code = b"# coding: unicode_escape\ndef f(a):\n    return 1 \\x69\\x66 a else 2\n"
    assert b"if a" not in code
    assert [(m.qualname, m.complexity) for m in measure_source(code, "t.py")] == [("f", 2)]


def test_a_utf8_bom_is_accepted() -> None:
    code = b"\xef\xbb\xbfdef f(a):\n    return a or 1\n"
    assert [(m.line, m.complexity) for m in measure_source(code, "t.py")] == [(1, 2)]


@pytest.mark.parametrize(
    "source",
    [
        "def f(:\n    pass\n",
        b"def f(:\n    pass\n",
        "x = 1\x00\n",
        b"x = 1\x00\n",
        b"x = '\xff'\n",  # not UTF-8
        b"# coding: no-such-codec\nx = 1\n",
    ],
)
def test_source_that_does_not_parse_raises_syntax_error(source: str | bytes) -> None:
    with pytest.raises(SyntaxError):
        measure_source(source, "bad.py")


def test_parsing_emits_no_warning() -> None:
    code = 'def f():\n    return "\\d" if (1if True else 0) else None\n'
    with pytest.warns((DeprecationWarning, SyntaxWarning)):
        ast.parse(code)  # "\d" is an invalid escape sequence
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (found,) = measure_source(code, "t.py")
    assert found.complexity == 3


def test_measure_file_reads_bytes_and_names_the_results(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "mod.py"
    path.write_bytes(b"# coding: latin-1\ndef f(a):\n    return '\xe9' or a\n")
    assert measure_file(path) == [
        FunctionMetrics(path=path.as_posix(), line=2, qualname="f", length=2, complexity=2)
    ]
    assert [m.path for m in measure_file(path, "src/mod.py")] == ["src/mod.py"]


def test_function_metrics_are_frozen() -> None:
    (found,) = measure_source("def f(): pass\n", "t.py")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.complexity = 2  # type: ignore[misc]


def test_the_fast_constructor_fills_every_field() -> None:
    names = tuple(field.name for field in dataclasses.fields(FunctionMetrics))
    assert names == metrics._SLOT_NAMES
    expected = FunctionMetrics(path="a.py", line=3, qualname="C.m", length=4, complexity=5)
    assert metrics._new_metrics("a.py", 3, "C.m", 4, 5) == expected


@pytest.mark.parametrize("source", ["x = 1" + "+1" * 30_000, "x = " + "not " * 100_000 + "1"])
def test_code_too_deep_to_parse_is_a_syntax_error_at_line_one(source: str) -> None:
    with pytest.raises(SyntaxError) as caught:
        measure_source(source, "deep.py")
    assert (caught.value.lineno, caught.value.msg) == (1, "too deeply nested for Python's parser")


class _Cycle:
    """An object in a reference cycle with itself; ``freed`` is set when it is collected."""

    def __init__(self, freed: list[str]) -> None:
        self.me = self
        self._freed = freed

    def __del__(self) -> None:
        self._freed.append("freed")


def test_measuring_many_tunes_the_collector_and_puts_it_back() -> None:
    before = gc.get_threshold()
    freed: list[str] = []
    with metrics.measuring_many():
        assert gc.get_freeze_count() > 0  # what was loaded before is not walked again
        assert gc.get_threshold()[0] == 200_000
        assert measure_source("def f(x):\n    return x or 1\n", "t.py")[0].complexity == 2
        _Cycle(freed)
        gc.collect()  # the collector still runs inside and frees the cycles others make
        assert freed == ["freed"]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_measuring_many_puts_the_collector_back_when_the_block_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(SyntaxError), metrics.measuring_many():
        measure_source("def (", "bad.py")
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, 0)
