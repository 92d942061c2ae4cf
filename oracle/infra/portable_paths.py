"""Evidence that names no machine.

A command's JSON names where its evidence lies on this machine (`/home/me/.cache/inventory/
results/...`): what a user needs to open it. A document kept in the repository (`evidence/`) is
read on other machines, so before it is written every absolute path in it is made relative to
the root it lies under, and the root is named: the result store (`$INVENTORY_STORE`), the cache
(`$INVENTORY_CACHE`), this checkout (a path relative to its root, `oracle/constructs/pad.py`),
or a repository the caller names (`apple/coreai-torch`). `absolute_paths` finds what is left;
tests/project/test_evidence.py holds every committed evidence file to none.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from oracle.infra.paths import cache_root, store_root

CHECKOUT = Path(__file__).resolve().parents[2]
# A path that starts at a file system root: a slash at the start of a token (not inside a URL,
# a ratio or a relative path) followed by at least two components.
ABSOLUTE = re.compile(r"""(?:^|(?<=[\s"'(=,;\[{<]))/[\w.+-]+/[\w.+-][^\s"'(),;\[\]{}<>\\]*""", re.M)


def roots(named: dict[Path, str] | None = None) -> dict[str, str]:
    """Each root this machine's documents name, with what it is written as: the store, the
    cache, this checkout (written relative, so its label is empty) and the caller's own."""
    found = {
        str(cache_root()): "$INVENTORY_CACHE",
        str(store_root()): "$INVENTORY_STORE",
        str(CHECKOUT): "",
    }
    if store_root() == cache_root():
        found[str(cache_root())] = "$INVENTORY_CACHE"
    for path, label in (named or {}).items():
        found[str(Path(path).resolve())] = label
        found[str(path)] = label  # as given, in case it was printed unresolved
    return dict(sorted(found.items(), key=lambda kv: -len(kv[0])))  # the longest root first


def portable(value: Any, named: dict[Path, str] | None = None) -> Any:
    """`value` (a JSON document, or any part of one) with every path under a known root
    rewritten relative to it."""
    known = roots(named)

    def text(s: str) -> str:
        for root, label in known.items():
            s = s.replace(root + "/", f"{label}/" if label else "")
            s = re.sub(rf"{re.escape(root)}(?![\w.+-])", label or ".", s)
        return s

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, dict):
            return {text(k): walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


def absolute_paths(text: str) -> list[str]:
    """The absolute paths `text` still holds."""
    return [m.group(0) for m in ABSOLUTE.finditer(text)]


def main(argv: list[str] | None = None) -> int:
    """`scripts/portable [--repo PATH=NAME]... < DOCUMENT > evidence/FILE`: a command's output
    (JSON or text) made portable before it is kept as evidence. Exit 1, naming them, if
    absolute paths under no known root are left (pass their root with --repo)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        description=main.__doc__.split("\n\n")[0] if main.__doc__ else None
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="PATH=NAME",
        help="a folder the document names, and what to write it as "
        "(e.g. ~/src/coreai-torch=apple/coreai-torch)",
    )
    args = parser.parse_args(argv)
    named = {}
    for item in args.repo:
        path, sep, name = item.partition("=")
        if not sep or not path or not name:
            parser.error(f"--repo {item!r}: expected PATH=NAME")
        named[Path(path).expanduser()] = name
    out = portable(sys.stdin.read(), named)
    sys.stdout.write(out)
    left = absolute_paths(out)
    if left:
        print(
            f"portable: absolute paths under no known root are left: {sorted(set(left))[:5]}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
