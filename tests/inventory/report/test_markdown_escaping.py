"""A value from data (a bundle's name, a record's title, a reason quoting foreign text) renders as
that literal text in the markdown: no tag, comment, link, image, emphasis or code span of its own
survives, wherever a renderer puts it. Checked by rendering with a real markdown library
(Python-Markdown, which mkdocs brings); a whole page of hostile names through the real CLI is
tests/reliability/test_reliability_inputs.py."""

from __future__ import annotations

import pytest
from pages import Page, flat

from inventory.report.text import md_code, md_line, md_text

pytest.importorskip("markdown")

HOSTILE = (
    "<script>alert(1)</script>",
    "<!-- the rest of the page is hidden",
    "[click](javascript:alert(1))",
    "![pixel](https://evil.example/p.png)",
    "<https://evil.example>",
    "<img src=x onerror=alert(1)>",
    "*bold* and _emphasis_ and __strong__",
    "`code` and ``more``",
    "a | b | c",
    "# a heading",
    "- a list item",
    "> a quote",
    "1. a numbered item",
    "back\\slash \\[escaped\\]",
    "&lt;script&gt; and &amp; as written",
    "two\nlines",
)


# where a renderer puts a value, and the tags its own markup makes there: inside a line it began
# (`md_text`), or at the start of a line or a list item (`md_line`)
PLACES = {
    "paragraph": (md_text, "a paragraph: {} (and after)", {"p"}),
    "cell": (md_text, "| h |\n|---|\n| {} |", {"table", "thead", "tbody", "tr", "th", "td"}),
    "bold": (md_text, "**x {}**", {"p", "strong"}),
    "after a list item's label": (md_text, "- label: {}", {"ul", "li"}),
    "line": (md_line, "{}", {"p"}),
    "after a heading": (md_line, "## {}", {"h2"}),
    "list item": (md_line, "- {}", {"ul", "li"}),
}


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("place", PLACES)
def test_a_value_from_data_renders_as_its_literal_text(value: str, place: str):
    escape, where, own = PLACES[place]
    page = Page.of_markdown(where.format(escape(value)))
    assert {tag for tag, _ in page.tags} <= own, (value, page.tags)
    assert not page.comments, value
    assert flat(value) in page.text, (value, page.text)


@pytest.mark.parametrize("value", ["a`b", "``x``", "`lead", "<b>x</b> *y*"])
def test_a_code_span_holds_any_value_verbatim(value: str):
    page = Page.of_markdown(f"| h |\n|---|\n| {md_code(value, cell=True)} |")
    assert [tag for tag, _ in page.tags].count("code") == 1, page.tags
    assert value in page.text, (value, page.text)


def test_a_pipe_in_a_code_span_in_a_cell_is_escaped():
    # GitHub's tables end a cell at a `|` even inside a code span unless it is escaped
    # (Python-Markdown's do not, so this is the rule itself rather than a rendering)
    assert md_code("p|q", cell=True) == "`p\\|q`"
    assert md_code("p|q") == "`p|q`"
