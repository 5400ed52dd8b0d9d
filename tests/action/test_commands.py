"""Workflow commands and file commands, read back the way the runner reads them.

``run_log`` and ``read_outputs`` follow the runner's documented formats (actions/runner:
a command line is ``::name k=v,k=v::data`` after leading blanks, or ``##[name k=v;...]data``
anywhere in a line; escapes undone in a fixed order; ``stop-commands`` pauses every
command but the one named by its token; ``GITHUB_OUTPUT`` holds ``NAME=VALUE`` lines and
``NAME<<DELIMITER`` blocks ending at a line that is exactly the delimiter)."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from repogym.shown import show_undecodable
from repogym_action import commands
from repogym_action.commands import (
    SUMMARY_LIMIT,
    Commands,
    append_summary,
    escape_data,
    escape_property,
    inert,
    write_outputs,
)
from tests.action.logs import (
    DATA_ESCAPES,
    PROPERTY_ESCAPES,
    Command,
    _parse,
    commands_run,
    read_outputs,
    run_log,
    unescape,
)


def parse_line(line: str, known: set[str]) -> Command | None:
    """The command on one line of the log, if the runner sees one."""
    parsed = _parse(line, known)
    return parsed[0] if parsed else None


def printed(act: object) -> str:
    stream = io.StringIO()
    act(Commands(stream))  # type: ignore[operator]
    return stream.getvalue()


TRICKY = "50% done: a, b::c\r\nnext %0A %25 %3A line\nlast"


def test_escaping_round_trips_through_the_runners_unescaping() -> None:
    assert unescape(escape_data(TRICKY), DATA_ESCAPES) == TRICKY
    assert unescape(escape_property(TRICKY), PROPERTY_ESCAPES) == TRICKY
    assert "\n" not in escape_data(TRICKY) and "\r" not in escape_data(TRICKY)
    assert not {":", ","} & set(escape_property(TRICKY))


def test_an_annotation_keeps_its_message_and_properties() -> None:
    log = printed(lambda c: c.error(TRICKY, title="tests: a, b", file="src/a,b.py", line=12))
    assert log.count("\n") == 1
    assert run_log(log) == [
        ("error", {"title": "tests: a, b", "file": "src/a,b.py", "line": "12"}, TRICKY)
    ]


def test_warning_and_notice_without_properties() -> None:
    log = printed(lambda c: (c.warning("w"), c.notice("n", line=3)))
    assert log == "::warning::w\n::notice::n\n"  # a line without a file is left out
    assert run_log(log) == [("warning", {}, "w"), ("notice", {}, "n")]


def test_masking_covers_the_value_and_each_line() -> None:
    log = printed(lambda c: c.mask("first-secret\n  second-secret \n\n"))
    assert [data for name, _, data in run_log(log) if name == "add-mask"] == [
        "first-secret\n  second-secret",
        "first-secret",
        "second-secret",
    ]
    assert printed(lambda c: c.mask("  \n")) == ""


def test_a_group_is_closed_even_on_an_exception() -> None:
    stream = io.StringIO()
    out = Commands(stream)
    with pytest.raises(RuntimeError), out.group("tests: 3 commands"):
        out.line("running")
        raise RuntimeError("boom")
    assert run_log(stream.getvalue()) == [
        ("group", {}, "tests: 3 commands"),
        ("endgroup", {}, ""),
    ]
    assert "running\n" in stream.getvalue()


def test_groups_do_not_nest() -> None:
    stream = io.StringIO()
    out = Commands(stream)
    with out.group("outer"), out.group("inner"):
        pass
    assert stream.getvalue() == "::group::outer\ninner\n::endgroup::\n"


HOSTILE = (
    "::error::x\n"
    "  ::add-mask::y\n"
    "::set-output name=score::1.0\n"
    "progress ##[warning]z\r"
    "::stop-commands::abc\n"
    "::abc::\n"
    "::error file=a.py,line=1::forged"
)


def test_untrusted_text_runs_no_command() -> None:
    log = printed(lambda c: (c.untrusted(HOSTILE), c.error("ours")))
    done = run_log(log)
    token = done[0][2]
    assert re.fullmatch(r"[0-9a-f]{32}", token) and token not in HOSTILE
    assert done == [("stop-commands", {}, token), (token, {}, ""), ("error", {}, "ours")]
    assert HOSTILE in log  # shown in full, only inert


def test_the_same_text_printed_raw_would_run_commands() -> None:
    names = [name for name, _, _ in run_log(HOSTILE)]
    # The submission's own stop-commands is no shield: it knows its token and resumes.
    assert names == ["error", "add-mask", "set-output", "warning", "stop-commands", "abc", "error"]


LEGACY = "at 50% ##[warning]w\n ##[set-output name=passed;]true\r::add-mask::m"


@pytest.mark.parametrize("text", [HOSTILE, LEGACY, "##[##[error]e]", "\u3000::error::x"])
def test_a_line_of_ours_quoting_any_text_runs_no_command(text: str) -> None:
    """Issue 19: a line we write quotes a report's summary, git, an exception; every one
    of its lines is inert in both syntaxes, and reads the same to a reader."""
    log = printed(lambda c: c.line(f"summary: {text}"))
    assert run_log(log) == []
    assert log.replace("\u200b", "") == f"summary: {text}\n"
    assert run_log(printed(lambda c: c.line(text))) == []


@pytest.mark.parametrize("act", ["error", "warning", "notice", "group"])
def test_an_annotation_or_a_title_quoting_any_text_is_one_command(act: str) -> None:
    def write(c: Commands) -> None:
        if act == "group":
            with c.group(LEGACY):
                pass
        else:
            getattr(c, act)(LEGACY, title=f"t {LEGACY}", file="a.py", line=1)

    [((name, properties, data), legacy), *rest] = commands_run(printed(write))
    assert name == act and not legacy and data.replace("\u200b", "") == LEGACY
    assert [command for command, _ in rest] in ([], [("endgroup", {}, "")])
    if act != "group":
        assert properties["title"].replace("\u200b", "") == f"t {LEGACY}"


def test_an_undecodable_byte_of_a_file_name_is_shown_escaped() -> None:
    name = "src/caf\udce9.py"  # os.fsdecode(b"src/caf\xe9.py")
    assert printed(lambda c: (c.line(name), c.error(name))) == (
        "src/caf\\xe9.py\n::error::src/caf\\xe9.py\n"
    )


@pytest.mark.parametrize("text", ["caf\udce9", "\udc80\udcff\ud800x", "plain"])
def test_undecodable_bytes_are_shown_as_the_reports_show_them(text: str) -> None:
    assert inert(text) == show_undecodable(text)


def test_a_value_to_mask_is_kept_exact() -> None:
    assert run_log(printed(lambda c: c.mask("s##[x]::y"))) == [("add-mask", {}, "s##[x]::y")]


def test_each_untrusted_text_has_its_own_token() -> None:
    first, second = (run_log(printed(lambda c: c.untrusted("x")))[0][2] for _ in range(2))
    assert first != second
    assert printed(lambda c: c.untrusted("")) == ""


def test_the_standard_output_is_looked_up_at_each_write(capsys: pytest.CaptureFixture[str]) -> None:
    Commands().notice("to the captured stdout")
    assert capsys.readouterr().out == "::notice::to the captured stdout\n"


VALUES = {
    "score": "0.875",
    "passed": "false",
    "summary": "FAIL 0.875 (constraints=1.00✓(gate), tests=0.75✗)",
    "report": "/github/runner_temp/repogym-report.json",
    "multi": "line one\nline two\r\n\nEOF\n",
    "empty": "",
    "equals": "a=b<<c",
}


def test_outputs_read_back_as_the_runner_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "set_output"
    path.write_text("before=kept\n")
    write_outputs(path, VALUES)
    write_outputs(path, {"check-url": "https://github.com/o/r/runs/1"})
    assert read_outputs(path.read_bytes().decode("utf-8")) == {
        "before": "kept",
        **VALUES,
        "check-url": "https://github.com/o/r/runs/1",
    }


def test_a_value_holding_the_delimiter_gets_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = iter(["0" * 32, "0" * 32, "1" * 32])
    monkeypatch.setattr(commands, "_token", lambda: next(draws))
    value = f"a\nghadelimiter_{'0' * 32}\nb"
    path = tmp_path / "set_output"
    write_outputs(path, {"text": value})
    assert read_outputs(path.read_bytes().decode("utf-8")) == {"text": value}
    assert f"text<<ghadelimiter_{'1' * 32}\n" in path.read_text()


def test_the_outputs_of_one_call_are_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    real_write = os.write

    def counting(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting)
    write_outputs(tmp_path / "out", VALUES)
    monkeypatch.undo()
    assert writes == [(tmp_path / "out").stat().st_size]


def test_no_output_file_no_outputs(tmp_path: Path) -> None:
    write_outputs(None, VALUES)
    assert append_summary(None, "# x") is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "a=b", "a<<b", "a\nb"])
def test_a_name_the_file_cannot_hold_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be written to GITHUB_OUTPUT"):
        write_outputs(tmp_path / "out", {name: "v"})
    assert not (tmp_path / "out").exists()


def test_the_job_summary_is_appended(tmp_path: Path) -> None:
    path = tmp_path / "step_summary"
    assert append_summary(path, "# First")
    assert append_summary(path, "second ✓\n")
    assert path.read_text(encoding="utf-8") == "# First\nsecond ✓\n"


def test_a_summary_over_the_runners_limit_is_left_out_with_a_line(tmp_path: Path) -> None:
    path = tmp_path / "step_summary"
    append_summary(path, "kept\n")
    assert append_summary(path, "x" * SUMMARY_LIMIT) is False
    text = path.read_text()
    assert text.startswith("kept\n") and "left out" in text
    assert path.stat().st_size < SUMMARY_LIMIT
