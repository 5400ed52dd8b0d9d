"""The workflows, the release and this repository's own task (issue 11).

Every workflow of the project and of ``examples/workflows`` is valid against SchemaStore's
schema, pins third-party actions by commit sha with the version beside it, and runs each
job with permissions it declares. The release script is run for real on a copy of the
files it reads and writes; the versions it checks agree on this tree. ``.repogym.yml``
loads, names tests that exist, and its quality limits hold for the code as it is.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import repogym
from repogym.metrics import measure_file
from repogym.task import load_task
from repogym.tree.globs import compile_globs, matching
from tests.support.workflow_files import check_jsonschema, readme_section

ROOT = Path(__file__).resolve().parent.parent
PROJECT = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
EXAMPLES = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
WORKFLOWS = PROJECT + EXAMPLES
PREPARE = ROOT / ".github" / "release" / "prepare.py"
# This Action as the examples name it: by its major tag, which the release moves on purpose.
THIS_ACTION = "org/repogym-action@v1"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?:\s+#\s*(?P<comment>.*))?$", re.M)
PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<sha>[0-9a-f]{40})")


def load(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), path
    return loaded


def name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def jobs(path: Path) -> dict[str, dict[str, Any]]:
    found = load(path)["jobs"]
    assert isinstance(found, dict) and found, path
    return found


def steps(path: Path, job: str) -> list[dict[str, Any]]:
    return list(jobs(path)[job]["steps"])


def test_there_are_the_workflows_of_the_issue() -> None:
    assert [p.name for p in PROJECT] == ["ci.yml", "grade.yml", "release.yml"]
    assert [p.name for p in EXAMPLES] == [
        "fork-grade.yml",
        "fork-publish.yml",
        "grade-pull-requests.yml",
        "hidden-tests.yml",
        "workflow-dispatch.yml",
    ]


def test_every_workflow_is_valid_for_schemastore() -> None:
    done = check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_would_catch_a_mistake(tmp_path: Path) -> None:
    broken = tmp_path / "grade.yml"
    text = (ROOT / ".github" / "workflows" / "grade.yml").read_text()
    broken.write_text(text.replace("checks: write", "checks: maybe"))
    assert check_jsonschema("vendor.github-workflows", broken).returncode != 0


@pytest.mark.parametrize("path", WORKFLOWS, ids=name)
def test_third_party_actions_are_pinned_by_sha_with_their_version(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = list(USES.finditer(text))
    declared = [
        s["uses"] for job in jobs(path).values() for s in job.get("steps", []) if "uses" in s
    ]
    assert [m["ref"] for m in lines] == declared, "a `uses:` the line pattern does not see"
    for match in lines:
        ref = match["ref"]
        if ref.startswith(("./", "docker://")) or (path in EXAMPLES and ref == THIS_ACTION):
            continue
        assert PINNED.fullmatch(ref), f"{name(path)}: {ref} is not pinned by a full commit sha"
        assert re.fullmatch(r"v\d+\.\d+\.\d+", match["comment"] or ""), (
            f"{name(path)}: {ref} needs its version in a comment, e.g. `# v1.2.3`"
        )


def test_one_action_has_one_pin_everywhere() -> None:
    pins: dict[str, set[tuple[str, str]]] = {}
    for path in WORKFLOWS:
        for match in USES.finditer(path.read_text(encoding="utf-8")):
            pinned = PINNED.fullmatch(match["ref"])
            if pinned:
                pins.setdefault(pinned["action"], set()).add((pinned["sha"], match["comment"]))
    assert "actions/checkout" in pins
    assert {action: len(found) for action, found in pins.items()} == dict.fromkeys(pins, 1)


@pytest.mark.parametrize("path", PROJECT, ids=name)
def test_project_workflows_grant_nothing_by_default_and_each_job_its_own(path: Path) -> None:
    assert load(path)["permissions"] == {}
    for job, spec in jobs(path).items():
        assert isinstance(spec.get("permissions"), dict), f"{name(path)}: job {job}"
        assert "write-all" not in str(spec["permissions"])


@pytest.mark.parametrize("path", EXAMPLES, ids=name)
def test_example_jobs_run_with_declared_permissions(path: Path) -> None:
    workflow = load(path)
    needed = {"contents": "read", "pull-requests": "write", "checks": "write"}
    if path.name == "fork-grade.yml":  # a fork's read-only run: nothing to write
        needed = {"contents": "read"}
    if path.name == "fork-publish.yml":  # the artifact, then the posts; no checkout
        needed = {"actions": "read", "pull-requests": "write", "checks": "write"}
    for job, spec in jobs(path).items():
        granted = spec.get("permissions", workflow.get("permissions"))
        if (path.name, job) == ("fork-grade.yml", "queue"):  # the queue's own commit
            assert granted == {"contents": "read", "checks": "write"}, job
            continue
        assert granted == needed, f"{name(path)}: job {job}"


def test_ci_runs_the_readmes_test_command_as_root() -> None:
    path = ROOT / ".github" / "workflows" / "ci.yml"
    assert set(load(path)[True]) >= {"push", "pull_request"}  # YAML 1.1 reads `on` as True
    (test,) = jobs(path).values()
    assert test["permissions"] == {"contents": "read"}
    assert [s["run"] for s in test["steps"] if "run" in s] == ["sudo bash .ci/run"]


def test_grade_runs_this_action_on_pull_requests_one_run_per_pull_request() -> None:
    path = ROOT / ".github" / "workflows" / "grade.yml"
    workflow = load(path)
    assert set(workflow[True]) == {"pull_request", "merge_group"}
    assert workflow["concurrency"]["cancel-in-progress"] is True
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    (grade,) = jobs(path).values()
    assert grade["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "checks": "write",
    }
    checkout, action = grade["steps"][:2]
    # Default depth and credentials: the Action fetches the history it needs with them.
    assert checkout["uses"].startswith("actions/checkout@") and "with" not in checkout
    assert action["uses"] == "./"
    # A fork's read-only token could post nothing: the README's way round it.
    assert action["with"]["check-run"] in readme_section()
    assert action["with"]["comment"] in readme_section()


def test_examples_grade_with_this_action() -> None:
    for path in EXAMPLES:
        job = jobs(path)["grade" if path.name == "fork-grade.yml" else next(iter(jobs(path)))]
        uses = [step.get("uses") for step in job["steps"]]
        last = uses[-2] if path.name == "fork-grade.yml" else uses[-1]  # then the upload
        assert last == THIS_ACTION, name(path)
    publish = steps(ROOT / "examples/workflows/fork-publish.yml", "publish")
    assert publish[-1]["with"]["mode"] == "publish"
    assert publish[0]["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    hidden = steps(ROOT / "examples/workflows/hidden-tests.yml", "grade")
    private = hidden[2]["with"]
    assert private["token"] == "${{ secrets.HIDDEN_TESTS_TOKEN }}"
    assert private["persist-credentials"] is False
    assert hidden[1]["run"] == f"rm -rf {private['path']}"  # before the real ones go there
    assert hidden[3]["run"] == f"rm -rf {private['path']}/.git"  # files, not a repository
    assert hidden[-1]["with"] == {"hidden-tests": private["path"]}
    dispatch = load(ROOT / "examples/workflows/workflow-dispatch.yml")
    assert list(dispatch[True]) == ["workflow_dispatch"]
    last = steps(ROOT / "examples/workflows/workflow-dispatch.yml", "grade")[-1]
    assert last["with"] == {"pull-request": "${{ inputs.pull-request }}"}


def test_the_fork_pair_grades_a_merge_queue_in_the_grading_workflow() -> None:
    """issue 45: fork-grade.yml ran on pull_request only and fork-publish.yml publishes
    pull_request runs only, so a merge queue's commits got no check. The queue job runs
    on merge_group alone, may write checks, posts with the Action's defaults (the check
    run, no comment), and each merge group is a concurrency group of its own."""
    grade = load(ROOT / "examples/workflows/fork-grade.yml")
    assert set(grade[True]) == {"pull_request", "merge_group"}
    found = jobs(ROOT / "examples/workflows/fork-grade.yml")
    assert found["grade"]["if"] == "github.event_name == 'pull_request'"
    assert found["queue"]["if"] == "github.event_name == 'merge_group'"
    action = found["queue"]["steps"][-1]
    assert action["uses"] == THIS_ACTION and "with" not in action
    assert "github.event.pull_request.number || github.ref" in grade["concurrency"]["group"]


def test_fork_publish_follows_fork_grade_and_skips_a_run_without_a_report() -> None:
    """``workflows:`` names the grading workflow by its ``name:``, and only a run that
    succeeded or failed is published: a cancelled one uploaded nothing, and downloading
    its artifact would fail the job (issue 19)."""
    grade = load(ROOT / "examples/workflows/fork-grade.yml")
    publish = load(ROOT / "examples/workflows/fork-publish.yml")
    assert publish[True]["workflow_run"]["workflows"] == [grade["name"]]
    condition = " ".join(
        jobs(ROOT / "examples/workflows/fork-publish.yml")["publish"]["if"].split()
    )
    assert condition == (
        "github.event.workflow_run.event == 'pull_request' && "
        """contains(fromJSON('["success", "failure"]'), github.event.workflow_run.conclusion)"""
    )


def test_zizmor_finds_nothing_in_the_workflows() -> None:
    """The security lint, offline, with .github/zizmor.yml (issue 19): nothing of medium
    severity or more in the project's workflows (zizmor collects nothing from a directory
    that is not a repository's .github/workflows: the examples are audited below)."""
    zizmor = Path(sys.executable).with_name("zizmor")
    done = subprocess.run(
        [str(zizmor), "--offline", "--min-severity", "medium", "--format", "plain",
         str(ROOT / ".github" / "workflows")],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_examples_give_zizmor_nothing_to_report_where_they_are_copied(tmp_path: Path) -> None:
    """issue 45: copied into a repository of their own (no zizmor.yml of ours there), the
    examples gave 25 findings; each deliberate choice now carries zizmor's own ignore
    comment with its reason, so an author who runs zizmor in CI gets none."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in sorted((ROOT / "examples" / "workflows").glob("*.yml")):
        (workflows / example.name).write_text(example.read_text())
    zizmor = Path(sys.executable).with_name("zizmor")
    done = subprocess.run(
        [str(zizmor), "--offline", "--color", "never", "--format", "plain", "."],
        capture_output=True, text=True, check=False, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr
    assert "12 ignored" in done.stdout + done.stderr  # each with its reason beside it


def test_hadolint_finds_nothing_in_the_dockerfiles() -> None:
    """The Action's Dockerfile and the examples' (issue 45: DL3008 on `apt-get install
    git`, whose version is left to Debian for the reason the Dockerfile gives beside its
    ignore comment)."""
    hadolint = Path(sys.executable).with_name("hadolint")
    dockerfiles = [ROOT / "Dockerfile", *sorted(ROOT.glob("examples/*/repo/.repogym/Dockerfile"))]
    done = subprocess.run(
        [str(hadolint), "--no-color", *map(str, dockerfiles)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = (ROOT / "Dockerfile").read_text()
    ignore = text.index("# hadolint ignore=DL3008")
    assert "a `git=`" in text[ignore - 600 : ignore], "the ignore says why"


def test_the_readmes_workflow_is_the_example() -> None:
    (block,) = re.findall(r"^```yaml\n(.*?)^```", readme_section(), re.S | re.M)
    assert block == (ROOT / "examples/workflows/grade-pull-requests.yml").read_text()


def test_release_builds_both_platforms_and_moves_the_major_and_minor_tags() -> None:
    path = ROOT / ".github" / "workflows" / "release.yml"
    assert load(path)[True] == {"push": {"tags": ["v*.*.*"]}}
    found = jobs(path)
    assert list(found) == ["check", "image", "tags"]
    writes = {
        job: sorted(k for k, v in s["permissions"].items() if v == "write")
        for job, s in found.items()
    }
    assert writes == {"check": [], "image": ["packages"], "tags": ["contents"]}
    assert found["image"]["needs"] == "check" and found["tags"]["needs"] == ["check", "image"]
    (build,) = [s for s in found["image"]["steps"] if "build-push-action" in s["uses"]]
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["push"] is True
    assert (
        "org.opencontainers.image.version=${{ needs.check.outputs.version }}"
        in (build["with"]["labels"])
    )
    scripts = "\n".join(s.get("run", "") for job in found.values() for s in job["steps"])
    assert ".github/release/prepare.py check" in scripts
    assert ".github/release/prepare.py pin" in scripts
    assert 'git push --force origin "refs/tags/$MAJOR" "refs/tags/$MINOR"' in scripts
    # action.yml of the moved tags runs the pushed image by its digest (issue 19).
    assert build["id"] == "build"
    assert found["image"]["outputs"] == {"digest": "${{ steps.build.outputs.digest }}"}
    (pinning,) = [s for s in found["tags"]["steps"] if "prepare.py pin" in s.get("run", "")]
    assert pinning["env"]["DIGEST"] == "${{ needs.image.outputs.digest }}"
    assert '--digest "$DIGEST"' in pinning["run"]


# The release script, run as the workflow runs it, on a copy of the files it reads.


def prepare_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_prepare", PREPARE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PREPARE), "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def release_tree(tmp_path: Path) -> Path:
    """The files the release reads, as they are in this tree, with pyproject at 1.4.2."""
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pinned, count = re.subn(r'(?m)^version = "[^"]*"$', 'version = "1.4.2"', pyproject)
    assert count == 1
    (tmp_path / "pyproject.toml").write_text(pinned, encoding="utf-8")
    return tmp_path


def test_check_gives_the_outputs_of_an_agreeing_tag(release_tree: Path) -> None:
    done = prepare(release_tree, "check", "refs/tags/v1.4.2", "--repository", "Octo-Org/Repo")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == ("version=1.4.2\nmajor=v1\nminor=v1.4\nimage=ghcr.io/octo-org/repo\n")


@pytest.mark.parametrize(
    ("tag", "says"),
    [
        ("v1.4.3", "tag v1.4.3 does not match pyproject.toml `project.version` (1.4.2)"),
        ("v1.4", "tag 'v1.4' is not vX.Y.Z"),
        ("v1.4.2-rc1", "tag 'v1.4.2-rc1' is not vX.Y.Z"),
        ("1.4.2", "tag '1.4.2' is not vX.Y.Z"),
        ("v01.4.2", "tag 'v01.4.2' is not vX.Y.Z"),
    ],
)
def test_check_refuses_a_tag_that_disagrees(release_tree: Path, tag: str, says: str) -> None:
    done = prepare(release_tree, "check", tag, "--repository", "o/r")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"release: {says}") and done.stderr.count("\n") == 1


def test_check_compares_the_dockerfiles_version_label(release_tree: Path) -> None:
    dockerfile = release_tree / "Dockerfile"
    dockerfile.write_text('FROM scratch\nLABEL org.opencontainers.image.version="1.4.1"\n')
    done = prepare(release_tree, "check", "v1.4.2", "--repository", "o/r")
    assert done.returncode == 1
    assert "org.opencontainers.image.version label (1.4.1)" in done.stderr
    dockerfile.write_text("FROM scratch\nLABEL org.opencontainers.image.version=1.4.2\n")
    assert prepare(release_tree, "check", "v1.4.2", "--repository", "o/r").returncode == 0
    # A label the build fills in is the workflow's to set (build-push-action's labels).
    dockerfile.write_text("ARG VERSION\nLABEL org.opencontainers.image.version=$VERSION\n")
    assert prepare(release_tree, "check", "v1.4.2", "--repository", "o/r").returncode == 0


def test_check_compares_the_installed_package(release_tree: Path) -> None:
    done = prepare(release_tree, "check", "v1.4.2", "--repository", "o/r", "--installed")
    assert done.returncode == 1
    assert f"repogym.__version__) ({repogym.__version__})" in done.stderr


DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_pin_changes_only_the_image_line_to_the_image_by_digest(release_tree: Path) -> None:
    action = release_tree / "action.yml"
    before = action.read_text(encoding="utf-8").splitlines()
    image = "ghcr.io/octo-org/repo"
    done = prepare(release_tree, "pin", "1.4.2", "--image", image, "--digest", DIGEST)
    reference = f"docker://{image}:1.4.2@{DIGEST}"
    assert (done.returncode, done.stdout) == (0, reference + "\n")
    after = action.read_text(encoding="utf-8").splitlines()
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert changed == [("  image: Dockerfile", f"  image: {reference}")]
    assert load(action)["runs"] == {"using": "docker", "image": reference}
    assert check_jsonschema("vendor.github-actions", action).returncode == 0
    again = prepare(release_tree, "pin", "1.4.3", "--image", image, "--digest", DIGEST)
    assert again.returncode == 1 and "expected one line `image: Dockerfile`" in again.stderr


@pytest.mark.parametrize("digest", ["", "sha256:abc", "1.4.2", "sha512:" + "0" * 64])
def test_pin_refuses_what_is_not_a_digest(release_tree: Path, digest: str) -> None:
    done = prepare(release_tree, "pin", "1.4.2", "--image", "ghcr.io/o/r", "--digest", digest)
    assert done.returncode == 1 and "is not sha256: and 64 hex digits" in done.stderr
    assert load(release_tree / "action.yml")["runs"]["image"] == "Dockerfile"


def test_the_image_name_is_lower_case() -> None:
    module = prepare_module()
    assert module.image_name("Octo-Org/RepoGym-Action") == "ghcr.io/octo-org/repogym-action"
    with pytest.raises(module.ReleaseError, match="is not owner/name"):
        module.image_name("octo-org")


def test_the_versions_of_this_tree_agree() -> None:
    """pyproject.toml, the installed package, the Dockerfile's version label and a tag of
    that version agree (action.yml names no version on main: `release.yml` pins it to the
    image of the tag, tested above)."""
    module = prepare_module()
    version = module.package_version(ROOT)
    assert repogym.__version__ == version
    assert module.dockerfile_version(ROOT) == version
    done = prepare(ROOT, "check", f"v{version}", "--repository", "o/r", "--installed")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"version={version}\n")


# This repository's own task, which grade.yml grades every pull request with.


def test_this_repositorys_task_loads_and_protects_the_tests() -> None:
    task = load_task(ROOT / ".repogym.yml")
    assert task.type == "refactor"
    assert "tests/**" in task.constraints.protected
    assert task.constraints.paths == ("repogym/**/*.py", "repogym_action/**/*.py")
    assert task.tests is not None and task.tests.baseline


def test_this_repositorys_task_runs_tests_that_exist() -> None:
    task = load_task(ROOT / ".repogym.yml")
    assert task.tests is not None
    files = [word for word in task.tests.command.split() if word.startswith("tests/")]
    assert files and all((ROOT / path).is_file() for path in files)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert len(collected) > 30  # what `pass_to_pass: baseline` keeps passing


def test_this_repositorys_code_is_within_its_tasks_quality_limits() -> None:
    constraints = load_task(ROOT / ".repogym.yml").constraints
    assert constraints.paths
    files = [p.relative_to(ROOT).as_posix() for p in ROOT.glob("repogym*/**/*.py")]
    measured = matching(compile_globs(constraints.paths), files)
    assert len(measured) > 20
    over = [
        f"{m.path}:{m.line} {m.qualname} ({m.length} lines, complexity {m.complexity})"
        for path in measured
        for m in measure_file(ROOT / path, path)
        if m.length > constraints.max_function_length
        or m.complexity > constraints.max_cyclomatic_complexity
    ]
    assert over == []
