"""The files of the attacks on the base tip's tests: a shipped test, a lenient one, a
sloppy core."""

from __future__ import annotations

import textwrap

from tests.security._harness import EXAMPLES

SHIPPED_TEST = (EXAMPLES / "bugfix" / "repo" / "tests" / "test_slugify.py").read_text()


# The same test file before the base made it strict: it only asked that no letter be
# dropped, and "dej-vu" keeps one more than the bug's "dj-vu".
LENIENT_TEST = SHIPPED_TEST.replace(
    'assert slugify("Déjà vu") == "deja-vu"', 'assert slugify("Déjà vu") != "dj-vu"'
)


# A fix that handles the accents of the examples one by one: "Déjà vu" -> "dej-vu".
SLOPPY_CORE = textwrap.dedent(
    '''
    """URL slugs from titles."""

    import re


    def slugify(title: str) -> str:
        """Lower-case words joined by hyphens."""
        for accented, plain in (("é", "e"), ("è", "e"), ("û", "u")):
            title = title.replace(accented, plain)
        ascii_only = title.encode("ascii", "ignore").decode()
        words = re.findall(r"[a-z0-9]+", ascii_only.lower())
        return "-".join(words)
    '''
).lstrip()


UP_TO_DATE = "bring the pull request up to date"
