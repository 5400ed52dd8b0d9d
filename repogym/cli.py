"""The ``repogym`` command: ``grade``, ``validate``, ``metrics``, ``demo``, ``batch``.

Exit codes: 0 passed (or done), 1 graded and not passed, 2 a usage, task or workspace
error, printed as one line per problem and never as a traceback, 3 an error that is not
the user's (a bug, a broken repository, a full disk): one line saying what failed and
where the traceback was written (a file under the temporary directory, or stderr with
``REPOGYM_DEBUG=1``). A signal stops the
command with 128 + its number, 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP,
after every ``finally`` has run: the work tree holds the submission's files again, the
commands it started are killed and its temporary files removed. A closed stdout (``| head``)
stops it quietly with 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn

from repogym import __version__
from repogym._demo import run_demo
from repogym.batch import command as _batch
from repogym.errors import ExitCode, RepogymError, UsageError, exit_code
from repogym.grading import default_base, grade
from repogym.metrics import measure_file, measuring_many
from repogym.report.build import exception_report, report_dict, text_table, to_json
from repogym.report.outputs import output_problems, write_outputs
from repogym.report.render import render
from repogym.sandbox.process import (
    Interrupted,
    discard_stdout,
    internal_error_line,
    lenient_streams,
    signals_interrupt,
)
from repogym.shown import counted
from repogym.tree import git as _git
from repogym.validate import validate

_COMMANDS = ("grade", "validate", "metrics", "demo", "batch")


class _Output(NamedTuple):
    option: str
    example: str  # a file name to suggest in errors
    label: str  # how the line that says where it went begins


_OUTPUTS = {
    "json": _Output("--json", "report.json", "JSON report"),
    "markdown": _Output("--markdown", "summary.md", "Markdown summary"),
}


_HIDDEN_HELP = (
    "a directory of hidden tests from outside the repository, at the paths they take in "
    "it (replaces tests.hidden)"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # The line already starts "repogym: error: "; the command is named in the hint
        # (issue 19: not "repogym: error: repogym: ...").
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="repogym", description="Grade a code change against a task.")
    parser.add_argument("--version", action="version", version=f"repogym {__version__}")
    # Not required: no command at all gets a line of its own (run_command).
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    _grade_options(commands.add_parser("grade", help="grade the work tree against a base branch"))
    _validate_options(
        commands.add_parser(
            "validate",
            help="check that a task (or each of a file's, --tasks) is sound: static checks, "
            "empty submission, solution",
        )
    )
    _metrics_options(
        commands.add_parser("metrics", help="length and complexity of every Python function")
    )
    demo = commands.add_parser(
        "demo", help="grade the bundled example tasks in a temporary repository"
    )
    demo.add_argument("--keep", action="store_true", help="keep the temporary repository")
    _batch.add_options(
        commands.add_parser(
            "batch", help="grade many jobs of a JSON Lines file", epilog=_batch.BATCH_EXITS
        )
    )
    return parser


def _grade_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base",
        metavar="REF",
        help="base branch or commit (default: the remote's default branch, else main or master)",
    )
    parser.add_argument(
        "--task", metavar="FILE", type=Path, help="task file to use instead of .repogym.yml at REF"
    )
    parser.add_argument("--hidden", metavar="DIR", help=_HIDDEN_HELP)
    # Strings, not Paths: Path("") is ".", and an empty --json must be named as such.
    parser.add_argument(
        "--json", metavar="OUT", help="write the JSON report here (missing directories are made)"
    )
    parser.add_argument(
        "--markdown",
        metavar="OUT",
        help="write the Markdown the GitHub Action posts as its comment here (missing "
        "directories are made)",
    )
    parser.add_argument(
        "-C",
        dest="directory",
        metavar="DIR",
        type=Path,
        default=Path(),
        help="the work tree (default: the current directory)",
    )


def _validate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base", metavar="REF", help="the task's base commit (default: as for grade)"
    )
    parser.add_argument(
        "--task", metavar="FILE", type=Path, help="task file instead of .repogym.yml at REF"
    )
    parser.add_argument("--hidden", metavar="DIR", help=_HIDDEN_HELP)
    parser.add_argument(
        "--solution",
        metavar="REF_OR_PATCH",
        help="a reference solution: a branch, tag or commit, or a patch file to apply to REF",
    )
    parser.add_argument(
        "--repeat", metavar="N", type=int, help="grade the solution N times (flakiness)"
    )
    parser.add_argument(
        "-C", dest="directory", metavar="DIR", type=Path, help="the repository (default: here)"
    )
    _batch.add_validate_options(parser)


def _metrics_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", type=Path, help="Python files or directories"
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit code. Signal handlers and the streams' error handling
    are changed while it runs and put back afterwards (tests call it in-process)."""
    with signals_interrupt(), lenient_streams():
        try:
            try:
                return run_command(argv)
            except KeyboardInterrupt as error:  # Interrupted included
                signum: int = error.signum if isinstance(error, Interrupted) else signal.SIGINT
                name = signal.Signals(signum).name
                print(
                    f"repogym: interrupted by {name}: stopped early, with the work tree as "
                    "it was and temporary files removed",
                    file=sys.stderr,
                )
                return exit_code(error)
            finally:
                # --help and --version included: a closed pipe must show here, where it
                # is caught, not in the interpreter's last flush.
                sys.stdout.flush()
        except BrokenPipeError:
            # Whoever reads stdout is gone (`repogym metrics . | head -1`): stop quietly.
            discard_stdout()
            return ExitCode.SIGNAL + signal.SIGPIPE


