from __future__ import annotations

import sys

import pytest

from repogym.errors import TaskError
from repogym.graders import CompositeGrader, ConstraintGrader, Grader
from repogym.models import Finding, GradeComponent, Role
from repogym.workspace import Workspace
from tests.support.repo import Repo
from tests.support.spec_example import NoTodoGrader

REFACTOR_TASK = """\
version: 1
type: refactor
constraints:
  allowed_files: [src/**]
  paths: [src/**/*.py]
  max_function_length: 3
"""


class Fixed(Grader):
    """A grader whose component is given in advance."""

    def __init__(self, name: str, score: float, passed: bool, role: Role = Role.OBJECTIVE) -> None:
        super().__init__()
        self._name, self._score, self._passed, self._role = name, score, passed, role

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    def grade(self, workspace: Workspace) -> GradeComponent:
        return GradeComponent(
            name=self._name, score=self._score, passed=self._passed, role=self._role
        )


class Exploding(Grader):
    name = "exploding"

    def grade(self, workspace: Workspace) -> GradeComponent:
        raise RuntimeError("boom")


@pytest.fixture
def workspace(repo: Repo) -> Workspace:
    repo.commit("base", {".repogym.yml": REFACTOR_TASK, "src/a.py": "def f():\n    return 1\n"})
    repo.branch("pr")
    repo.write({"src/a.py": "def f():\n    return 2  # TODO\n"})
    return Workspace.open(repo.root, base="main")


def test_weighted_mean_over_objectives(workspace: Workspace) -> None:
    grader = CompositeGrader(
        [
            Fixed("gate", 1.0, True, Role.GATE),
            Fixed("a", 1.0, True),
            Fixed("b", 0.5, False),
        ],
        weights={"a": 3, "b": 1},
    )
    result = grader.grade_result(workspace)
    assert result.score == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)
    assert result.passed is False
    assert [c.weight for c in result.components] == [0.0, 3.0, 1.0]
    assert result.summary() == "FAIL 0.875 (gate=1.00✓(gate), a=1.00✓, b=0.50✗)"


def test_a_failed_gate_zeroes_the_score(workspace: Workspace) -> None:
    result = CompositeGrader(
        [Fixed("gate", 0.5, False, Role.GATE), Fixed("a", 1.0, True)]
    ).grade_result(workspace)
    assert result.score == 0.0
    assert result.passed is False


def test_pass_threshold(workspace: Workspace) -> None:
    graders = [Fixed("a", 0.9, True)]
    assert CompositeGrader(graders, pass_threshold=0.8).grade_result(workspace).passed
    assert not CompositeGrader(graders, pass_threshold=0.95).grade_result(workspace).passed


def test_without_an_objective_nothing_earns_credit(workspace: Workspace) -> None:
    result = CompositeGrader([Fixed("gate", 1.0, True, Role.GATE)]).grade_result(workspace)
    assert (result.score, result.passed) == (0.0, False)


def test_a_raising_grader_fails_alone(workspace: Workspace) -> None:
    result = CompositeGrader([Exploding(), Fixed("a", 1.0, True)]).grade_result(workspace)
    broken = result.component("exploding")
    assert (broken.score, broken.passed) == (0.0, False)
    assert "raised RuntimeError" in broken.messages[0] and "boom" in broken.messages[0]
    assert result.component("a").passed
    assert result.score == 0.5


def test_a_raising_grader_is_one_finding_without_a_place(workspace: Workspace) -> None:
    result = CompositeGrader([Exploding(), Fixed("a", 1.0, True)]).grade_result(workspace)
    line = Exploding.grade.__code__.co_firstlineno + 1  # its `raise`
    message = f"grader 'exploding' raised RuntimeError at test_composite.py:{line}: boom"
    assert result.component("exploding").findings == (Finding(title="error", message=message),)
    assert result.component("exploding").messages == (message,)
    assert result.component("a").findings == ()


class Pointing(Grader):
    """A custom grader that reports its own findings."""

    name = "pointing"

    def grade(self, workspace: Workspace) -> GradeComponent:
        finding = Finding(title="todo", path="src/a.py", line=2, message="a TODO", level="warning")
        return GradeComponent(name=self.name, score=1.0, passed=True, findings=[finding])


def test_a_custom_graders_findings_reach_the_report(workspace: Workspace) -> None:
    result = CompositeGrader([Pointing()]).grade_result(workspace)
    assert result.to_dict()["components"][0]["findings"] == [
        {"path": "src/a.py", "line": 2, "title": "todo", "message": "a TODO", "level": "warning"}
    ]


def test_graders_run_in_the_order_given(workspace: Workspace) -> None:
    result = CompositeGrader([Fixed("z", 1, True), Fixed("a", 1, True)]).grade_result(workspace)
    assert [c.name for c in result.components] == ["z", "a"]


