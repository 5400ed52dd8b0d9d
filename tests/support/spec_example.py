"""The spec's example grader, verbatim ("Writing a grader"), shared by the tests that
show every route the spec describes: a composite of it, RepoEnv's two custom routes."""

from repogym.graders import Grader
from repogym.models import GradeComponent


# fmt: off
class NoTodoGrader(Grader):
    name = "no_todo"
    def grade(self, workspace):  # type: ignore[no-untyped-def]
        bad = [f for f in workspace.changed_files() if "TODO" in workspace.read(f)]
        return GradeComponent(name=self.name, score=float(not bad), passed=not bad,
                              messages=[f"TODO in {f}" for f in bad])
# fmt: on