def run_command(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; errors are printed as one line each (exit 2).

    Interrupts and a closed stdout are left to :func:`main`, so a caller that runs
    several commands (``repogym demo``) stops at the first.
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            names = ", ".join(_COMMANDS)
            raise UsageError(
                f"no command given: run `repogym COMMAND` with one of {names} "
                "(see `repogym --help`)"
            )
        if args.command == "grade":
            return _grade(args)
        if args.command == "metrics":
            return _metrics(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "batch":
            return _batch.run(args)
        return _demo(args)
    except RepogymError as error:
        for line in error.lines:
            print(f"repogym: error: {line}", file=sys.stderr)
        return exit_code(error)
    except BrokenPipeError:
        raise  # main() ends quietly
    except Exception as error:  # not the user's: exit 3, the traceback kept for a report
        print(f"repogym: internal error: {internal_error_line(error)}", file=sys.stderr)
        return exit_code(error)


def _grade(args: argparse.Namespace) -> int:
    tree = _graded_tree(args.directory)
    outputs = _output_paths(args, tree)  # before grading, which may take minutes
    try:
        # The reports go to these paths: a report a run before wrote there is not the
        # submission's (issue 19).
        grading = grade(
            args.directory,
            base=args.base,
            task=args.task,
            hidden=args.hidden,
            outputs=[path for _, path in outputs],
        )
    except Exception as error:
        # A report that says why there is no grade, so that no reader finds a stale one.
        report = exception_report(error)
        _write(
            outputs,
            {"json": lambda: to_json(report), "markdown": lambda: render(report, "comment.md.j2")},
            tree,
        )
        raise
    result = grading.result
    for warning in (grading.environment or {}).get("warnings", []):
        print(f"repogym: warning: {warning}", file=sys.stderr)
    report = report_dict(grading)
    texts = {
        "json": lambda: to_json(report),
        "markdown": lambda: render(report, "comment.md.j2"),
    }
    # Every output is rendered, then all are written, before anything is printed: a
    # closed stdout must not cost the reports, nor a bad path the table.
    problem = _write(outputs, texts, tree)
    print(text_table(result), end="")
    if problem is not None:
        raise UsageError(problem)
    for key, path in outputs:
        print(f"{_OUTPUTS[key].label}: {path}")
    return ExitCode.PASSED if result.passed else ExitCode.FAILED


def _write(
    outputs: list[tuple[str, str]], texts: dict[str, Callable[[], str]], tree: Path
) -> str | None:
    """Write the outputs that ``texts`` can render, every one or none; the problem."""
    chosen = [(_OUTPUTS[key].option, path, texts[key]()) for key, path in outputs if key in texts]
    return write_outputs(chosen, tree=tree)


def _graded_tree(directory: Path) -> Path:
    """The work tree ``-C`` names: its repository's top level, or the directory itself
    when it is in none (grading then says so)."""
    try:
        return _git.toplevel(directory.resolve())
    except RepogymError:
        return directory.resolve()


def _output_paths(args: argparse.Namespace, tree: Path) -> list[tuple[str, str]]:
    """The outputs asked for, as (key, path); a UsageError naming each that could not
    be written, and how to fix it. A symlink of the graded ``tree`` on the way to a path
    refuses it: the submission may have committed it (issue 9)."""
    outputs = [(key, getattr(args, key)) for key in _OUTPUTS if getattr(args, key) is not None]
    problems = output_problems(
        [(_OUTPUTS[k].option, path, _OUTPUTS[k].example) for k, path in outputs], tree=tree
    )
    if problems:
        raise UsageError(*problems)
    return outputs


def _validate(args: argparse.Namespace) -> int:
    if args.tasks is not None:
        return _batch.run_validations(args)
    _batch.check_no_run_options(args)
    return _validate_one(args)


def _validate_one(args: argparse.Namespace) -> int:
    repeat = 1 if args.repeat is None else args.repeat
    if repeat < 1:
        raise UsageError(f"repogym validate: --repeat must be at least 1, not {repeat}")
    if args.solution is None and repeat > 1:
        raise UsageError("repogym validate: --repeat needs --solution")
    repo = _git.toplevel((args.directory or Path()).resolve())
    ref = args.base or default_base(repo)
    result = validate(
        repo,
        base=ref,
        task=args.task,
        solution=args.solution,
        repeat=repeat,
        hidden=args.hidden,
    )
    for ok, text in result.findings:
        print(f"{'ok' if ok else 'PROBLEM':<8} {text}")
    problems = sum(not ok for ok, _ in result.findings)
    print("VALID" if result.valid else f"INVALID: {counted(problems, 'problem')}")
    return ExitCode.PASSED if result.valid else ExitCode.FAILED


def _metrics(args: argparse.Namespace) -> int:
    files: list[Path] = []
    for path in args.paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    if not args.json:
        print(f"{'length':>6} {'complexity':>10}  location")
    with measuring_many():
        problems = sum(not _print_metrics(file, json_lines=args.json) for file in files)
    return ExitCode.ERROR if problems else ExitCode.PASSED


def _print_metrics(file: Path, *, json_lines: bool) -> bool:
    """Print the measures of ``file``'s functions; False, with the problem on stderr,
    when it cannot be read or does not parse."""
    try:
        functions = measure_file(file, file.as_posix())
    except SyntaxError as error:  # too deep a nesting included
        print(f"repogym: {file}:{error.lineno or 1}: does not parse: {error.msg}", file=sys.stderr)
        return False
    except OSError as error:
        print(f"repogym: {file}: cannot read: {error.strerror}", file=sys.stderr)
        return False
    for f in functions:
        if json_lines:
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
    return True


def _demo(args: argparse.Namespace) -> int:
    """Grade every example's reference solution (repogym._demo.run_demo)."""
    return run_demo(keep=args.keep, grade=run_command)


if __name__ == "__main__":
    sys.exit(main())
