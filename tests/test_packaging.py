"""The package as a new user installs it (issue 8): from a wheel, not the source tree."""

from __future__ import annotations

from pathlib import Path

from tests.packaging import InstalledWheel


def test_the_wheel_holds_the_examples_with_their_dotfiles(installed_wheel: InstalledWheel) -> None:
    names = set(installed_wheel.names)
    for example in ("bugfix", "feature", "perf", "refactor"):
        assert f"repogym/_examples/{example}/repo/.repogym.yml" in names
    assert "repogym/_examples/feature/repo/.repogym/hidden/tests/test_top_words_hidden.py" in names


def test_demo_runs_from_an_installed_wheel_in_another_directory(
    installed_wheel: InstalledWheel, tmp_path: Path
) -> None:
    # The examples' tests run with pytest, as the README's "Try it" installs it.
    added = installed_wheel.run("python", "-m", "pip", "install", "-q", "pytest", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    done = installed_wheel.run("repogym", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 4 and all(v.startswith("PASS 1.000") for v in verdicts), verdicts
    assert str(installed_wheel.venv) in done.stdout or "repogym-demo-" in done.stdout
