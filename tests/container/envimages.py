"""Stand-ins for the public images that the environment examples' Dockerfiles start
``FROM`` (issue 20): ``node:20-bookworm-slim`` and ``golang:1.22-bookworm``.

This machine cannot pull public images, so the tests make images of those tags on the
local bookworm base (tests/support/docker.py): Node from this machine's own ``node`` binary (and
its npm), Go
from Debian's ``golang-go`` (1.19) with Debian's ``gotestsum`` on the ``PATH``. The
examples' Go code keeps to Go 1.19 for that, and the Go example's Dockerfile installs
gotestsum only when the image has none, so on the stand-in it downloads nothing.

A tag the engine already has is never replaced unless it is one of these stand-ins
(label :data:`LABEL`): a real image pulled there stays what the examples run on. A
stand-in carries the key of its recipe (:data:`RECIPE`), and one with the same key is
used as it is, so each is built at most once per test run. A session removes the tags it
added by calling :func:`remove_added` at its end (the ``env_images`` fixture of
tests/conftest.py does), so that no developer's ``docker run node:20-bookworm-slim`` later
gets a stand-in. Two sessions on one engine share the stand-ins: one that ends first
removes a tag it built while the other may still be building on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
from docker.models.images import Image

from tests.support.docker import base_image

NODE = "node:20-bookworm-slim"
GO = "golang:1.22-bookworm"
LABEL = "repogym.test-standin"
RECIPE = "repogym.test-standin.recipe"
# Lines of the build's output an error shows.
TAIL = 30

# The tags this process built, which remove_added() takes away again.
_added: set[str] = set()


class StandInError(Exception):
    """A stand-in image could not be made; the message ends with the build's last lines."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Recipe:
    dockerfile: str
    files: dict[str, Path]  # name in the build context -> file on this machine
    # The build reaches the distribution's mirror through the host's network (apt-get).
    network: str | None = None

    def key(self, base_id: str) -> str:
        digest = hashlib.sha256(base_id.encode() + b"\0" + self.dockerfile.encode())
        for name, path in sorted(self.files.items()):
            digest.update(b"\0" + name.encode() + b"\0")
            with path.open("rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()[:16]


def _node_binary() -> Path:
    """This machine's Node 20: the stand-in must write the JUnit report Node 20 writes (no
    ``file`` attribute), which the example's test ids are written for."""
    found = shutil.which("node", path="/usr/bin") or shutil.which("node")
    if found is None:
        raise StandInError(f"{NODE}: no `node` on this machine to copy into the stand-in")
    binary = Path(found).resolve()
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False, timeout=60
    ).stdout.strip()
    if not version.startswith("v20."):
        raise StandInError(
            f"{NODE}: {binary} is Node {version or '(no version)'}, not 20: install Node 20, "
            "whose JUnit report the example's test ids are written for"
        )
    return binary


def _npm_tarball(binary: Path) -> Path:
    """This machine's npm (the one beside its Node) as a tar file that is the same bytes
    whenever npm is the same: owners and times left out, so the recipe's key holds."""
    found = Path(shutil.which("npm", path=str(binary.parent)) or shutil.which("npm") or "npm")
    package = found.resolve().parent.parent  # .../node_modules/npm/bin/npm-cli.js
    if not (package / "package.json").is_file():
        raise StandInError(f"{NODE}: no npm beside {binary} to copy into the stand-in")
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    tarball = Path(tempfile.gettempdir()) / f"repogym-standin-npm-{digest.hexdigest()[:16]}.tar"
    if not tarball.is_file():

        def plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            return info

        partial = tarball.with_suffix(f".{os.getpid()}.part")
        with tarfile.open(partial, "w") as archive:
            archive.add(package, arcname="npm", filter=plain)
        partial.replace(tarball)
    return tarball


