"""The registry reference (docs/reference/registry.md) documents the keys the parser takes, no
more and no fewer: `[bundles.NAME.verify]`, `[bundles.NAME.verify.run]` and
`[bundles.NAME.recipe.builder]`, each against the key set its reader refuses others by. The
page once documented `build` where a recipe-built bundle takes `kwargs` and `inputs`, and left
`search_path` out."""

from __future__ import annotations

import re

from docs_examples import ROOT

from inventory.registry import VERIFY_KEYS, VERIFY_RUN_KEYS
from inventory.trace.recipes import BUILDER_KEYS

PAGE = ROOT / "docs" / "reference" / "registry.md"


def _documented(heading: str) -> set[str]:
    """The keys named in the first cell of each row of the table under `heading` (up to the
    next heading)."""
    text = PAGE.read_text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n#", start + len(heading) + 2)
    section = text[start : end if end >= 0 else len(text)]
    keys: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| key ", "|---")):
            keys.update(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


def test_the_verify_tables_document_the_keys_the_registry_takes():
    assert _documented("## `[bundles.NAME.verify]`") == set(VERIFY_KEYS)
    assert _documented("### `[bundles.NAME.verify.run]`") == set(VERIFY_RUN_KEYS)


def test_the_builder_table_documents_the_keys_the_builder_takes():
    heading = "## `[bundles.NAME.recipe]` and `[bundles.NAME.recipe.builder]`"
    assert _documented(heading) == set(BUILDER_KEYS)
