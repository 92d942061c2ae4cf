"""The exporter x runtime load matrix: the asset probe (nested modules) as each coreai-torch
release of the catalog writes it, loaded and run on each runtime of the catalog, per dtype.

Every cell is a stored load check (`oracle/load_check.py`; its folder is printed), so the
matrix in docs/loads.md can be reproduced and its evidence read. Prints the matrix and the first
error line of every refusal; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.catalog.releases import load_catalog, version_key  # noqa: E402
from oracle.catalog.runtimes import cores  # noqa: E402
from oracle.compare.spec import Pipeline, ProbeSpec  # noqa: E402
from oracle.load_check import load_check  # noqa: E402
from oracle.session import Session  # noqa: E402
from oracle.workers import asset_probe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", action="append", help="float32, float16 (default: both)")
    parser.add_argument("--no-cache", action="store_true", help="check again")
    args = parser.parse_args()
    catalog = load_catalog()
    runtimes = cores(catalog)
    releases = sorted(catalog.releases, key=version_key)
    errors: dict[str, str] = {}
    start = time.perf_counter()
    with Session(catalog) as session:
        for dtype in args.dtype or ["float32", "float16"]:
            spec = ProbeSpec(
                asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), dtype, Pipeline()
            )
            print(f"\n{asset_probe.LABEL}, {dtype}: exporter (rows) x runtime (columns)")
            print("| exporter | " + " | ".join(f"coreai-core {c}" for c in runtimes) + " |")
            print("|---|" + "---|" * len(runtimes))
            for release in releases:
                check = load_check(
                    spec, session.env(release), runtimes, session, use_cache=not args.no_cache
                )
                cells = []
                for core in runtimes:
                    o = check.on(core)
                    cell = o.outcome if o else "?"
                    if o is not None and o.signal:
                        cell += f" ({o.signal})"
                    if o is not None and o.error:
                        mark = errors.setdefault(o.error, f"[{len(errors) + 1}]")
                        cell += f" {mark}"
                    cells.append(cell)
                print(f"| {release} | " + " | ".join(cells) + " |")
                print(f"  evidence: {check.evidence}", file=sys.stderr)
    for error, mark in errors.items():
        print(f"{mark} {error}")
    print(f"\n{time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
