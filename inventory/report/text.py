"""Small text helpers shared by the renderers."""

from __future__ import annotations

import re
from pathlib import Path

# What markdown (CommonMark, GitHub's) reads as markup inside a line of text: the HTML a page
# would run or hide the rest behind (`<script>`, `<!--`), links and images (`[`, `]`), emphasis,
# code spans, a table cell's end, and an escape itself. `_` is emphasis only at a word's edge
# (`lfm_audio` is plain text), so only that one is escaped.
_MARKUP = re.compile(r"[\\`*\[\]|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# `<` opens every tag, comment and autolink; `&` an entity (`&lt;` in data stays that text)
_ENTITY = {"&": "&amp;", "<": "&lt;"}
# where a value begins a line or a list item, what would open a block there: a heading (`# `;
# `#54` is none and is left for the upstream links, `link_upstream`), a list item or a rule (`-`,
# `+`, `1. `), a quote (`>`: inside a line, as in `0.4.1->0.4.2`, it is plain text)
_BLOCK = re.compile(r"^(?:#{1,6}(?=\s|$)|[-+>]|\d{1,9}(?=[.)](?:\s|$)))")


def md_text(value: object) -> str:
    """A value from data (a bundle's name, a record's title, a reason quoting foreign text) as
    markdown that renders as that literal text, on one line, inside a line the renderer began: in
    a table cell, after a label. The renderer's own markup is never passed through it; a value
    that begins a line or a list item is `md_line`'s."""
    text = " ".join(str(value).splitlines())
    text = "".join(_ENTITY.get(c, c) for c in text)
    return _MARKUP.sub(lambda m: "\\" + m[0], text)


def md_line(value: object) -> str:
    """`md_text` of a value that begins a line or a list item, where its first characters could
    open a block (a heading, a list, a quote)."""
    # a digit's list marker is its `.` or `)`, anything else is its first character
    return _BLOCK.sub(lambda m: m[0] + "\\" if m[0][0].isdigit() else "\\" + m[0], md_text(value))


def md_code(value: object, cell: bool = False) -> str:
    """A value from data as a markdown code span (a path, a probe's id): shown verbatim, since
    nothing inside a code span is markup; fenced by more backticks than it holds in a row. In a
    table cell (`cell`) a `|` still ends the cell, code span or not, unless escaped."""
    text = " ".join(str(value).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    if cell:
        text = text.replace("|", "\\|")
    return f"{fence}{pad}{text}{pad}{fence}"


def html_text(value: object) -> str:
    """A value from data inside the raw HTML a markdown page holds (`<summary>`): escaped as
    HTML, since markdown's own escapes are not read there."""
    import html

    return html.escape(str(value), quote=False)


# `#N` in prose: GitHub links it to the *host* repository's own tracker, so a document pasted into
# a release page names the converter's own pull request instead
_REF = re.compile(r"(?<![\w/\[#&])#(\d+)\b")


# the converter's repository: a numbered record whose own upstream names no GitHub address is
# that repository's pull request of its number (as the HTML and CycloneDX reports take it)
CONVERTER_REPO = "apple/coreai-torch"


def link_upstream(text: str, upstream: dict[str, str]) -> str:
    """Every `#N` as `[owner/repo#N](its pull request)`: the address the answer's fix records
    give it, else the converter's repository's pull request N (never a bare `#N`)."""

    def link(m: re.Match[str]) -> str:
        url = upstream.get(m[1], "")
        if not url.startswith("https://github.com/"):
            url = f"https://github.com/{CONVERTER_REPO}/pull/{m[1]}"
        owner, repo = (url.removeprefix("https://github.com/").split("/") + ["", ""])[:2]
        return f"[{owner}/{repo}#{m[1]}]({url})"

    return _REF.sub(link, text)


def upstream_links(fixes: Path | None = None) -> dict[str, str]:
    """fix id -> its upstream URL, from the fix records the answer read (`--fixes`; the
    packaged database when None); none when they cannot be read."""
    from oracle.catalog import FIXES_FILE, FixError, load_fixes

    try:
        return {f.id: f.upstream for f in load_fixes(fixes or FIXES_FILE) if f.upstream}
    except FixError:
        return {}


def for_release_page(markdown: str, fixes: Path | None = None) -> str:
    """Markdown as pasted into a release page or a ticket: upstream references linked as the
    answer's own fix records (`fixes`) name them, evidence named relative to the store
    (`$INVENTORY_STORE/...`), never by this machine's absolute paths."""
    from oracle.infra import portable

    return link_upstream(portable(markdown), upstream_links(fixes))
