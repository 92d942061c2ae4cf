"""Small text helpers shared by the renderers."""

from __future__ import annotations


def md_cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|")
