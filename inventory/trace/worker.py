"""Trace one target in a subprocess: export it through the converter's decomposition table.

Run as `python -m inventory.trace.worker TARGET [CONVERTER_SITE_PACKAGES]`. The converter's
site-packages is appended to sys.path (after this environment's own packages) only so that
`coreai_torch.get_decomp_table()` decomposes the graph exactly as the recipe's export does;
nothing else of the converter is used here. Prints one JSON document on stdout.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import sys
from collections import Counter
from dataclasses import asdict


def main(argv: list[str]) -> int:
    target_ref = argv[0]
    site = argv[1] if len(argv) > 1 else ""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the models print must not reach the JSON stream
    import torch

    from inventory.trace.detect import detect, detected_kinds, group

    mod_name, _, fn_name = target_ref.partition(":")
    target = getattr(importlib.import_module(mod_name), fn_name or "build")()
    ep = torch.export.export(target.module, target.args, kwargs=target.kwargs, strict=False)
    if site:
        sys.path.append(site)
        import coreai_torch

        ep = ep.run_decompositions(coreai_torch.get_decomp_table())
        decomp = f"coreai_torch {md.version('coreai-torch')} get_decomp_table()"
    else:
        ep = ep.run_decompositions()
        decomp = "torch default decompositions"
    nodes = list(ep.graph.nodes)
    ops = Counter(str(n.target) for n in nodes if n.op == "call_function")
    packages = {"torch": md.version("torch")}
    for dist in target.packages:
        packages[dist] = md.version(dist)
    found = group(detect(nodes))
    json.dump({
        "target": target_ref,
        "dtype": target.dtype,
        "notes": target.notes,
        "decompositions": decomp,
        "packages": packages,
        "aten_ops": sum(ops.values()),
        "detected": detected_kinds(),
        "instances": [asdict(g) for g in found],
    }, protocol)
    protocol.write("\n")
    protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
