"""The package as a new user installs it (issue 8): from a wheel, not the source tree."""

from __future__ import annotations

from pathlib import Path

from tests.support.packaging import InstalledWheel


def test_the_wheel_holds_the_examples_with_their_dotfiles(installed_wheel: InstalledWheel) -> None:
    names = set(installed_wheel.names)
    for example in ("bugfix", "feature", "perf", "refactor"):
        assert f"repogym/_examples/{example}/repo/.repogym.yml" in names
    assert "repogym/_examples/feature/repo/.repogym/hidden/tests/test_top_words_hidden.py" in names


PYTHON_EXAMPLES = ("bugfix", "feature", "perf", "refactor")
ENVIRONMENT_EXAMPLES = ("go", "node")  # run in a Docker engine's containers (issue 20)


def test_demo_says_what_to_install_rather_than_failing_without_pytest(
    installed_wheel: InstalledWheel, tmp_path: Path
) -> None:
    # Run before the next test installs pytest into the same venv.
    missing = installed_wheel.run("python", "-c", "import pytest", cwd=tmp_path)
    assert missing.returncode != 0
    done = installed_wheel.run("repogym", "demo", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "FAIL" not in done.stdout
    for name in PYTHON_EXAMPLES:
        assert f"== {name}: skipped: its tests run `python -m pytest`, and " in done.stdout
    assert done.stdout.count("has no pytest: install it there (`") == len(PYTHON_EXAMPLES)


def test_demo_runs_from_an_installed_wheel_in_another_directory(
    installed_wheel: InstalledWheel, tmp_path: Path
) -> None:
    # The examples' tests run with pytest, as the README's "Try it" installs it.
    added = installed_wheel.run("python", "-m", "pip", "install", "-q", "pytest", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    done = installed_wheel.run("repogym", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert all(v.startswith("PASS 1.000") for v in verdicts), verdicts
    graded = [n for n in ENVIRONMENT_EXAMPLES if f"== {n}: grading" in done.stdout]
    # The environment examples are graded where an engine can have their images, and
    # said to be skipped, with why, elsewhere.
    skipped = [
        n for n in ENVIRONMENT_EXAMPLES if f"== {n}: skipped: its environment" in done.stdout
    ]
    assert sorted(graded + skipped) == list(ENVIRONMENT_EXAMPLES), done.stdout
    assert len(verdicts) == len(PYTHON_EXAMPLES) + len(graded)
    assert str(installed_wheel.venv) in done.stdout or "repogym-demo-" in done.stdout
