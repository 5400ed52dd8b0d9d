"""Reading the Action's log: the workflow commands it ran and the outputs it set."""

from __future__ import annotations

import re

KNOWN = {
    "error",
    "warning",
    "notice",
    "debug",
    "add-mask",
    "add-path",
    "group",
    "endgroup",
    "echo",
    "set-output",
    "set-env",
    "save-state",
    "add-matcher",
    "remove-matcher",
    "stop-commands",
}


DATA_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))


PROPERTY_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))


LEGACY_ESCAPES = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))


Command = tuple[str, dict[str, str], str]


def unescape(text: str, mappings: tuple[tuple[str, str], ...]) -> str:
    for escaped, plain in mappings:
        text = text.replace(escaped, plain)
    return text


def _parse(line: str, known: set[str]) -> tuple[Command, bool] | None:
    """The command on one line and whether it is in the old ``##[`` syntax: the runner
    tries ``::`` first, then ``##[`` anywhere in the line."""
    stripped = line.lstrip()
    if stripped.startswith("::") and (end := stripped.find("::", 2)) >= 0:
        info, data, sep, escapes = stripped[2:end], stripped[end + 2 :], ",", PROPERTY_ESCAPES
        data_escapes, legacy = DATA_ESCAPES, False
        if info.partition(" ")[0].lower() not in known:  # not one: the old syntax is tried
            return _legacy(line, known)
    elif (start := line.find("##[")) >= 0 and (end := line.find("]", start)) >= 0:
        info, data, sep, escapes = line[start + 3 : end], line[end + 1 :], ";", LEGACY_ESCAPES
        data_escapes, legacy = LEGACY_ESCAPES, True
    else:
        return None
    name, _, props = info.partition(" ")
    if name.lower() not in known:
        return None
    properties = {}
    for pair in filter(None, props.strip().split(sep)):
        key, _, value = pair.partition("=")
        if key and value:
            properties[key] = unescape(value, escapes)
    return (name.lower(), properties, unescape(data, data_escapes)), legacy


def _legacy(line: str, known: set[str]) -> tuple[Command, bool] | None:
    """The line read in the old syntax only."""
    start = line.find("##[")
    return _parse(line[start:], known) if start >= 0 else None


def run_log(log: str) -> list[Command]:
    """The commands the runner runs for what a step printed, in order."""
    return [command for command, _ in commands_run(log)]


def commands_run(log: str) -> list[tuple[Command, bool]]:
    """Each command the runner runs for what a step printed, in order, and whether it was
    written in the old ``##[name ...]`` syntax, which the runner finds anywhere in a line."""
    known, stop_token, done = set(KNOWN), None, []
    for line in re.split(r"\r\n|\r|\n", log):
        parsed = _parse(line, known)
        if parsed is None:
            continue
        command, _ = parsed
        name, _, data = command
        if stop_token is not None:
            if name == stop_token.lower():
                known.discard(stop_token.lower())
                stop_token = None
                done.append(parsed)
            continue
        if name == "stop-commands":
            assert data and data.lower() not in known, "the runner refuses this token"
            stop_token = data
            known.add(data.lower())
        done.append(parsed)
    return done


def read_outputs(text: str) -> dict[str, str]:
    """``GITHUB_OUTPUT`` as the runner reads it (lines end at LF on Linux)."""
    outputs, lines, index = {}, text.split("\n"), 0
    if lines and lines[-1] == "":
        lines.pop()
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            name, value = line.split("=", 1)
        else:
            assert heredoc >= 0, f"invalid line {line!r}"
            name, delimiter = line.split("<<", 1)
            assert name and delimiter
            value_lines = []
            while lines[index] != delimiter:  # IndexError: the delimiter is missing
                value_lines.append(lines[index])
                index += 1
            index += 1
            value = "\n".join(value_lines)
        outputs[name] = value
    return outputs
