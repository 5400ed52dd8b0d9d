"""A job line is data (issue 44): a ``repo`` that git would read as an option, or that
names a remote helper (which runs a command), is refused by name in ``repogym batch``
and ``repogym validate --tasks`` before git sees it. Before, ``"repo":
"--upload-pack=CMD"`` ran CMD as the grader (root) in both, and in the batch's first
fetch, the one that reads whether a task times a benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.batch import sources
from tests.support.batching import lines_of, run_repogym

HOSTILE = {
    "option": "--upload-pack=touch {mark};false",
    "option of fetch": "--upload-pack=touch {mark}",
    "remote helper": "ext::sh -c touch% {mark}",
    "descriptor helper": "fd::0",
}
EXPECTED = {
    "option": "starts with '-', which git would read as an option",
    "option of fetch": "starts with '-', which git would read as an option",
    "remote helper": "names a remote helper (ext::), which runs a command",
    "descriptor helper": "names a remote helper (fd::), which runs a command",
}


@pytest.mark.parametrize("command", ["batch", "validate"])
def test_a_repo_is_never_an_option_or_a_command(tmp_path: Path, command: str) -> None:
    mark = tmp_path / "ran"
    lines = [
        {"repo": repo.format(mark=mark), "base": "main", "id": name}
        | ({"ref": "main"} if command == "batch" else {})
        for name, repo in HOSTILE.items()
    ]
    file = tmp_path / "lines.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = tmp_path / "out.jsonl"
    args = [file] if command == "batch" else ["--tasks", file]
    done = run_repogym(command, *args, "--output", output)
    assert not mark.exists(), "git ran the line's command"
    assert done.returncode == 1, done.stdout + done.stderr
    by_id = lines_of(output)
    for name, said in EXPECTED.items():
        number = list(HOSTILE).index(name) + 1
        message = by_id[name]["error"]["message"]
        assert message.startswith(f"line {number}: `repo`: "), message
        assert said in message


def test_the_fetch_itself_refuses_them(tmp_path: Path) -> None:
    """Beneath the lines' check, the one place that fetches refuses the same values, and
    holds git to its own transports (GIT_ALLOW_PROTOCOL)."""
    mark = tmp_path / "ran"
    for n, repo in enumerate(HOSTILE.values()):
        clone = tmp_path / f"clone-{n}"
        with pytest.raises(ValueError, match=r"option|remote helper"):
            sources.private_clone(repo.format(mark=mark), str(tmp_path), ("main",), clone)
    assert not mark.exists()
