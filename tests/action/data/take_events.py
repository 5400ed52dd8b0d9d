"""Regenerate events/*.json: webhook payloads the Action reads from GITHUB_EVENT_PATH.

Each file is one example payload of the api.github.com webhooks in the
`@octokit/webhooks-examples` npm package, as published (tests/action/events.py puts a real test
repository's names, numbers and shas into a copy). events/README.md records the version.

    python tests/action/data/take_events.py                  # the pinned VERSION, via `npm pack`
    python tests/action/data/take_events.py --tarball octokit-webhooks-examples-7.6.1.tgz
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from trim_openapi import npm_pack

PACKAGE = "@octokit/webhooks-examples"
VERSION = "7.6.1"
EXAMPLES = "package/api.github.com/index.json"
OUTPUT = Path(__file__).with_name("events")

# file name -> (webhook, action or None): the first example of that webhook and action.
EVENTS = {
    "pull_request.opened": ("pull_request", "opened"),
    "pull_request.synchronize": ("pull_request", "synchronize"),
    "merge_group.checks_requested": ("merge_group", "checks_requested"),
    "workflow_dispatch": ("workflow_dispatch", None),
    "workflow_run.completed": ("workflow_run", "completed"),
}


def read_tarball(tarball: Path) -> tuple[str, list[dict[str, Any]]]:
    """The package's version and its list of webhooks, each with its examples."""
    with tarfile.open(tarball) as archive:
        files = {name: archive.extractfile(name) for name in ("package/package.json", EXAMPLES)}
        if None in files.values():
            raise SystemExit(f"{tarball}: no {EXAMPLES}; is it {PACKAGE}?")
        manifest, webhooks = (json.load(file) for file in files.values() if file is not None)
    return str(manifest["version"]), list(webhooks)


def example(webhooks: list[dict[str, Any]], name: str, action: str | None) -> dict[str, Any]:
    """The first example payload of webhook `name` with that `action`."""
    for webhook in webhooks:
        if webhook["name"] == name:
            for payload in webhook["examples"]:
                if payload.get("action") == action:
                    return dict(payload)
    raise SystemExit(f"{PACKAGE}: no example of {name} with action {action}")


def readme(version: str) -> str:
    lines = [
        "# Webhook payloads",
        "",
        f"Taken from `{PACKAGE}` {version} (`{EXAMPLES.removeprefix('package/')}`), the first",
        "example of each webhook and action, unchanged. Regenerate them with",
        "`python tests/action/data/take_events.py`; `tests/action/events.py` fills in a test",
        "repository's names, numbers and shas.",
        "",
        "| file | webhook | action |",
        "| --- | --- | --- |",
    ]
    for file, (name, action) in EVENTS.items():
        lines.append(f"| `{file}.json` | `{name}` | {f'`{action}`' if action else '(none)'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=VERSION, help=f"{PACKAGE} release to take from")
    parser.add_argument("--tarball", type=Path, help="a tarball already fetched with `npm pack`")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        tarball = args.tarball or npm_pack(PACKAGE, args.version, Path(temp))
        version, webhooks = read_tarball(tarball)
    args.output.mkdir(parents=True, exist_ok=True)
    for file, (name, action) in EVENTS.items():
        payload = example(webhooks, name, action)
        text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
        (args.output / f"{file}.json").write_text(text)
    (args.output / "README.md").write_text(readme(version))
    print(f"{args.output}: {len(EVENTS)} payloads from {PACKAGE}@{version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
