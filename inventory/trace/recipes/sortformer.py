"""sortformer: the recipe's own `ExportWrapper(Sortformer())`
(conversion/sortformer_diar/export_sortformer.py and sortformer_model.py).

Offline as written (no NeMo import): `load_ckpt` (a NeMo checkpoint outside the repository) is
never called. The wrapper takes the core as its argument, so the adapter builds the recipe's
`sortformer_model.Sortformer()` (a sibling module of the recipe file) and hands it over, as
`main()` does.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from inventory.trace.recipes import Builder, entry_point, example_inputs, on_cpu
from inventory.trace.recipes.parakeet import _shapes
from inventory.trace.targets import TraceTarget

CORE_MODULE, CORE_CLASS = "sortformer_model", "Sortformer"


def build(root: Path, builder: Builder, dtype: str) -> TraceTarget:
    import torch

    wrapper = entry_point(root, builder)  # puts the recipe's folder on sys.path
    core_class = getattr(importlib.import_module(CORE_MODULE), CORE_CLASS)
    with torch.device("meta"):
        module = wrapper(core_class().eval(), **builder.kwargs)
    module = module.to(getattr(torch, dtype)).eval()
    module, inputs = on_cpu(module, example_inputs(builder))
    notes = (
        f"The recipe's own module: {builder.described()} around "
        f"{CORE_MODULE}.{CORE_CLASS}() (the recipe's sibling file), built on the meta "
        f"device, cast with .to({dtype}) as main() does, then moved to uninitialised CPU "
        "storage; load_ckpt() (the NeMo checkpoint) is never called. Example inputs as the "
        "recipe's static layout: " + _shapes(inputs) + "."
    )
    return TraceTarget(module=module, args=(), kwargs=inputs, dtype=dtype, packages=(), notes=notes)
