"""The release's small logic, run by .github/workflows/release.yml (issue 11).

``check`` makes sure a tag may be released: the tag is ``vX.Y.Z`` and X.Y.Z is the
package's version in pyproject.toml, the version of the installed package
(``repogym.__version__``, with ``--installed``) and the Dockerfile's
``org.opencontainers.image.version`` label when it states one. It prints the step outputs
the later jobs use (``version``, ``major``, ``minor``, ``image``) as ``name=value`` lines.

``pin`` rewrites action.yml so that the Action runs the prebuilt image by its digest,
``docker://IMAGE:X.Y.Z@sha256:...`` (the digest build-push-action gave; the tag is there
for a reader, the digest is what is pulled) instead of building the Dockerfile: the
commit the ``vX`` and ``vX.Y`` tags are moved to, so that ``uses: OWNER/repogym-action@v1``
starts without a build, and whoever pins that commit runs exactly the image built for it,
whatever is pushed to the tag later (issue 19). Only that one line changes; everything
else in action.yml stays byte for byte.

Every failure is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the dev extra installs tomli on 3.10
    import tomli as tomllib  # type: ignore[import-not-found]

import yaml

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "ghcr.io"
TAG = re.compile(r"v(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)")
# `runs.image` on main: the Action builds its Dockerfile (tests/action/test_action_yml.py).
IMAGE_LINE = re.compile(r"^(?P<indent>[ \t]+)image:[ \t]*[\"']?Dockerfile[\"']?[ \t]*$", re.M)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
VERSION_LABEL = re.compile(
    r"org\.opencontainers\.image\.version\s*=\s*(?P<quote>[\"']?)(?P<value>[^\s\"'\\]+)(?P=quote)"
)


class ReleaseError(Exception):
    """A reason the release cannot go on, as one line."""


def tag_version(tag: str) -> str:
    """``X.Y.Z`` of a tag ``vX.Y.Z`` (a ref such as ``refs/tags/vX.Y.Z`` is accepted)."""
    name = tag.removeprefix("refs/tags/")
    if not TAG.fullmatch(name):
        raise ReleaseError(
            f"tag {name!r} is not vX.Y.Z (three numbers, no suffix): tag the release e.g. v1.2.3"
        )
    return name[1:]


def package_version(root: Path) -> str:
    """``project.version`` of ``root/pyproject.toml``."""
    path = root / "pyproject.toml"
    try:
        version = tomllib.loads(path.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        raise ReleaseError(f"{path}: no readable `project.version` ({error})") from None
    if not isinstance(version, str):
        raise ReleaseError(f"{path}: `project.version` is not a string")
    return version


def dockerfile_version(root: Path) -> str | None:
    """The Dockerfile's literal ``org.opencontainers.image.version`` label; None when there
    is no Dockerfile, no such label, or one the build fills in (``$VERSION``)."""
    path = root / "Dockerfile"
    if not path.is_file():
        return None
    match = VERSION_LABEL.search(path.read_text(encoding="utf-8"))
    if match is None or "$" in match.group("value"):
        return None
    return match.group("value")


def installed_version() -> str:
    """``repogym.__version__`` of the package this Python imports."""
    try:
        import repogym
    except ImportError as error:
        raise ReleaseError(f"repogym is not installed ({error}): `pip install .` first") from None
    return str(repogym.__version__)


def check(tag: str, root: Path, *, installed: bool) -> str:
    """The version to release: the tag's, once every other statement of it agrees."""
    version = tag_version(tag)
    stated = {"pyproject.toml `project.version`": package_version(root)}
    label = dockerfile_version(root)
    if label is not None:
        stated["the Dockerfile's org.opencontainers.image.version label"] = label
    if installed:
        stated["the installed package (repogym.__version__)"] = installed_version()
    for where, value in stated.items():
        if value != version:
            raise ReleaseError(
                f"tag v{version} does not match {where} ({value}): set it to {version} "
                "and tag again, or tag the version it states"
            )
    return version


def image_name(repository: str) -> str:
    """The image's name in GitHub's container registry, which takes lower case only."""
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
        raise ReleaseError(f"repository {repository!r} is not owner/name (GITHUB_REPOSITORY)")
    return f"{REGISTRY}/{repository.lower()}"


def pin(action: Path, image: str, version: str, digest: str) -> str:
    """Rewrite ``runs.image`` of ``action`` to ``docker://IMAGE:VERSION@DIGEST``; the new
    value."""
    if not DIGEST.fullmatch(digest):
        raise ReleaseError(
            f"digest {digest!r} is not sha256: and 64 hex digits: pass the `digest` output "
            "of the step that pushed the image"
        )
    text = action.read_text(encoding="utf-8")
    matches = IMAGE_LINE.findall(text)
    if len(matches) != 1:
        raise ReleaseError(
            f"{action}: expected one line `image: Dockerfile` (runs.image), found "
            f"{len(matches)}: release from a commit whose Action builds its Dockerfile"
        )
    reference = f"docker://{image}:{version}@{digest}"
    pinned = IMAGE_LINE.sub(lambda m: f"{m.group('indent')}image: {reference}", text)
    runs = yaml.safe_load(pinned).get("runs", {})
    if runs != {"using": "docker", "image": reference}:
        raise ReleaseError(f"{action}: `runs` would be {runs!r}, not the image {reference}")
    action.write_text(pinned, encoding="utf-8")
    return reference


def outputs(version: str, image: str) -> str:
    """The step outputs of ``check``, as GITHUB_OUTPUT takes them."""
    major, minor, _ = version.split(".")
    return f"version={version}\nmajor=v{major}\nminor=v{major}.{minor}\nimage={image}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prepare.py", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this)")
    commands = parser.add_subparsers(dest="command", required=True)
    checking = commands.add_parser("check", help="the tag agrees with every stated version")
    checking.add_argument("tag", help="vX.Y.Z (GITHUB_REF_NAME)")
    checking.add_argument("--repository", required=True, help="owner/name (GITHUB_REPOSITORY)")
    checking.add_argument("--installed", action="store_true", help="also repogym.__version__")
    pinning = commands.add_parser("pin", help="action.yml runs the prebuilt image")
    pinning.add_argument("version", help="X.Y.Z")
    pinning.add_argument("--image", required=True, help=f"{REGISTRY}/owner/name")
    pinning.add_argument("--digest", required=True, help="sha256:... of the pushed image")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            version = check(args.tag, args.root, installed=args.installed)
            sys.stdout.write(outputs(version, image_name(args.repository)))
        else:
            version = tag_version(f"v{args.version}")
            print(pin(args.root / "action.yml", args.image, version, args.digest))
    except ReleaseError as error:
        print(f"release: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
