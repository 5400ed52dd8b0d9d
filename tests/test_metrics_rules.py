"""Every complexity and naming rule of docs/metrics.md, on hand-written code."""

from __future__ import annotations

import textwrap
import warnings

import pytest

from repogym.metrics import FunctionMetrics, measure_file, measure_source


def measure(code: str) -> dict[str, tuple[int, int, int]]:
    """qualname -> (line, length, complexity)."""
    found = measure_source(textwrap.dedent(code), "m.py")
    return {f.qualname: (f.line, f.length, f.complexity) for f in found}


def complexity(code: str, name: str = "f") -> int:
    return measure(code)[name][2]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("pass", 1),
        ("if a:\n        pass", 2),
        (
            "if a:\n        pass\n    elif b:\n        pass\n"
            "    elif c:\n        pass\n    else:\n        pass",
            4,
        ),
        ("for x in y:\n        pass\n    else:\n        pass", 2),
        ("while a:\n        pass\n    else:\n        pass", 2),
        (
            "try:\n        pass\n    except A:\n        pass\n    except B:\n"
            "        pass\n    else:\n        pass\n    finally:\n        pass",
            3,
        ),
        ("try:\n        pass\n    except* A:\n        pass\n    except* B:\n        pass", 3),
        ("return a and b and c", 3),
        ("return a or b", 2),
        ("return (a and b) or (c and d)", 4),
        ("return x if a else y", 2),
        ("return [x for x in y]", 2),
        ("return [x for x in y if x if not x]", 4),
        ("return {k: v for k in a for v in b if v}", 4),
        ("return [[x for x in row] for row in rows]", 3),
        ("assert a\n    assert b, 'msg'", 3),
        (
            "match x:\n        case 1:\n            pass\n"
            "        case [a, b] if a:\n            pass\n        case _:\n            pass",
            4,
        ),
        ("with a, b:\n        pass", 1),
        ("return lambda v: v if v else 0", 2),
        ("return (v async for v in y)", 2),
    ],
)
def test_decision_points(body: str, expected: int) -> None:
    assert complexity(f"def f():\n    {body}\n") == expected


def test_async_for_and_async_with() -> None:
    code = "async def f():\n    async for x in y:\n        pass\n    async with a:\n        pass\n"
    assert complexity(code) == 2


def test_nested_functions_are_measured_apart_with_their_header() -> None:
    code = """\
    def outer(a=1 if x else 2):
        @decorate(p if q else r)
        def inner(b=c or d) -> (e if f else g):
            return b and c
        return inner
    """
    assert measure(code) == {
        "outer": (1, 5, 2),  # its own default's IfExp; nothing of inner
        # its decorator's IfExp, default's BoolOp, annotation's IfExp and the body's BoolOp
        "outer.<locals>.inner": (3, 2, 5),
    }


def test_classes_in_functions_and_methods() -> None:
    code = """\
    def factory():
        class Local(Base if x else object):
            attr = [i for i in range(3)]
            def method(self):
                return self or None
        return Local

    class Outer:
        class Inner:
            def deep(self):
                pass
        flag = a and b
    """
    assert measure(code) == {
        "factory": (1, 6, 1),  # the class, its bases and its body are not the function's
        "factory.<locals>.Local.method": (4, 2, 2),
        "Outer.Inner.deep": (10, 2, 1),
    }


def test_decorators_of_a_top_level_function_count_toward_it() -> None:
    code = "@cache(1 if a else 2)\n@other\ndef f(\n    x,\n):\n    return x\n"
    assert measure(code) == {"f": (3, 4, 2)}  # line and length from the def line


def test_global_declared_names_have_no_prefix() -> None:
    code = "def f():\n    global g\n    def g():\n        pass\n"
    assert set(measure(code)) == {"f", "g"}


def test_module_code_counts_toward_nothing() -> None:
    assert measure("x = [a for a in b if a]\nif y:\n    pass\n") == {}


def test_syntax_errors_raise() -> None:
    with pytest.raises(SyntaxError):
        measure_source("def f(:\n", "bad.py")
    with pytest.raises(SyntaxError):
        measure_source(b"x = 1\0", "nul.py")


def test_no_warning_for_invalid_escapes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert measure_source('def f():\n    return "\\d"\n', "w.py")[0].complexity == 1


def test_bytes_with_an_encoding_cookie(tmp_path: object) -> None:
    source = "# -*- coding: latin-1 -*-\ndef caf\xe9():\n    pass\n".encode("latin-1")
    (found,) = measure_source(source, "enc.py")
    assert found == FunctionMetrics(path="enc.py", line=2, qualname="café", length=2, complexity=1)


def test_measure_file_uses_the_display_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    pass\n")
    assert measure_file(path, "src/mod.py")[0].path == "src/mod.py"


def test_source_order() -> None:
    code = "def b():\n    pass\n\n\ndef a():\n    pass\n"
    assert [f.qualname for f in measure_source(code, "m.py")] == ["b", "a"]
