"""The HTML report as a reader sees it: its text with the tags dropped and the entities decoded,
flattened, so a finding is one run of text to look for in every format."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

# wide enough that no table cell wraps: a finding is then one run of text in each format
WIDE = "2000"


def flat(text: str) -> str:
    return " ".join(text.split())


class _Text(HTMLParser):
    """The text a reader of the page sees (entities decoded), tags dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


@dataclass(frozen=True)
class Page:
    raw: str  # the HTML as written
    text: str  # what it shows, flattened

    @classmethod
    def of(cls, raw: str) -> Page:
        parser = _Text()
        parser.feed(raw)
        return cls(raw, flat(" ".join(parser.parts)))

    def bundle_level(self, name: str) -> str | None:
        found = re.search(rf'id="bundle-{re.escape(name)}" data-level="([a-z-]+)"', self.raw)
        return found[1] if found else None
