"""The perf grader (:mod:`repogym.graders.perf.grader`): its paired runs and what each
measured (:mod:`~repogym.graders.perf.measure`), the statistics of the speed-up
(:mod:`~repogym.graders.perf.stats`) and the component it reports
(:mod:`~repogym.graders.perf.report`)."""
