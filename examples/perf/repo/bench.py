"""Benchmark: de-duplicate lists with many repeats.

A fixed amount of other work keeps every run above half a second, as a benchmark timed
from outside should be, so that interpreter start-up stays negligible.
"""

import sys

sys.path.insert(0, "src")

from dedupe import unique  # noqa: E402

# The part unique() does not touch: parsing the "input", about 0.7 s of CPU here, so that
# even a unique() that takes no time leaves a run of over half a second (issue 45: the
# solution's run took 0.16 s, and the grade warned that start-up dominated it).
checksum = sum(int(str(i * 31 % 1000).zfill(4)) for i in range(2_800_000))
items = [(i * 7919) % 3000 for i in range(20_000)]
for _ in range(14):
    assert len(unique(items)) == len(set(items))
