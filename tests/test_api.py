"""The public surface (issue 8): what ``repogym`` exports, the one registry of built-in
graders, and imports that form no cycle."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import repogym
from repogym.graders import Grader
from repogym.graders.base import BuiltinGrader
from repogym.graders.builtin import BUILTIN, builtin_grader
from repogym.task import BUILTIN_GRADERS

PACKAGE = Path(repogym.__file__).parent


def test_all_is_sorted_and_complete() -> None:
    assert repogym.__all__ == sorted(repogym.__all__)
    assert set(repogym.__all__) - {"__version__"} == set(repogym._EXPORTS)
    for name in repogym.__all__:
        assert getattr(repogym, name) is not None
        assert name in dir(repogym)
    # What a type checker reads (the TYPE_CHECKING imports) names the same objects.
    tree = ast.parse(Path(repogym.__file__).read_text())
    typed = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("repogym.")
        for alias in node.names
    }
    assert typed == repogym._EXPORTS
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        repogym.nope  # noqa: B018


def test_a_module_loads_only_what_it_needs() -> None:
    # bench/junit.py's memory target: the JUnit reader alone, not the task schema.
    code = "import sys, repogym.junit; print(sorted({'pydantic', 'yaml'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", list(BUILTIN_GRADERS))
def test_every_registered_grader_is_a_grader_of_that_name(name: str) -> None:
    grader_class = builtin_grader(name)
    assert issubclass(grader_class, Grader)
    assert grader_class.name == name
    assert grader_class.__name__ in repogym.__all__


def test_the_task_s_table_and_the_registry_name_the_same_graders() -> None:
    assert set(BUILTIN) == set(BUILTIN_GRADERS)
    # One constructor shape: every built-in grader takes the same keywords.
    for grader_class in BUILTIN.values():
        assert grader_class.__init__ is BuiltinGrader.__init__


def _imports(path: Path) -> list[tuple[str, str]]:
    """The repogym modules ``path`` imports, each with where: ``top`` (run on import),
    ``typing`` (under ``if TYPE_CHECKING``, never run) or ``block`` (inside a function or
    a ``try``: run later, which is how a cycle hides)."""
    tree = ast.parse(path.read_text())
    kinds: dict[int, str] = {}
    for node in tree.body:
        typing = isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for inner in ast.walk(node):
            kinds[id(inner)] = "typing" if typing else "block"
        kinds[id(node)] = "typing" if typing else "top"
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:  # repogym has no relative ones
            # `from package import module` runs the module, and the package only if it is
            # not running already; `from module import name` runs the module.
            submodules = [f"{node.module}.{a.name}" for a in node.names]
            names = [s for s in submodules if _is_module(s)]
            if len(names) < len(submodules):
                names.append(node.module)
        for name in names:
            if name.startswith("repogym") and _is_module(name):
                found.append((name, kinds[id(node)]))
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles_and_none_hidden_in_functions() -> None:
    graph: dict[str, set[str]] = {}
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        graph[name] = set()
        for target, kind in _imports(path):
            if target == name or kind == "typing":
                continue
            graph[name].add(target)
            if kind == "block":
                hidden.append(f"{name} imports {target} inside a block")
    assert hidden == []
    for start in graph:
        # The package's __init__ re-exports; a submodule reaching it is not a cycle of code.
        seen: set[str] = set()
        stack = [t for t in graph[start] if t != "repogym"]
        while stack:
            current = stack.pop()
            assert current != start, f"import cycle through {start}"
            if current in seen:
                continue
            seen.add(current)
            stack += [t for t in graph.get(current, ()) if t != "repogym"]


def test_every_public_name_imports_from_its_module() -> None:
    for name in repogym.__all__:
        value = getattr(repogym, name)
        home = getattr(value, "__module__", None)
        if home is not None:
            assert getattr(importlib.import_module(home), name) is value


def _glue_imports() -> list[tuple[str, str, str]]:
    """(glue file, engine module, name) for every engine name the Action imports."""
    found = []
    for path in sorted((PACKAGE.parent / "repogym_action").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("repogym."):
                found += [(path.name, node.module or "", alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "repogym":
                found += [(path.name, "repogym", alias.name) for alias in node.names]
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "repogym"
            ):
                found.append((path.name, "repogym", node.attr))
    return found


def test_the_action_uses_only_the_engine_s_public_names() -> None:
    # The glue is the engine's first user: every name it takes is in the `__all__` of a
    # module whose path has no private part (issue 21).
    found = _glue_imports()
    assert len(found) > 20
    wrong = []
    for where, module, name in found:
        loaded = importlib.import_module(module)
        private = any(part.startswith("_") for part in module.split("."))
        if private or name not in getattr(loaded, "__all__", ()):
            wrong.append(f"{where}: {module}.{name}")
    assert wrong == []


def test_no_test_module_imports_another() -> None:
    # What tests share lives in helper modules (tests/support/repo.py, tests/action/logs.py...),
    # not in a test module or a conftest.py that another imports (issue 21).
    tests = PACKAGE.parent / "tests"
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
                last = (node.module or "").rsplit(".", 1)[-1]
                if last.startswith("test_") or last == "conftest":
                    wrong.append(f"{path.relative_to(tests)}: {node.module}")
    assert wrong == []