def _node_recipe(base: str) -> _Recipe:
    # The binary needs only glibc, libstdc++ and libgcc (`ldd`), all in the base, whose
    # glibc (2.36) is newer than the 2.28 Node's own builds require; the RUN proves it runs.
    # npm too, as the image it stands in for has (`npm test` tasks, issue 44).
    binary = _node_binary()
    dockerfile = (
        f"FROM {base}\nCOPY node /usr/local/bin/node\n"
        "ADD npm.tar /usr/local/lib/node_modules/\n"
        "RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm"
        " && node --version && npm --version\n"
        'CMD ["node"]\n'
    )
    return _Recipe(dockerfile=dockerfile, files={"node": binary, "npm.tar": _npm_tarball(binary)})


def _go_recipe(base: str) -> _Recipe:
    # As the official image: GOPATH /go (world-writable) with /go/bin on the PATH, and
    # GOTOOLCHAIN=local. Debian's gotestsum is in /usr/bin, so the example's
    # `command -v gotestsum || go install ...` downloads nothing.
    dockerfile = (
        f"FROM {base}\n"
        "RUN apt-get update -qq"
        " && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
        " golang-go gotestsum >/dev/null"
        " && rm -rf /var/lib/apt/lists/*\n"
        "ENV GOPATH=/go GOTOOLCHAIN=local"
        " PATH=/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        "RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go && go version && gotestsum --version\n"
        "WORKDIR /go\n"
    )
    return _Recipe(dockerfile=dockerfile, files={}, network="host")


_RECIPES: dict[str, Callable[[str], _Recipe]] = {NODE: _node_recipe, GO: _go_recipe}


def ensure(client: docker.DockerClient, tags: Iterable[str] = (NODE, GO)) -> list[str]:
    """Make sure the engine has an image of each tag: the one it has if it is real or a
    stand-in of the same recipe, else a stand-in built now. The tags, in order."""
    base = base_image()
    base_id = client.images.get(base).id
    for tag in tags:
        recipe = _RECIPES[tag](base)
        key = recipe.key(base_id)
        labels = _labels(client, tag)
        if labels is not None and (labels.get(LABEL) != "1" or labels.get(RECIPE) == key):
            continue
        _build(client, tag, recipe, key)
        _added.add(tag)
    return list(tags)


def remove_added(client: docker.DockerClient) -> None:
    """Remove the tags this process built, if each is still a stand-in (not a real image
    pulled under that tag meanwhile). Call it once at the end of the test session."""
    for tag in sorted(_added):
        labels = _labels(client, tag)
        if labels is not None and labels.get(LABEL) == "1":
            # Still used by a container of another session: the next run reuses it.
            with contextlib.suppress(docker.errors.APIError):
                client.images.remove(tag)
        _added.discard(tag)


def _labels(client: docker.DockerClient, tag: str) -> dict[str, str] | None:
    """The labels of the engine's image of ``tag``; None when it has none of that tag."""
    try:
        image: Image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return dict(image.labels or {})


def _build(client: docker.DockerClient, tag: str, recipe: _Recipe, key: str) -> None:
    with tempfile.TemporaryDirectory(prefix="repogym-standin-") as context:
        root = Path(context)
        (root / "Dockerfile").write_text(recipe.dockerfile)
        for name, source in recipe.files.items():
            shutil.copy2(source, root / name)
        try:
            client.images.build(
                path=context,
                tag=tag,
                labels={LABEL: "1", RECIPE: key},
                network_mode=recipe.network,
                rm=True,
                forcerm=True,
            )
        except docker.errors.BuildError as error:
            raise StandInError(
                f"building the stand-in {tag} failed: {error.msg}\n" + build_tail(error.build_log)
            ) from None
        except docker.errors.APIError as error:
            raise StandInError(f"building the stand-in {tag} failed: {error}") from None


def build_tail(log: Iterable[dict[str, object]], lines: int = TAIL) -> str:
    """The last ``lines`` lines of a build's JSON log, as the engine printed them."""
    text = "".join(
        str(entry.get("stream") or entry.get("error") or "")
        for entry in log
        if isinstance(entry, dict)
    )
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])
