"""`inventory repair`: the command. Registered in cli.py like scan.

Exit codes (`inventory/errors.py`): 0 repaired and verified (OUT written), 2 refused: usage, a
bundle that cannot be read, OUT exists, or anything the repair could not verify (one line on
stderr; OUT not written).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inventory.errors import USER_ERRORS, ExitCode
from inventory.options import Json, Quiet
from inventory.output import envelope
from inventory.terminal import err, labelled, out, progress

if TYPE_CHECKING:
    from inventory.repair import RepairReport


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def repair_text(r: RepairReport) -> list[str]:
    loc = r.locations
    w = r.weights["original"]
    before = "; ".join(f"{o.core} {o.describe()}" for o in r.original)
    after = "; ".join(f"{o.core} {o.describe()}" for o in r.repaired)
    return [
        f"repaired     {r.source} -> {r.out}",
        f"locations    {loc['ops']} op and {loc['block_args']} block-argument locations "
        f"rewritten with coreai-core {r.reader} ({_counts(loc['locations_before'])} -> "
        f"{_counts(loc['locations_after'])}); {loc['op_ids_kept']} coreai op ids kept",
        f"producer     {r.producer} (re-saved with coreai-core {r.stamper})",
        f"before       {before}",
        f"after        {after} (every function run on the original's seeded inputs)",
        f"weights      byte-identical: {w['fingerprint']} ({w['constants']} tensors, "
        f"{w['bytes']} bytes) in both, read with {r.weights['read_with']}",
        f"outputs      bit-identical on {r.outputs['runtime']}: {r.outputs['arrays']} array(s) "
        f"of {', '.join(r.outputs['functions'])}, seed {r.outputs['seed']}",
        f"evidence     {r.evidence}",
    ]


def repair_cmd(
    bundle: Annotated[Path, typer.Argument(help="The .aimodel bundle to repair (never written).",
                                           show_default=False)],
    output: Annotated[Path, typer.Option("--out", "-o", help="Where to write the repaired "
                                                             "bundle (must not exist).")],
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Repair a coreai-torch 0.4.0 asset in place of a re-export: rewrite its debug locations
    with the oldest core, re-save it with the next, and write OUT only once it is verified to
    load and run on every runtime in the catalog, with byte-identical weights and bit-identical
    outputs on the original's runtime."""
    from inventory.repair import repair
    from oracle.envs import load_catalog, python_ok

    try:
        python_ok()
        with progress(not quiet and not as_json) as report_progress:
            report = repair(bundle, output, load_catalog(), report_progress)
    except USER_ERRORS as exc:
        # Refused, not failed: nothing was written, and the line says what could not be shown.
        if as_json:
            print(envelope("repair", error=str(exc)))
        err.print(labelled("refused:", "red", str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.USAGE) from None
    if as_json:
        print(envelope("repair", json.loads(json.dumps(asdict(report), default=str))))
    else:
        for line in repair_text(report):
            out.print(line, highlight=False, soft_wrap=True)
