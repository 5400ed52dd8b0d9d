"""Benchmark: the Action's image (issue 11), against its own base in the same run.

1. **Size**: what the image adds to ``BASE_IMAGE`` (the image's size less the base's, as
   ``docker image inspect`` counts them), layer by layer. Target: under 60 MiB.
2. **Cold start**: from ``docker run`` of the image as the runner starts it (``-e`` of
   every input and GITHUB_* variable, the event file mounted) to its first log line (the
   ``::add-mask::`` of the token), next to ``docker run BASE_IMAGE true`` to its exit,
   alternating, best of ``--rounds``. The event is a ``push``, which the Action reads and
   leaves with a notice: no API is called. Target: at most 1.5 times the base's.

The image is built from this checkout on ``--base`` (default: the local bookworm base of
.ci/base-image, which the tests use; this machine cannot pull the public default).

Run ``python bench/image.py [--base NAME] [--rounds N]``; it exits 1 when a figure misses
its target. Needs a Docker engine (``bash .ci/docker``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import expect

ROOT = Path(__file__).resolve().parent.parent
TAG = "repogym-action:bench"
MIB = 1024 * 1024
SIZE_TARGET_MIB = 60.0
START_TARGET = 1.5


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"docker {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def size(image: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", image))


def runner_env(event_dir: Path) -> tuple[dict[str, str], list[str]]:
    """The variables the runner passes a container action for a push, and the mounts."""
    inputs = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    env = {f"INPUT_{name.upper()}": str(spec.get("default", "")) for name, spec in inputs.items()}
    env["INPUT_GITHUB-TOKEN"] = "ghs_bench"
    env.update(
        {
            "HOME": "/github/home",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "push",
            "GITHUB_EVENT_PATH": "/github/workflow/event.json",
            "GITHUB_REPOSITORY": "octo-org/octo-repo",
            "GITHUB_RUN_ID": "1",
            "GITHUB_WORKSPACE": "/github/workspace",
            "RUNNER_TEMP": "/github/runner_temp",
        }
    )
    (event_dir / "event.json").write_text(json.dumps({"ref": "refs/heads/main"}))
    mounts = ["-v", f"{event_dir}:/github/workflow", "--workdir", "/github/workspace"]
    return env, mounts


def first_line(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds from starting ``command`` to its first line on stdout, and that line;
    the process is then waited for."""
    start = time.perf_counter()
    with subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        seconds = time.perf_counter() - start
        process.stdout.read()
    return seconds, line.rstrip("\n")


def until_exit(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="repogym-base:bookworm")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    build = ["docker", "build", "--quiet", "--network", "host", "--tag", TAG]
    built = subprocess.run(
        [*build, "--build-arg", f"BASE_IMAGE={args.base}", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    expect(built.returncode == 0, f"docker build failed: {built.stderr[-2000:]}")

    added = (size(TAG) - size(args.base)) / MIB
    print(f"size: the image adds {added:.1f} MiB to {args.base} (target < {SIZE_TARGET_MIB})")
    history = ["history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}"]
    layers = docker(*history, TAG).splitlines()
    own = len(layers) - len(docker(*history, args.base).splitlines())  # newest first
    for layer in layers[:own]:
        amount, _, made_by = layer.partition("\t")
        if amount not in ("0B", "0"):
            print(f"  {amount:>8}  {made_by[:100]}")

    with tempfile.TemporaryDirectory(prefix="repogym-bench-image-") as event_dir:
        env, mounts = runner_env(Path(event_dir))
        action = ["docker", "run", "--rm", *mounts]
        for name in env:
            action += ["-e", name]
        action.append(TAG)
        base = ["docker", "run", "--rm", args.base, "true"]
        # One of each first: the engine's own first-run costs are no one's.
        seconds, line = first_line(action, env)
        expect(line == "::add-mask::ghs_bench", f"the first line was {line!r}")
        until_exit(base)
        best = {"action": float("inf"), "base": float("inf")}
        for n in range(args.rounds):
            for side in ("action", "base") if n % 2 == 0 else ("base", "action"):
                if side == "action":
                    seconds, line = first_line(action, env)
                    expect(line == "::add-mask::ghs_bench", f"the first line was {line!r}")
                else:
                    seconds = until_exit(base)
                best[side] = min(best[side], seconds)
    ratio = best["action"] / best["base"]
    print(
        f"cold start: first log line after {best['action']:.2f} s, `docker run BASE true` "
        f"{best['base']:.2f} s: {ratio:.2f}x (target <= {START_TARGET}x, best of {args.rounds})"
    )
    missed = added >= SIZE_TARGET_MIB or ratio > START_TARGET
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
