"""The one part of the build pyproject.toml cannot declare: the optional C reader.

``repogym._cjunit`` speeds up JUnit parsing (repogym/junit.py); when it cannot be built
(no C compiler), the install goes on and the pure Python reader is used.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("repogym._cjunit", ["repogym/_cjunit.c"], optional=True)],
)
