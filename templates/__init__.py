"""The built-in report templates, installed as the package ``repogym._templates``.

An ``__init__.py`` makes this directory a regular package, which an editable install maps
as it maps ``repogym`` (pyproject.toml); repogym.report.render loads the ``*.md.j2`` beside it.
"""
