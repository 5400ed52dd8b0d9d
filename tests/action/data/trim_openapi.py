"""Regenerate github-openapi.json: the part of GitHub's OpenAPI description the Action uses.

The fake GitHub API (tests/action/fake_github.py) checks every request against this file. It
is cut from the description of api.github.com in the `@octokit/openapi` npm package: only the
operations in OPERATIONS, and the components they reference, transitively. The examples are
left out (the largest part, and never read); everything else is kept as published.

    python tests/action/data/trim_openapi.py                  # the pinned VERSION, via `npm pack`
    python tests/action/data/trim_openapi.py --version 23.1.0 # another release
    python tests/action/data/trim_openapi.py --tarball octokit-openapi-23.0.2.tgz

Add an operation here first when the Action starts calling a new endpoint, then rerun.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi"
VERSION = "23.0.2"
DESCRIPTION = "package/generated/api.github.com.json"
OUTPUT = Path(__file__).with_name("github-openapi.json")

# (method, path template): every call the Action makes, and nothing else.
OPERATIONS = (
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/pulls"),  # publish mode: the pull request of a head
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),  # publish mode: .github/
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/user"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),  # PyGithub's repo.get_commit(sha)
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
)


def npm_pack(package: str, version: str, into: Path) -> Path:
    """The package's tarball, fetched with the ordinary npm client (take_events.py uses it too)."""
    done = subprocess.run(
        ["npm", "pack", f"{package}@{version}", "--pack-destination", str(into), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return into / str(json.loads(done.stdout)[0]["filename"])


def read_tarball(tarball: Path) -> tuple[str, dict[str, Any]]:
    """The package's version (from its package.json) and its description of api.github.com."""
    with tarfile.open(tarball) as archive:
        manifest = json.load(_member(archive, "package/package.json"))
        description = json.load(_member(archive, DESCRIPTION))
    return str(manifest["version"]), description


def _member(archive: tarfile.TarFile, name: str) -> Any:
    member = archive.extractfile(name)
    if member is None:
        raise SystemExit(f"{name}: not a file in the tarball; is it {PACKAGE}?")
    return member


def refs(node: Any) -> Iterator[str]:
    """Every `$ref` target under a node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def without_examples(node: Any) -> Any:
    """The node with the media types' `examples` maps left out (never read, mostly size)."""
    if isinstance(node, dict):
        return {
            key: without_examples(value)
            for key, value in node.items()
            if not (key == "examples" and isinstance(value, dict) and "schema" in node)
        }
    if isinstance(node, list):
        return [without_examples(item) for item in node]
    return node


def trim(description: dict[str, Any], version: str) -> dict[str, Any]:
    """The operations in OPERATIONS and the components they reach, in the source's order."""
    paths: dict[str, dict[str, Any]] = {}
    for method, template in OPERATIONS:
        operation = description["paths"][template][method]
        paths.setdefault(template, {})[method] = without_examples(operation)
    wanted: set[str] = set()
    pending = list(refs(paths))
    while pending:
        ref = pending.pop()
        if ref in wanted:
            continue
        wanted.add(ref)
        section, name = ref.removeprefix("#/components/").split("/", 1)
        pending.extend(refs(without_examples(description["components"][section][name])))
    components: dict[str, dict[str, Any]] = {}
    for section, entries in description["components"].items():
        for name, entry in entries.items():
            if f"#/components/{section}/{name}" in wanted:
                components.setdefault(section, {})[name] = without_examples(entry)
    return {
        "openapi": description["openapi"],
        "info": description["info"],
        "x-trimmed-from": {
            "package": PACKAGE,
            "version": version,
            "file": DESCRIPTION.removeprefix("package/"),
            "script": "tests/action/data/trim_openapi.py",
        },
        "servers": description.get("servers", []),
        "paths": paths,
        "components": components,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=VERSION, help=f"{PACKAGE} release to cut from")
    parser.add_argument("--tarball", type=Path, help="a tarball already fetched with `npm pack`")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        tarball = args.tarball or npm_pack(PACKAGE, args.version, Path(temp))
        version, description = read_tarball(tarball)
    trimmed = trim(description, version)
    args.output.write_text(json.dumps(trimmed, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.output}: {len(OPERATIONS)} operations from {PACKAGE}@{version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