def test_the_spec_example(workspace: Workspace) -> None:
    grader = CompositeGrader([ConstraintGrader(), NoTodoGrader()], weights={"no_todo": 0.2})
    result = grader.grade_result(workspace)
    assert result.summary() == "FAIL 0.000 (constraints=1.00✓(gate), no_todo=0.00✗)"
    assert result.component("no_todo").messages == ("TODO in src/a.py",)
    assert result.files_changed == ("src/a.py",)
    assert "+    return 2  # TODO" in result.patch


def test_role_gate_blocks_instead_of_weighing(workspace: Workspace) -> None:
    result = CompositeGrader([NoTodoGrader(role="gate"), Fixed("a", 1, True)]).grade_result(
        workspace
    )
    assert result.component("no_todo").role is Role.GATE
    assert result.component("no_todo").weight == 0.0
    assert result.score == 0.0
    # A single grader can be run on its own too.
    single = CompositeGrader([NoTodoGrader()]).grade_result(workspace)
    assert single.summary() == "FAIL 0.000 (no_todo=0.00✗)"


def test_bad_composites_are_refused() -> None:
    with pytest.raises(ValueError, match="weights name no grader: nope"):
        CompositeGrader([NoTodoGrader()], weights={"nope": 1})
    with pytest.raises(ValueError, match="two graders are called 'no_todo'"):
        CompositeGrader([NoTodoGrader(), NoTodoGrader()])
    with pytest.raises(ValueError, match="must be positive"):
        CompositeGrader([NoTodoGrader()], weights={"no_todo": 0})


def test_task_graders_run_in_spec_order(workspace: Workspace) -> None:
    result = CompositeGrader.for_workspace(workspace).grade_result(workspace)
    assert [c.name for c in result.components] == ["constraints", "quality"]
    assert result.component("quality").role is Role.OBJECTIVE


GRADER_MODULE = """\
from repogym.graders import Grader
from repogym.models import GradeComponent

class Marker(Grader):
    name = "marker"
    def grade(self, workspace):
        return GradeComponent(name=self.name, score={score}, passed=True, messages=["{who}"])
"""


def test_custom_graders_come_from_the_baseline_not_the_submission(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = REFACTOR_TASK + "grading:\n  graders: ['rg_tools_demo.graders:Marker']\n"
    repo.commit(
        "base",
        {
            ".repogym.yml": task,
            "src/a.py": "def f():\n    return 1\n",
            "rg_tools_demo/__init__.py": "",
            "rg_tools_demo/graders.py": GRADER_MODULE.format(score=0.25, who="baseline"),
        },
    )
    repo.branch("pr")
    repo.commit("pr", {"rg_tools_demo/graders.py": GRADER_MODULE.format(score=1, who="pr")})
    # Even with the submission as the current directory and on sys.path.
    monkeypatch.chdir(repo.root)
    monkeypatch.syspath_prepend(str(repo.root))
    workspace = Workspace.open(repo.root, base="main")
    try:
        result = CompositeGrader.for_workspace(workspace).grade_result(workspace)
    finally:
        for name in [n for n in sys.modules if n.startswith("rg_tools_demo")]:
            del sys.modules[name]
    marker = result.component("marker")
    assert marker.messages == ("baseline",)
    assert marker.score == 0.25
    assert [c.name for c in result.components] == ["constraints", "quality", "marker"]


def test_custom_grader_that_cannot_be_imported_is_a_task_error(repo: Repo) -> None:
    task = REFACTOR_TASK + "grading:\n  graders: ['no_such_module_xyz:G']\n"
    repo.commit("base", {".repogym.yml": task, "src/a.py": "x = 1\n"})
    workspace = Workspace.open(repo.root, base="main")
    with pytest.raises(TaskError, match="cannot import 'no_such_module_xyz'"):
        CompositeGrader.for_workspace(workspace)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "import sys\nsys.exit(3)\n",
            "importing 'rg_exits_demo' called sys.exit(3); a grader module must not exit "
            "when imported",
        ),
        (
            "from repogym.graders import Grader\n\n\nclass G(Grader):\n    name = 'g'\n\n"
            "    def __init__(self, needed):\n        super().__init__()\n",
            "G() raised TypeError: ",
        ),
    ],
)
def test_a_custom_grader_that_exits_or_cannot_be_made_is_a_task_error(
    repo: Repo, source: str, problem: str
) -> None:
    task = REFACTOR_TASK + "grading:\n  graders: ['rg_exits_demo:G']\n"
    repo.commit("base", {".repogym.yml": task, "src/a.py": "x = 1\n", "rg_exits_demo.py": source})
    workspace = Workspace.open(repo.root, base="main")
    try:
        with pytest.raises(TaskError) as caught:
            CompositeGrader.for_workspace(workspace)
    finally:
        sys.modules.pop("rg_exits_demo", None)
    assert problem in str(caught.value)
    assert len(caught.value.lines) == 1
