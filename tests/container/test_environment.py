"""A task's ``environment`` (issue 20), end to end on a real Docker engine: the examples
graded in an image give the verdicts they get on this machine, RepoEnv's agent works in
it, a cancelled grade leaves no container, and what keeps an environment from being had
is one line and exit 2 before any grading."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import docker
import pytest

from repogym._demo import EXAMPLES, build_example_repo
from repogym.env.actions import RunCommand, Submit, WriteFile
from repogym.env.episode import RepoEnv
from repogym.run.container.engine import LABEL
from tests.container.episodes import git, with_environment
from tests.support.envimage import python_image
from tests.support.waiting import BACKSTOP


@pytest.fixture(scope="module")
def image() -> str:
    return python_image()


def _grade(repo: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    report = repo.parent / f"{repo.name}-report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "repogym",
            "grade",
            "-C",
            str(repo),
            "--base",
            "main",
            "--json",
            str(report),
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=BACKSTOP,
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return done.returncode, data, done.stdout + done.stderr


def _ours() -> list[str]:
    """Containers and volumes of this process's graders still on the engine."""
    client = docker.from_env()
    me = f"/{os.getpid()}/"
    containers = client.api.containers(all=True, filters={"label": f"{LABEL}.owner"})
    found = [c["Id"] for c in containers if me in c["Labels"][f"{LABEL}.owner"]]
    volumes = client.api.volumes(filters={"label": f"{LABEL}.owner"}).get("Volumes") or []
    return found + [v["Name"] for v in volumes if me in v["Labels"][f"{LABEL}.owner"]]


@pytest.mark.parametrize("example", ["bugfix", "perf"])
@pytest.mark.parametrize("solution", [True, False], ids=["solution", "empty"])
def test_an_example_gets_the_same_verdict_in_an_environment(
    tmp_path: Path, image: str, example: str, solution: bool
) -> None:
    plain = build_example_repo(example, tmp_path / "plain", solution=solution)
    boxed = build_example_repo(example, tmp_path / "boxed", solution=solution)
    with_environment(boxed, f"environment:\n  image: {image}\n")
    code, without, _ = _grade(plain)
    code_in, within, said = _grade(boxed)
    assert code_in == code, said
    assert within["passed"] == without["passed"]
    scores = {c["name"]: c["passed"] for c in within["components"]}
    assert scores == {c["name"]: c["passed"] for c in without["components"]}
    recorded = within["environment"]
    assert recorded["source"] == "image" and recorded["image"] == image
    assert recorded["id"].startswith("sha256:") and recorded["how"] == "local"
    assert recorded["network"] == "none"
    # A tag without a digest is allowed, with a warning that names what it resolved to.
    assert f"`environment.image` {image!r} names no digest" in said
    assert recorded["id"] in said
    assert without["environment"] is None


def _without_lists(repo: Path, environment: str = "") -> None:
    """The bugfix example's task with `fail_to_pass: added` and `pass_to_pass: baseline`
    (issue 22), the tests the submission's to change; it adds a test of its fix and
    breaks an old test on the way."""
    git(repo, "checkout", "--quiet", "main")
    task = repo / ".repogym.yml"
    text = task.read_text()
    start, end = text.index("  fail_to_pass:"), text.index("  timeout:")
    text = text[:start] + "  fail_to_pass: added\n  pass_to_pass: baseline\n" + text[end:]
    text = text.replace("  protected: [tests/**]\n", "").replace("[src/**]", "[src/**, tests/**]")
    task.write_text(text + environment)
    git(repo, "commit", "--quiet", "-am", "without lists")
    git(repo, "checkout", "--quiet", "submission")
    git(repo, "rebase", "--quiet", "main")
    core = repo / "src/slugify/core.py"
    core.write_text(core.read_text().replace("[a-z0-9]+", "[a-z]+"))
    (repo / "tests/test_cedilla.py").write_text(
        "from slugify import slugify\n\n\ndef test_cedilla():\n"
        '    assert slugify("Façade") == "facade"\n'
    )
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "a test, and digits dropped")


