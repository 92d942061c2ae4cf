"""The HTML report (or a markdown document, rendered) as a reader sees it: its text with the tags
dropped and the entities decoded, flattened, so a finding is one run of text to look for in every
format; and the tags and comments a browser would take from it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

# wide enough that no table cell wraps: a finding is then one run of text in each format
WIDE = "2000"


def flat(text: str) -> str:
    return " ".join(text.split())


class _Text(HTMLParser):
    """The text a reader of the page sees (entities decoded), tags dropped; and the tags and
    comments a browser would take from it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


@dataclass(frozen=True)
class Page:
    raw: str  # the HTML as written
    text: str  # what it shows, flattened
    tags: tuple[tuple[str, dict[str, str | None]], ...] = ()  # each start tag, in order
    comments: tuple[str, ...] = ()

    @classmethod
    def of(cls, raw: str) -> Page:
        parser = _Text()
        parser.feed(raw)
        return cls(raw, flat(" ".join(parser.parts)), tuple(parser.tags), tuple(parser.comments))

    @classmethod
    def of_markdown(cls, text: str) -> Page:
        """A markdown document as its reader sees it rendered (Python-Markdown with tables, the
        renderer mkdocs brings)."""
        import markdown

        return cls.of(markdown.markdown(text, extensions=["tables"]))

    @property
    def links(self) -> set[str | None]:
        return {attrs.get("href") for tag, attrs in self.tags if tag == "a"}

    def bundle_level(self, name: str) -> str | None:
        found = re.search(rf'id="bundle-{re.escape(name)}" data-level="([a-z-]+)"', self.raw)
        return found[1] if found else None
