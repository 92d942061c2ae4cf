"""What location each op of a converted program carries, as coreai-torch's own debug-location
tests read it (fix record coreai-torch#28): run by `scripts/conformance` with a converter
environment's Python, one process per release.

    <env python> oracle/workers/location_worker.py SPEC_JSON OUT_DIR

Builds the asset probe (`asset_probe.py`) of the spec, exports it with torch's default
decompositions (the upstream tests' `run_decompositions()`), converts it with `TorchConverter()`
as it comes (the release's default location mode: no debug option is passed), and walks every
operation nested in the emitted module (before `optimize()`, the program the tests verify). Each
op's location is counted as `debuginfo` (a `#debuginfo.location`, what 0.4.1 writes and the b2
runtime demands), `fused` (0.4.0's call-stack location) or `other`. Writes
`emitted.located.mlir` (the program printed with its locations) and `locations.json` to OUT_DIR
and prints the same JSON on stdout. A failure is an answer (`ok: false` with its one-line error),
never a traceback on stdout.

It imports no worker code of the stored results (`probe_worker.py`, `program_worker.py`), so adding
it
leaves every stored result's key as it was.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# the location kinds, by what their printed form holds (the upstream tests check the same text)
_KINDS = (("debuginfo", "debuginfo.location"), ("fused", "fused"))


def kind_of(location: str) -> str:
    return next((kind for kind, mark in _KINDS if mark in location), "other")


def _operations(op: Any) -> Iterator[Any]:  # noqa: ANN401 - an MLIR operation of the environment's bindings
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = getattr(inner, "operation", inner)
                yield inner
                yield from _operations(inner)


def read_locations(spec: dict, out: Path) -> dict:
    import torch
    from coreai_torch import TorchConverter

    from oracle.workers import asset_probe
    from oracle.workers.worker_io import mlir_module

    probe = asset_probe.build(spec)
    exported = torch.export.export(probe.module, tuple(probe.inputs.values()))
    program = TorchConverter().add_exported_program(exported.run_decompositions()).to_coreai()
    module = mlir_module(program).operation
    counts = {"debuginfo": 0, "fused": 0, "other": 0}
    examples: dict[str, str] = {}
    for op in _operations(module):
        text = str(op.location)
        kind = kind_of(text)
        counts[kind] += 1
        examples.setdefault(kind, f"{op.name}: {text[:300]}")
    with (out / "emitted.located.mlir").open("w") as f:
        module.print(file=f, enable_debug_info=True)
    return {
        "ok": True,
        "ops": sum(counts.values()),
        "counts": counts,
        "examples": examples,
        "module": kind_of(str(module.location)),
        "files": {"located": str(out / "emitted.located.mlir")},
    }


def main(argv: list[str]) -> int:
    spec, out = json.loads(argv[0]), Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    try:
        answer = read_locations(spec, out)
    except Exception as exc:  # noqa: BLE001 - a failure to convert is an answer
        first = next(iter(str(exc).splitlines()), "")
        answer = {"ok": False, "error": f"{type(exc).__name__}: {first}"}
    (out / "locations.json").write_text(json.dumps(answer, indent=1) + "\n")
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
