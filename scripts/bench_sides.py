"""`scripts/bench --sides`: side conversions against distinct sides, counted from the store.

`affected --fix 40`, `plan --to 0.4.3` and `release-notes --from 0.4.1 --to 0.4.3` run one after
the other on an empty result store of their own (the environments of `$INVENTORY_CACHE` reused),
then the store is counted: every probe comparison it holds, each of its two sides converted for
it (`sides.json` says which were; a comparison stored before sides were converted both) or read,
and the distinct sides among them (one probe under one release: its spec and its environment's
packages). `--sides-of STORE` counts a store as it is, running nothing. Asserts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = str(ROOT / ".venv" / "bin" / "inventory")
COMMANDS = (
    ("affected", "--fix", "40"),
    ("plan", "--to", "0.4.3"),
    ("release-notes", "--from", "0.4.1", "--to", "0.4.3"),
)
# result folders that are not probe comparisons
OTHER_KINDS = ("load-", "verify-", "repair-", ".")


@dataclass(frozen=True)
class Counted:
    comparisons: int
    conversions: int
    distinct: int

    @property
    def ratio(self) -> float:
        return self.conversions / self.distinct if self.distinct else 0.0


def _side_identity(spec: dict[str, Any], side: dict[str, Any]) -> str:
    program = {k: v for k, v in spec.items() if k != "checkpoint"}
    return json.dumps(
        [program, side.get("converter"), side.get("packages")], sort_keys=True, default=str
    )


def count(store: Path) -> Counted:
    """The probe comparisons of `store`, the side conversions they took and the distinct sides."""
    comparisons = conversions = 0
    distinct: set[str] = set()
    results = store / "results"
    for folder in sorted(results.iterdir()) if results.is_dir() else []:
        if folder.name.startswith(OTHER_KINDS):
            continue
        try:
            record = json.loads((folder / "result.json").read_text())
            spec, old, new = record["spec"], record["old"], record["new"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        comparisons += 1
        try:
            made = json.loads((folder / "sides.json").read_text())
            conversions += sum(1 for which in ("old", "new") if made[which]["converted"])
        except (OSError, ValueError, KeyError, TypeError):
            conversions += 2  # stored before sides were: both converted for it
        distinct.add(_side_identity(spec, old))
        distinct.add(_side_identity(spec, new))
    return Counted(comparisons, conversions, len(distinct))


def line(counted: Counted) -> str:
    return (
        f"{counted.comparisons} comparisons: {counted.conversions} side conversions for "
        f"{counted.distinct} distinct sides ({counted.ratio:.2f}x)"
    )


def sides_lines(record: Path | None, store_of: Path | None) -> None:
    if store_of is not None:
        print(line(count(store_of)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-sides-") as tmp:
        env = {**os.environ, "INVENTORY_STORE": tmp}
        steps: list[dict[str, Any]] = []
        for command in COMMANDS:
            start = time.perf_counter()
            proc = subprocess.run(
                [INVENTORY, *command], capture_output=True, text=True, env=env, cwd=ROOT
            )
            if proc.returncode not in (0, 1, 3):
                sys.exit(f"failed: inventory {' '.join(command)}\n{proc.stderr}")
            counted = count(Path(tmp))
            seconds = time.perf_counter() - start
            print(f"after {' '.join(command)} ({seconds:.0f} s): {line(counted)}")
            steps.append(
                {
                    "command": " ".join(command),
                    "seconds": round(seconds, 1),
                    "comparisons": counted.comparisons,
                    "conversions": counted.conversions,
                    "distinct_sides": counted.distinct,
                }
            )
    if record is not None:
        record.write_text(json.dumps({"steps": steps}, indent=2) + "\n")
