"""What people read of a grade: the report (:mod:`repogym.report.build`) and its schema
(:mod:`repogym.report.schema`), what a report shows when hidden tests ran
(:mod:`repogym.report.redact`), the templates that render it (:mod:`repogym.report.render`,
:mod:`repogym.report.render_process`, :mod:`repogym.report.template_files`) and the files
it is written to (:mod:`repogym.report.outputs`)."""
