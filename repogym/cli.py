"""The ``repogym`` command: ``grade``, ``metrics``, ``demo``.

Exit codes: 0 passed (or done), 1 graded and not passed, 2 a usage, task or workspace
error, printed as one line per problem and never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from repogym import __version__
from repogym import git as _git
from repogym.errors import RepogymError, UsageError, WorkspaceError

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="repogym", description="Grade a code change against a task.")
    parser.add_argument("--version", action="version", version=f"repogym {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    grade = commands.add_parser("grade", help="grade the work tree against a base branch")
    grade.add_argument(
        "--base",
        metavar="REF",
        help="base branch or commit (default: the remote's default branch, else main or master)",
    )
    grade.add_argument(
        "--task", metavar="FILE", type=Path, help="task file to use instead of .repogym.yml at REF"
    )
    grade.add_argument("--json", metavar="OUT", type=Path, help="write the JSON report here")
    grade.add_argument("--markdown", metavar="OUT", type=Path, help="write a Markdown summary here")
    grade.add_argument(
        "-C",
        dest="directory",
        metavar="DIR",
        type=Path,
        default=Path(),
        help="the work tree (default: the current directory)",
    )

    validate = commands.add_parser(
        "validate", help="check that a task is sound: static checks, empty submission, solution"
    )
    validate.add_argument(
        "--base", metavar="REF", help="the task's base commit (default: as for grade)"
    )
    validate.add_argument(
        "--task", metavar="FILE", type=Path, help="task file instead of .repogym.yml at REF"
    )
    validate.add_argument(
        "--solution",
        metavar="REF_OR_PATCH",
        help="a reference solution: a branch, tag or commit, or a patch file to apply to REF",
    )
    validate.add_argument(
        "--repeat", metavar="N", type=int, default=1, help="grade the solution N times (flakiness)"
    )
    validate.add_argument(
        "-C", dest="directory", metavar="DIR", type=Path, default=Path(), help="the repository"
    )

    metrics = commands.add_parser("metrics", help="length and complexity of every Python function")
    metrics.add_argument(
        "paths", nargs="+", metavar="PATH", type=Path, help="Python files or directories"
    )
    metrics.add_argument("--json", action="store_true", help="print JSON lines instead of a table")

    demo = commands.add_parser(
        "demo", help="grade the bundled example tasks in a temporary repository"
    )
    demo.add_argument("--keep", action="store_true", help="keep the temporary repository")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "grade":
            return _grade(args)
        if args.command == "metrics":
            return _metrics(args)
        if args.command == "validate":
            return _validate(args)
        from repogym.demo import run_demo

        return run_demo(keep=args.keep)
    except RepogymError as error:
        for line in error.lines:
            print(f"repogym: error: {line}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("repogym: interrupted", file=sys.stderr)
        return 130


def default_base(repo: Path) -> str:
    """The remote's default branch, else ``main``, else ``master``."""
    try:
        ref = _git.git(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], repo)
        return ref.decode().strip()
    except WorkspaceError:
        pass
    for name in ("main", "master"):
        try:
            _git.resolve_commit(repo, name)
            return name
        except WorkspaceError:
            continue
    raise UsageError(
        "no base branch: the repository has no origin/HEAD, main or master; pass --base REF"
    )


def _grade(args: argparse.Namespace) -> int:
    from repogym.graders import CompositeGrader
    from repogym.report import markdown, report_dict, text_table, to_json, write_atomic
    from repogym.workspace import Workspace, task_at

    repo = _git.toplevel(args.directory.resolve())
    ref = args.base or default_base(repo)
    ref_sha = _git.resolve_commit(repo, ref)
    head = _git.resolve_commit(repo, "HEAD")
    merge_base = _git.git(["merge-base", ref_sha, head], repo).decode().strip()
    task = args.task if args.task else task_at(repo, ref_sha, ref)
    workspace = Workspace.open(repo, base=merge_base, task=task)
    workspace.base_ref = ref
    result = CompositeGrader.for_workspace(workspace).grade_result(workspace)
    print(text_table(result), end="")
    if args.json:
        write_atomic(args.json, to_json(report_dict(result, workspace)))
        print(f"JSON report: {args.json}")
    if args.markdown:
        write_atomic(args.markdown, markdown(result))
        print(f"Markdown summary: {args.markdown}")
    return EXIT_PASSED if result.passed else EXIT_FAILED


def _validate(args: argparse.Namespace) -> int:
    from repogym.task import load_task
    from repogym.validate import validate
    from repogym.workspace import task_at

    if args.repeat < 1:
        raise UsageError(f"repogym validate: --repeat must be at least 1, not {args.repeat}")
    if args.solution is None and args.repeat > 1:
        raise UsageError("repogym validate: --repeat needs --solution")
    repo = _git.toplevel(args.directory.resolve())
    ref = args.base or default_base(repo)
    sha = _git.resolve_commit(repo, ref)
    task = load_task(args.task) if args.task else task_at(repo, sha, ref)
    result = validate(repo, base=sha, task=task, solution=args.solution, repeat=args.repeat)
    for ok, text in result.findings:
        print(f"{'ok' if ok else 'PROBLEM':<8} {text}")
    problems = sum(not ok for ok, _ in result.findings)
    print("VALID" if result.valid else f"INVALID: {problems} problem{'s' * (problems != 1)}")
    return EXIT_PASSED if result.valid else EXIT_FAILED


def _metrics(args: argparse.Namespace) -> int:
    from repogym.metrics import measure_file

    files: list[Path] = []
    for path in args.paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    problems = 0
    if not args.json:
        print(f"{'length':>6} {'complexity':>10}  location")
    for file in files:
        try:
            functions = measure_file(file, file.as_posix())
        except SyntaxError as error:
            print(
                f"repogym: {file}:{error.lineno or 1}: does not parse: {error.msg}", file=sys.stderr
            )
            problems += 1
            continue
        except OSError as error:
            print(f"repogym: {file}: cannot read: {error.strerror}", file=sys.stderr)
            problems += 1
            continue
        for f in functions:
            if args.json:
                row = {
                    "path": f.path,
                    "line": f.line,
                    "qualname": f.qualname,
                    "length": f.length,
                    "complexity": f.complexity,
                }
                print(json.dumps(row))
            else:
                print(f"{f.length:>6} {f.complexity:>10}  {f.path}:{f.line} {f.qualname}")
    return EXIT_ERROR if problems else EXIT_PASSED


if __name__ == "__main__":
    sys.exit(main())
