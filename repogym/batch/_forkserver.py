"""Imported by the local executor's forkserver before it forks any worker (issue 23): the
forkserver, and the workers it forks, are not dumpable, so a command run as the grader's
own user cannot read the batch's environment in their ``/proc/<pid>/environ`` (each
worker hardens itself fully before its first command: repogym.sandbox.reaper)."""

from repogym.sandbox.reaper import not_dumpable

not_dumpable()
