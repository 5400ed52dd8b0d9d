"""The tests grader (:mod:`repogym.graders.tests.grader`): the files each run gets
(:mod:`~repogym.graders.tests.runfiles`, :mod:`~repogym.graders.tests.runner_config`),
how a Python runner starts with the base's configuration
(:mod:`~repogym.graders.tests.pytest_start`, :mod:`~repogym.graders.tests.python_start`
and the modules they copy beside a run's report, :mod:`~repogym.graders.tests.python_site`
and :mod:`~repogym.graders.tests.pytest_guard`), one run (:mod:`~repogym.graders.tests.run`),
the base's own runs (:mod:`~repogym.graders.tests.base_runs`, shared per machine by
:mod:`~repogym.graders.tests.machine_cache`) and what the two make of each other
(:mod:`~repogym.graders.tests.versus_base`), the outcome and what is said of it
(:mod:`~repogym.graders.tests.outcome`, :mod:`~repogym.graders.tests.findings`,
:mod:`~repogym.graders.tests.hints`, :mod:`~repogym.graders.tests.loadfailure`)."""
