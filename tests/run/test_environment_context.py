"""What a ``dockerfile:`` environment is built from (issue 20): the base commit's tree,
less what its ``.dockerignore`` leaves out, digested from git; no engine needed."""

from __future__ import annotations

import pytest

from repogym.errors import EngineError
from repogym.run.image import _context, _digest
from repogym.task import parse_task
from tests.support.repo import Repo

TASK = parse_task(
    b"version: 1\ntype: bugfix\nenvironment: {dockerfile: .repogym/Dockerfile}\n"
    b"tests: {command: 'pytest --junitxml={junit}', fail_to_pass: [t.py::t]}\n"
)


def digest(repo: Repo, sha: str) -> tuple[str, list[str]]:
    entries = _context(TASK, ".repogym/Dockerfile", repo.root, sha)
    return _digest(".repogym/Dockerfile", entries), sorted(e.path for e in entries)


def test_the_dockerignore_keeps_the_digest_to_what_the_build_reads(repo: Repo) -> None:
    first = repo.commit(
        "base",
        {
            ".repogym/Dockerfile": "FROM x\nCOPY requirements.txt .\n",
            ".dockerignore": "*\n!requirements.txt\n",
            "requirements.txt": "six\n",
            "src/app.py": "print(1)\n",
        },
    )
    before, paths = digest(repo, first)
    # The engine is sent the .dockerignore and the Dockerfile whatever it says.
    assert paths == [".dockerignore", ".repogym/Dockerfile", "requirements.txt"]
    unrelated = repo.commit("code", {"src/app.py": "print(2)\n"})
    assert digest(repo, unrelated)[0] == before
    read = repo.commit("deps", {"requirements.txt": "six\nattrs\n"})
    assert digest(repo, read)[0] != before
    edited = repo.commit("dockerfile", {".repogym/Dockerfile": "FROM y\n"})
    assert digest(repo, edited)[0] not in (before, digest(repo, read)[0])


def test_without_a_dockerignore_the_whole_tree_is_the_context(repo: Repo) -> None:
    first = repo.commit("base", {".repogym/Dockerfile": "FROM x\n", "a.txt": "a\n"})
    before, paths = digest(repo, first)
    assert paths == [".repogym/Dockerfile", "a.txt"]
    assert digest(repo, repo.commit("more", {"b.txt": "b\n"}))[0] != before


def test_a_dockerfile_missing_at_the_base_is_one_line(repo: Repo) -> None:
    sha = repo.commit("base", {"a.txt": "a\n"})
    with pytest.raises(EngineError) as raised:
        _context(TASK, ".repogym/Dockerfile", repo.root, sha)
    assert raised.value.lines == (
        f".repogym.yml: `environment.dockerfile` .repogym/Dockerfile is not in the base commit "
        f"{sha[:12]}: commit it to the base branch (the pull request's copy is never used)",
    )
