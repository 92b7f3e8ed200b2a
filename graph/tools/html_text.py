"""Readable text from an HTML page with the standard library only.

Why not a scraping library: none is a dependency, and the agent only needs the running text of
the main content, without scripts, navigation or footers.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

_SKIP = {
    "script",
    "style",
    "noscript",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "template",
    "iframe",
    "select",
    "canvas",
}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "br",
    "tr",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "dd",
    "dt",
    "figcaption",
    "hr",
}
_MAIN = {"main", "article"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip_depth = 0
        self.main_depth = 0
        self.in_title = False
        self.title = ""
        self.all_parts: list[str] = []
        self.main_parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag in _BLOCK:
                self._add("\n")
            return
        if tag in _SKIP:
            self.skip_depth += 1
        elif tag in _MAIN:
            self.main_depth += 1
        elif tag == "title":
            self.in_title = True
        if tag in _BLOCK:
            self._add("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self.skip_depth:
            self.skip_depth -= 1
        elif tag in _MAIN and self.main_depth:
            self.main_depth -= 1
        elif tag == "title":
            self.in_title = False
        if tag in _BLOCK:
            self._add("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        elif not self.skip_depth:
            self._add(data)

    def _add(self, text: str) -> None:
        self.all_parts.append(text)
        if self.main_depth:
            self.main_parts.append(text)


def _tidy(parts: list[str]) -> str:
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def extract_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document; the <main>/<article> part when the page has one."""
    parser = _Extractor()
    parser.feed(markup)
    parser.close()
    main = _tidy(parser.main_parts)
    text = main if len(main) >= 200 else _tidy(parser.all_parts)
    return html.unescape(" ".join(parser.title.split())), text
