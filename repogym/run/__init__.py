"""Where a command runs (issue 46): the protocols every place answers
(:mod:`repogym.run.protocol`), the places (the host's sandbox, :mod:`repogym.run.host`;
containers of the task's image, :mod:`repogym.run.container`), the image itself
(:mod:`repogym.run.image`), the checks made before a grade (:mod:`repogym.run.preflight`,
:mod:`repogym.run.notfound`), and the one choice of a place for a task
(:mod:`repogym.run.choose`). Nothing outside this wing asks which place it has."""
