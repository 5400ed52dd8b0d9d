"""A small benchmark task the perf attacks share."""

from __future__ import annotations

import textwrap

SMALL_PERF = {
    "task": textwrap.dedent(
        """\
        version: 1
        type: perf
        perf:
          command: python bench.py
          timing: wall
          runs: 3
          warmup: 1
          noise_floor: 1.5
          min_speedup: 3
          timeout: 60
        constraints:
          protected: [bench.py]
          allowed_files: [src/**]
        """
    ),
    "files": {
        # The marker tells this case's baseline from those of other grades on the machine.
        "bench.py": textwrap.dedent(
            """\
            # perf attack case {marker}
            import sys

            sys.path.insert(0, "src")
            from work import work  # noqa: E402

            work()
            """
        ),
        "src/work.py": textwrap.dedent(
            """\
            def work():
                total = 0
                for i in range(500_000):
                    total += i % 7
                return total
            """
        ),
    },
}
