"""Small text helpers shared by the renderers."""

from __future__ import annotations

import re
from pathlib import Path


def md_cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|")


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
