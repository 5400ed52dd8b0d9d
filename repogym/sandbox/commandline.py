"""The program a shell command line starts with, read as the shell will read it: what the
seal shows of a program named by its path (repogym.sandbox.seal), what the preflight
checks and what a run that did not find it blames (repogym.run.notfound)."""

from __future__ import annotations

import re
import shlex

__all__ = ["SHELL_WORDS", "first_program"]

# Words the shell runs itself: no program is looked for (dash's and bash's builtins and
# keywords that may start a command).
_SHELL_WORDS = """! { } ( ) [ [[ . : alias bg break case cd command continue do done echo
elif else esac eval exec exit export false fg fi for getopts hash if in jobs kill local
printf pwd read readonly return set shift source test then times trap true type ulimit umask
unalias unset until wait while"""
SHELL_WORDS = frozenset(_SHELL_WORDS.split())
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_EXPANDS = frozenset("$`*?[~")


def first_program(command: str) -> str | None:
    """The program ``command`` starts with, as the shell will look it up: its first word
    after any ``NAME=value`` assignments; None when that is a shell builtin or keyword,
    punctuation, or a word the shell expands (``$X``, a glob), or the command does not
    parse."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: the shell will say so itself
        return None
    for word in words:
        if not _ASSIGNMENT.match(word):
            break
    else:
        return None
    if word in SHELL_WORDS or not word or set(word) & _EXPANDS:
        return None
    if set(word) <= set(lexer.punctuation_chars):
        return None
    return word