def test_a_task_without_lists_grades_the_same_in_an_environment(tmp_path: Path, image: str) -> None:
    plain = build_example_repo("bugfix", tmp_path / "plain", solution=True)
    boxed = build_example_repo("bugfix", tmp_path / "boxed", solution=True)
    _without_lists(plain)
    _without_lists(boxed, f"environment:\n  image: {image}\n")
    code, without, _ = _grade(plain)
    code_in, within, said = _grade(boxed)
    assert (code_in, code) == (1, 1), said
    tests = [next(c for c in r["components"] if c["name"] == "tests") for r in (without, within)]
    for kind in ("fail_to_pass", "pass_to_pass", "baseline"):
        assert tests[1]["details"][kind] == tests[0]["details"][kind], kind
    assert tests[1]["details"]["fail_to_pass"] == {"tests/test_cedilla.py::test_cedilla": "passed"}
    assert tests[1]["details"]["baseline"]["broken"] == ["tests/test_slugify.py::test_ascii"]
    assert within["environment"]["image"] == image
    assert _ours() == []


def test_a_dockerfile_is_built_at_the_base_then_reused(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    (repo / ".repogym").mkdir()
    marker = os.urandom(6).hex()
    (repo / ".repogym" / "Dockerfile").write_text(f"FROM {image}\nLABEL marker={marker}\n")
    with_environment(repo, "environment:\n  dockerfile: .repogym/Dockerfile\n")
    code, first, said = _grade(repo)
    assert code == 0, said
    assert first["environment"]["how"] == "built"
    code, second, said = _grade(repo)
    assert code == 0, said
    assert second["environment"]["how"] == "reused"
    assert second["environment"]["id"] == first["environment"]["id"]
    built = docker.from_env().images.get(first["environment"]["id"])
    assert built.labels["marker"] == marker


def test_an_image_labelled_as_the_tasks_is_not_taken_for_it(tmp_path: Path, image: str) -> None:
    """Issue 44: the image another Dockerfile labels with this task's digest (any build may
    set any label, and the classic builder keeps each stage with them) is never reused
    for it: reuse is by the tag repogym gives the build it made. Before, the label alone
    decided, and the impostor's image ran the task."""
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    (repo / ".repogym").mkdir()
    (repo / ".repogym" / "Dockerfile").write_text(
        f"FROM {image}\nLABEL victim={os.urandom(6).hex()}\n"
    )
    with_environment(repo, "environment:\n  dockerfile: .repogym/Dockerfile\n")
    code, first, said = _grade(repo)
    assert code == 0, said
    client = docker.from_env()
    digest = client.images.get(first["environment"]["id"]).labels["repogym.environment"]
    context = tmp_path / "impostor"
    context.mkdir()
    (context / "Dockerfile").write_text(
        f"FROM {image}\nLABEL repogym.environment={digest}\nRUN touch /impostor\n"
    )
    impostor, _ = client.images.build(path=str(context), rm=True, labels={"repogym-test": "1"})
    client.images.remove(first["environment"]["id"], force=True)
    try:
        code, second, said = _grade(repo)
        assert code == 0, said
        assert second["environment"]["how"] == "built"
        assert second["environment"]["id"] != impostor.id
    finally:
        client.images.remove(impostor.id, force=True)


def test_a_registry_out_of_reach_is_not_the_tasks_error(tmp_path: Path, image: str) -> None:
    """Issue 44: a Dockerfile whose base image's registry cannot be reached (this machine
    reaches none) is exit 3, saying the network could not be reached; before, exit 2 and
    "fix it on the base branch"."""
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    (repo / ".repogym").mkdir()
    (repo / ".repogym" / "Dockerfile").write_text("FROM repogym-no-such-image:1\n")
    with_environment(repo, "environment:\n  dockerfile: .repogym/Dockerfile\n")
    code, report, said = _grade(repo)
    assert code == 3, said
    assert "could not be built" in said and "the engine could not reach the network" in said
    assert "fix it on the base branch" not in said and "Traceback" not in said
    assert report["error"]["kind"] == "environment"


@pytest.mark.parametrize(
    ("dockerfile", "expected"),
    [
        (None, "`environment.dockerfile` .repogym/Dockerfile is not in the base commit"),
        ("RUN echo the-build-log-tail && false", "does not build"),
    ],
    ids=["missing", "failing"],
)
def test_a_dockerfile_that_cannot_be_had_stops_the_grade(
    tmp_path: Path, image: str, dockerfile: str | None, expected: str
) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    if dockerfile is not None:
        (repo / ".repogym").mkdir()
        (repo / ".repogym" / "Dockerfile").write_text(f"FROM {image}\n{dockerfile}\n")
    with_environment(repo, "environment:\n  dockerfile: .repogym/Dockerfile\n")
    code, report, said = _grade(repo)
    assert code == 2, said
    assert expected in said
    assert "Traceback" not in said and "FAIL" not in said
    assert report["error"]["message"].startswith(".repogym.yml")
    if dockerfile is not None:
        assert "  | the-build-log-tail" in said


def test_no_engine_is_one_line_before_grading(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    with_environment(repo, f"environment:\n  image: {image}\n")
    missing = tmp_path / "no-such.sock"
    code, _, said = _grade(repo, env={"DOCKER_HOST": f"unix://{missing}"})
    assert code == 2, said
    lines = said.strip().splitlines()
    assert lines == [
        f"repogym: error: no Docker engine at unix://{missing}: start one (dockerd), or set "
        "DOCKER_HOST to the engine's address; the task's `environment` runs its commands there"
    ]


def test_setup_with_network_runs_before_the_hidden_tests_are_in(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    hidden = repo / ".repogym" / "hidden" / "tests"
    hidden.mkdir(parents=True)
    (hidden / "test_hidden.py").write_text(
        "from pathlib import Path\n\n"
        "def test_setup_saw_no_hidden_test():\n"
        "    assert Path('seen-by-setup.txt').read_text() == 'absent\\n'\n"
    )
    task = repo / ".repogym.yml"
    text = task.read_text().replace(
        "  timeout: 120\n", "  timeout: 120\n  hidden: .repogym/hidden\n"
    )
    text = text.replace(
        "  pass_to_pass:\n",
        "  pass_to_pass:\n    - tests/test_hidden.py::test_setup_saw_no_hidden_test\n",
    )
    task.write_text(
        text.replace(
            "type: bugfix\n",
            "type: bugfix\nsetup: "
            "test -e tests/test_hidden.py && echo present > seen-by-setup.txt"
            " || echo absent > seen-by-setup.txt\n",
        )
    )
    with_environment(repo, f"environment:\n  image: {image}\n  network: setup\n")
    code, report, said = _grade(repo)
    assert code == 0, said
    tests = next(c for c in report["components"] if c["name"] == "tests")
    assert (
        tests["details"]["pass_to_pass"]["tests/test_hidden.py::test_setup_saw_no_hidden_test"]
        == "passed"
    )


def test_repoenv_runs_the_agent_in_the_environment(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo", solution=False)
    with_environment(repo, f"environment:\n  image: {image}\n")
    solution = build_example_repo("bugfix", tmp_path / "gold")
    fixed = (solution / "src" / "slugify" / "core.py").read_text()
    with RepoEnv(repo, base="main") as env:
        env.reset()
        observation, *_ = env.step(RunCommand("id -u; ls /sys/class/net; echo made > made.txt"))
        assert observation["output"].splitlines() == ["10001", "lo"]
        assert (env.workspace.root / "made.txt").read_text() == "made\n"
        env.step(RunCommand("rm made.txt"))
        assert not (env.workspace.root / "made.txt").exists()
        env.step(WriteFile("src/slugify/core.py", fixed))
        observation, *_ = env.step(RunCommand("git status --short"))
        assert observation["output"] == " M src/slugify/core.py\n"
        observation, reward, terminated, _, _ = env.step(Submit())
    assert terminated and reward == 1.0, observation
    assert _ours() == []


def test_a_cancelled_grade_leaves_no_container(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    task = repo / ".repogym.yml"
    task.write_text(
        task.read_text().replace(
            "command: python -m pytest", "command: echo started; sleep 3600; python -m pytest"
        )
    )
    with_environment(repo, f"environment:\n  image: {image}\n")
    client = docker.from_env()
    # The engine's events say when the test command's container starts: no polling.
    events = client.events(
        decode=True, filters={"label": LABEL, "event": "start", "type": "container"}
    )
    grading = subprocess.Popen(
        [sys.executable, "-m", "repogym", "grade", "-C", str(repo), "--base", "main"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for event in events:
            started = client.api.inspect_container(event["id"])
            if "sleep 3600" in " ".join(started["Config"]["Cmd"]):
                break
        events.close()
        grading.send_signal(signal.SIGTERM)
        assert grading.wait(BACKSTOP) == 128 + signal.SIGTERM
    finally:
        grading.kill()
        grading.wait()
    left = client.api.containers(all=True, filters={"label": f"{LABEL}.owner"})
    assert [c for c in left if f"/{grading.pid}/" in c["Labels"][f"{LABEL}.owner"]] == []
    volumes = client.api.volumes(filters={"label": LABEL}).get("Volumes") or []
    assert [v for v in volumes if f"/{grading.pid}/" in v["Labels"][f"{LABEL}.owner"]] == []


def test_a_program_the_image_lacks_is_an_error_naming_the_image(tmp_path: Path, image: str) -> None:
    repo = build_example_repo("bugfix", tmp_path / "repo")
    git(repo, "checkout", "--quiet", "main")
    task = repo / ".repogym.yml"
    text = task.read_text()
    task.write_text(text.replace("command: python -m pytest", "command: node --test"))
    with_environment(repo, f"environment:\n  image: {image}\n")
    code, _, said = _grade(repo)
    assert code == 2, said
    assert "FAIL" not in said and "Traceback" not in said
    assert (
        f"repogym: error: tests.command: `node` was not found on the PATH of the environment's "
        f"image {image} (PATH=/usr/local/sbin:" in said
    )


def test_the_demo_grades_every_example_where_the_engine_has_their_images(
    tmp_path: Path, env_images: tuple[str, ...]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "repogym", "demo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=BACKSTOP,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped" not in done.stdout
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 6 and all(v.startswith("PASS 1.000") for v in verdicts), verdicts


def test_repoenv_solves_the_node_example_in_its_image(
    tmp_path: Path, env_images: tuple[str, ...]
) -> None:
    repo = build_example_repo("node", tmp_path / "repo", solution=False)
    gold = (EXAMPLES / "node" / "solution" / "src" / "duration.js").read_text()
    with RepoEnv(repo, base="main") as env:
        env.reset()
        observation, *_ = env.step(RunCommand("node --version; id -u"))
        assert observation["output"].splitlines()[1] == "10001", observation
        assert observation["output"].startswith("v20."), observation
        observation, reward, terminated, _, _ = env.step(Submit())
        assert terminated and reward < 1.0, observation
    with RepoEnv(repo, base="main") as env:
        env.reset()
        env.step(WriteFile("src/duration.js", gold))
        observation, reward, terminated, _, _ = env.step(Submit())
    assert terminated and reward == 1.0, observation
    assert _ours() == []


def test_a_socket_closed_to_the_user_is_one_line_before_grading(image: str) -> None:
    """An engine's socket this user may not open (root's, mode 0600; the grade as
    nobody): exit 2, one line saying so and how to fix it."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to grade as another user")
    nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    runs = subprocess.run([*nobody, sys.executable, "-c", "pass"], capture_output=True)
    if runs.returncode != 0:
        pytest.skip(f"{sys.executable} cannot run as nobody: {runs.stderr[-200:]!r}")
    place = Path(tempfile.mkdtemp(prefix="repogym-socket-"))
    try:
        place.chmod(0o755)
        repo = build_example_repo("bugfix", place / "repo")
        with_environment(repo, f"environment:\n  image: {image}\n")
        subprocess.run(["chown", "-R", "65534:65534", str(repo)], check=True)
        with socket.socket(socket.AF_UNIX) as engine:
            engine.bind(str(place / "engine.sock"))
            (place / "engine.sock").chmod(0o600)
            engine.listen()
            done = subprocess.run(
                [
                    *nobody,
                    "env",
                    f"HOME={place}",
                    f"DOCKER_HOST=unix://{place}/engine.sock",
                    sys.executable,
                    "-m",
                    "repogym",
                    "grade",
                    "-C",
                    str(repo),
                    "--base",
                    "main",
                ],
                capture_output=True,
                text=True,
                timeout=BACKSTOP,
            )
    finally:
        shutil.rmtree(place, ignore_errors=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"repogym: error: the Docker engine's socket unix://{place}/engine.sock is closed to "
        "this user (permission denied): add the user to the socket's group (docker), or run "
        "as root"
    ]
