"""Markdown as GitHub shows it (cmarkgfm, GitHub's own parser), and what a reader sees of it."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options


class Shown(HTMLParser):
    """What a reader of the HTML sees: the tags, the text outside code (where GitHub
    links mentions and issues), the rows of tables, and where a `<details>` broke."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self.items: list[str] = []  # the text of each list item
        self.problems: list[str] = []
        self._code = 0
        self._open_details = 0
        self._cell: list[str] | None = None
        self._item: list[str] | None = None
        self.feed(html)
        self.close()
        if self._open_details:
            self.problems.append(f"{self._open_details} <details> never closed")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("code", "pre"):
            self._code += 1
        elif tag == "details":
            self._open_details += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "li":
            self._item = []
        elif tag == "br":
            self.handle_data("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag != "br":
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self._code -= 1
        elif tag == "details":
            self._open_details -= 1
            if self._open_details < 0:
                self.problems.append("a </details> closes what the template did not open")
                self._open_details = 0
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "li" and self._item is not None:
            self.items.append("".join(self._item).strip("\n"))
            self._item = None

    def handle_data(self, data: str) -> None:
        self._data(data)
        if not self._code:
            self.text.append(data)

    def _data(self, data: str) -> None:
        for part in (self._cell, self._item):
            if part is not None:
                part.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def github_html(markdown: str) -> str:
    # UNSAFE keeps raw HTML, as GitHub's parser does before its sanitizer: what the
    # sanitizer would have to remove is what the test must see.
    html: str = cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE
    )
    return html


# Where GitHub makes a link of text outside code: mentions, issues, bare URLs, a run of
# 7 hex digits or more (a commit's sha, abbreviated or not; issue 19).
LINKED = re.compile(
    r"@[A-Za-z0-9]|#\d|(?i:gh-\d)|(?i:https?|ftp)://|(?i:www)\.|(?<![0-9A-Za-z_])[0-9A-Fa-f]{7,}"
)
