"""Render a JSON report (docs/report.md) as Markdown, through Jinja2 templates.

The report is the only input: a report written on one machine renders the same on
another, and what ``repogym grade --markdown`` prints is what the Action posts. The
built-in templates live in the top-level ``templates/`` directory, shipped as the package
``repogym._templates``; ``templates`` (name to source, as :mod:`repogym.report.template_files`
reads a directory) replace them by name (the others are still the built-in ones). A
template is loaded from those sources or the package, never from a path: no include
follows a link or leaves them (issue 19).

When hidden tests ran, a template sees the report as :func:`repogym.report.redact.redacted`
makes it: no text the run produced, only counts and the public ids (issue 19).

Everything in a report may come from the submission (test names, messages, paths, output
tails), so templates write every value through one of three filters (docs/report.md,
"Rendering"): ``md`` for text, ``code`` for an inline code span, ``fence`` for a code
block. This module knows Markdown as GitHub renders it, not GitHub's API.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from repogym.errors import UsageError
from repogym.report.redact import redacted
from repogym.report.schema import template_view
from repogym.shown import escape

__all__ = [
    "DETAILS",
    "LINKS",
    "MAX_BYTES",
    "TEMPLATES",
    "Detail",
    "code",
    "fence",
    "md",
    "render",
    "score",
]

# GitHub's smallest limit among the texts the templates are for: a check run's summary
# holds 65535 characters (a PR comment 65536, a job summary 1 MiB).
MAX_BYTES = 65535

TEMPLATES = ("comment.md.j2", "check_summary.md.j2", "check_text.md.j2", "job_summary.md.j2")


@dataclass(frozen=True, slots=True, kw_only=True)
class Detail:
    """How much a template shows. :func:`render` tries the levels of :data:`DETAILS` in
    order and returns the first text that fits, so a long report loses detail, never
    its layout: nothing is cut in the middle of a table, a tag or a code block."""

    level: int
    messages: int  # messages shown per component
    findings: int  # findings shown per component
    text: int  # characters of one message, finding or name
    tail: int  # characters of an output tail; 0 leaves output tails out

    @property
    def cut(self) -> bool:
        """Whether this level leaves something out, which the template must say."""
        return self.level > 0


DETAILS = (
    Detail(level=0, messages=30, findings=50, text=2000, tail=8000),
    Detail(level=1, messages=20, findings=30, text=1000, tail=4000),
    Detail(level=2, messages=10, findings=20, text=500, tail=2000),
    Detail(level=3, messages=5, findings=5, text=200, tail=0),
    Detail(level=4, messages=0, findings=0, text=100, tail=0),
)


def render(
    report: Mapping[str, Any],
    template: str,
    *,
    templates: Mapping[str, str] | None = None,
    max_bytes: int = MAX_BYTES,
    links: Mapping[str, str] | None = None,
) -> str:
    """``report`` (the dict of ``repogym grade --json``) rendered by ``template``, such
    as ``comment.md.j2``, in at most ``max_bytes`` bytes of UTF-8 (the strictest way to
    count GitHub's limits, which are in characters).

    ``links`` are pages about the grade that the report does not know (the Action
    passes ``check_run``, ``workflow_run`` and one per commit: ``base``, ``merge_base``,
    ``head``); each must be a plain http(s) URL. Templates read them as ``links.NAME``,
    empty when not given.

    ``templates`` (name to source) replace the built-in ones of the same name. A report
    of a grade that could not finish (an ``error`` key) renders too.

    Raises:
        UsageError: the template does not exist, does not parse, uses a value the
            report does not have, fails in any other way (a division by zero, endless
            recursion, memory), or is longer than ``max_bytes`` even at the least
            detail; one line naming the template and how to fix it. A template that
            never ends is not stopped here: :func:`repogym.report.render_process.render_texts`
            renders under a deadline.
    """
    compiled = _template(template, templates)
    context = template_view(redacted(report))
    pages = _links(links or {})
    size = 0
    for detail in DETAILS:
        try:
            text = compiled.render(report=context, detail=detail, max_bytes=max_bytes, links=pages)
        except jinja2.UndefinedError as error:
            raise UsageError(
                f"template {template}: {error.message}; the report has no such value "
                "(docs/report.md lists them)"
            ) from None
        except jinja2.TemplateNotFound as error:  # an include or import of a name not there
            raise UsageError(
                f"template {template}: {error.name} is neither in the template directory nor "
                "a built-in template; name a template beside it"
            ) from None
        except jinja2.TemplateError as error:
            raise UsageError(f"template {template}: {error}") from None
        except Exception as error:  # a bug of the template's: a type it did not expect, 1 // 0
            raise UsageError(f"template {template}: {_exception(error)}") from None
        size = len(text.encode("utf-8", "backslashreplace"))
        if size <= max_bytes:
            return text
    raise UsageError(
        f"template {template}: {size} bytes even at the least detail, over the limit of "
        f"{max_bytes}; show less when `detail.cut` is true"
    )


# The pages a template may link: a plain URL, nothing that could end a Markdown link.
LINKS = ("check_run", "workflow_run", "base", "merge_base", "head")
_URL = re.compile(r"https?://[A-Za-z0-9.\-]+(:[0-9]+)?(/[A-Za-z0-9._~\-/%]*)?")


def _links(links: Mapping[str, str]) -> dict[str, str]:
    """Every name of :data:`LINKS`, empty when not given; a UsageError naming a link
    that is not one."""
    for name, url in links.items():
        if name not in LINKS:
            raise UsageError(f"link {name!r}: not one of {', '.join(LINKS)}")
        if not isinstance(url, str) or not _URL.fullmatch(url):
            raise UsageError(f"link {name}: {url!r} is not a plain http(s) URL")
    return {name: links.get(name, "") for name in LINKS}


def _exception(error: BaseException) -> str:
    """``ZeroDivisionError: integer division or modulo by zero``, on one line."""
    said = " ".join(str(error).split())
    return f"{type(error).__name__}: {said[:200]}" if said else type(error).__name__


def _template(name: str, templates: Mapping[str, str] | None) -> jinja2.Template:
    try:
        return _environment(tuple(sorted((templates or {}).items()))).get_template(name)
    except jinja2.TemplateNotFound:
        where = "neither in the template directory nor among" if templates else "not among"
        raise UsageError(
            f"template {name}: {where} the built-in templates ({', '.join(TEMPLATES)})"
        ) from None
    except jinja2.TemplateSyntaxError as error:
        where = error.filename or error.name or name
        raise UsageError(f"{where}:{error.lineno}: {error.message}") from None
    except Exception as error:  # a template that compiles to too much (deep nesting)
        raise UsageError(f"template {name}: {_exception(error)}") from None


class _Sources(jinja2.BaseLoader):
    """Templates from their sources, by name: nothing is read from a path, so no name
    follows a link or leaves the directory they were read from (issue 19)."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = dict(sources)

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        if template not in self.sources:
            raise jinja2.TemplateNotFound(template)
        return self.sources[template], template, lambda: True

    def list_templates(self) -> list[str]:
        return sorted(self.sources)


@functools.lru_cache(maxsize=8)
def _environment(templates: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    builtin = jinja2.PackageLoader("repogym._templates", ".")
    loader: jinja2.BaseLoader = builtin
    if templates:
        loader = jinja2.ChoiceLoader([_Sources(dict(templates)), builtin])
    # Sandboxed: a template must not reach Python's internals in the process that holds
    # a GitHub token.
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: the filters below escape instead
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(md=md, code=code, fence=fence, score=score)
    return env


# GitHub-flavoured Markdown has no escaping function in any library: markupsafe escapes
# HTML only, and a backslash escape does not stop GitHub's mentions and issue links
# (they are found in the rendered text). So `md` is written here, as one pass over the
# text (a second pass would escape the first one's entities).
#
# Markup characters become numeric entities rather than backslash escapes: an entity is
# literal text in Markdown (CommonMark: it never counts as structure, and a table does
# not split at `&#124;`) and in HTML alike, so `md` is safe in a paragraph, a table cell
# and an HTML block such as `<summary>`. A zero-width space (`&#8203;`, as Dependabot
# writes mentions) breaks what GitHub links in text: `@user`, `@org/team`, `#123`,
# `org/repo#1`, `GH-123`, `https://...`, `www.`, `a@b.c`. A bare run of 7 or more hex
# digits is linked to the commit it abbreviates, if there is one (issue 19): a message
# quoting a sha would link a commit the report did not mean; a zero-width space after
# every 6 digits leaves no run long enough.
# Control characters, bidirectional overrides (which can reorder what a reader sees)
# and lone surrogates (undecodable bytes of a file name) are shown as escapes.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_ZWSP = "&#8203;"
_SHA_KEPT = 6  # hex digits in a row that GitHub does not link
_ENTITY = {c: f"&#{ord(c)};" for c in "\\`*~[]|$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_TOKEN = re.compile(
    r"""
      (?P<newline>\r\n|[\r\n])
    | (?P<entity>[&<>\\`*~\[\]|$])
    | (?P<underscore>_)
    | (?P<link>@|\#(?=\d)|(?i:gh)-(?=\d)|:(?=//)|(?i:www)(?=\.))
    | (?P<sha>(?<![0-9A-Za-z_])[0-9A-Fa-f]{7,}(?![0-9A-Za-z_]))
    | (?P<control>"""
    + _CONTROL.pattern
    + ")",
    re.VERBOSE,
)
# What is markup only at the start of a line: an indented code block, a heading, a list
# item, a setext underline or a thematic break (`*` and `_` are escaped anyway).
_LINE_START = re.compile(
    r"[ \t]+|\#{1,6}(?=[ \t]|$)|[-+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$)|[=-]+[ \t]*$"
)


def md(value: object, limit: int | None = None) -> str:
    """``value`` as text that renders as itself in GitHub Markdown, in a paragraph, a
    list item, a table cell or an HTML block, on one line (line breaks become
    ``<br>``); cut to ``limit`` characters, saying how many more there were. Not for
    HTML attribute values, nor inside a code span or block (use ``code``, ``fence``)."""
    text, more = _cut(str(value), limit)
    escaped = _MD_TOKEN.sub(_md_token, text)
    start = _LINE_START.match(escaped)
    if start:
        lead = "".join(f"&#{ord(c)};" for c in start.group())
        escaped = lead + escaped[start.end() :]
    return escaped + (f" … ({more} more characters)" if more else "")


def _md_token(match: re.Match[str]) -> str:
    token = match.group()
    kind = match.lastgroup
    if kind == "newline":
        return "<br>"
    if kind == "entity":
        return _ENTITY[token]
    if kind == "underscore":
        # `_` inside a word (test_foo_bar) cannot open or close emphasis (CommonMark's
        # flanking rules); escape only the others (__init__), so that most ids stay legible.
        text, at = match.string, match.start()
        inside = 0 < at < len(text) - 1 and text[at - 1].isalnum() and text[at + 1].isalnum()
        return token if inside else "&#95;"
    if kind == "link":
        return token + _ZWSP
    if kind == "sha":
        return _ZWSP.join(token[at : at + _SHA_KEPT] for at in range(0, len(token), _SHA_KEPT))
    return escape(token).replace("\\", "&#92;")


def code(value: object, limit: int | None = None) -> str:
    """``value`` as an inline code span, on one line, cut to ``limit`` characters.

    Inside a code span GitHub links nothing and reads no HTML, so only the backticks
    matter: the span's delimiter is longer than any run of them inside (CommonMark).
    Not for a table cell (a `|` would split it) nor an HTML block: use ``md`` there."""
    text, more = _cut(str(value), limit)
    text = _literal(re.sub(r"\r\n|[\r\n]", " ", text))
    if not text:
        return ""
    delimiter = "`" * (_longest_backticks(text) + 1)
    # One space on each side is stripped from a span that has both: pad when the text
    # begins or ends with a backtick (it would join the delimiter) or with a space.
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    span = f"{delimiter}{pad}{text}{pad}{delimiter}"
    return span + (f" … ({more} more characters)" if more else "")


def fence(value: object, limit: int | None = None) -> str:
    """``value`` as a fenced code block, its last ``limit`` characters when it is longer
    (an output tail's end is what explains a failure), saying how many were cut.

    Nothing inside a code block is Markdown or HTML; only a line of backticks as long
    as the fence could end it, so the fence is longer than any run of backticks inside.
    Write it at the start of a line, after a blank line."""
    text = re.sub(r"\r\n|\r", "\n", str(value)).rstrip("\n")
    if limit is not None and len(text) > limit:
        kept = text[len(text) - limit :]
        # Start at a whole line when there is one in what is kept.
        newline = kept.find("\n")
        if 0 <= newline < len(kept) - 1:
            kept = kept[newline + 1 :]
        text = f"[… {len(text) - len(kept)} characters cut]\n{kept}"
    text = _literal(text)
    fence_ = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence_}text\n{text}\n{fence_}"


def score(value: object, digits: int = 2) -> str:
    """A score with ``digits`` decimals, cut rather than rounded: 0.9988 is 0.99, so that
    1.00 always means 1 (issue 8); ``–`` for a missing score."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    # repr() is the shortest text of the float: 0.29 stays 0.29, not 0.28999...
    return str(Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), ROUND_DOWN))


def _literal(text: str) -> str:
    """``text`` for a code span or block: control characters shown as escapes, and a
    zero-width space inside every ``<!--``, which nothing can escape in code, so that
    the raw text of a comment holds no HTML comment but the marker the Action writes."""
    return _CONTROL.sub(lambda m: escape(m.group()), text).replace("<!--", "<\u200b!--")


def _cut(text: str, limit: int | None) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` and how many more there were."""
    if limit is None or len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
