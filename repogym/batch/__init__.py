"""Many grades and many validations at once (issue 23): ``repogym batch``,
``repogym validate --tasks``, :func:`grade_many` and :func:`validate_many`.

The work comes as lines (:mod:`repogym.batch.lines`): jobs, a submission to grade each
(:mod:`repogym.batch.jobs`), or tasks to validate (:mod:`repogym.batch.validations`).
One executor runs either kind: worker processes on this machine (:class:`Local`,
:mod:`repogym.batch.local`) or tasks of a Ray cluster (:class:`Ray`,
:mod:`repogym.batch.cluster`); :mod:`repogym.batch.many` writes their lines as they end.
"""

from __future__ import annotations

from repogym.batch.cluster import Ray
from repogym.batch.jobs import Job
from repogym.batch.local import Local
from repogym.batch.many import (
    Executor,
    Summary,
    finished_ids,
    grade_many,
    grade_many_async,
    run_batch,
    run_many,
    validate_many,
)

__all__ = [
    "Executor",
    "Job",
    "Local",
    "Ray",
    "Summary",
    "finished_ids",
    "grade_many",
    "grade_many_async",
    "run_batch",
    "run_many",
    "validate_many",
]
