"""Tables of figures that a test module measures, printed at its end past pytest's output
capture, so that CI's log shows them (the closing notes quote them)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def write_table(
    config: pytest.Config, header: Sequence[str], rows: Sequence[Sequence[object]]
) -> None:
    """``rows`` under ``header`` as a Markdown table on the terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not rows:
        return
    lines = ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    with capture.global_and_fixture_disabled():
        for line in lines:
            reporter.write_line(line)
