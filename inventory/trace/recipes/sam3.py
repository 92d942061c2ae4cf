"""sam3: the recipe's own `Sam3Module` (apple/coreai-models models/sam3/export.py).

`Sam3Module.__init__` calls `transformers.Sam3Model.from_pretrained("facebook/sam3")`, a gated
checkpoint not reachable offline. The adapter makes an instance of the recipe's class without its
`__init__` and gives it a `Sam3Model(Sam3Config())` built on the meta device, so the graph is the
recipe's own `forward` (its 5-tuple) around the same transformers class. `reference_inputs()`
reads the gated processor for `input_ids`: the registry states the ids used.
"""

from __future__ import annotations

from pathlib import Path

from inventory.trace.recipes import Builder, entry_point, example_inputs, on_cpu
from inventory.trace.recipes.parakeet import _shapes
from inventory.trace.targets import TraceTarget


def build(root: Path, builder: Builder, dtype: str) -> TraceTarget:
    import torch
    import transformers

    wrapper = entry_point(root, builder)
    module = wrapper.__new__(wrapper)
    torch.nn.Module.__init__(module)
    with torch.device("meta"):
        module._model = transformers.Sam3Model(transformers.Sam3Config(**builder.kwargs))
    module.eval()
    module.to(getattr(torch, dtype))
    module, inputs = on_cpu(module, example_inputs(builder))
    notes = (
        f"The recipe's own {builder.call} and forward (models/sam3/export.py), whose "
        "__init__ loads the gated facebook/sam3 checkpoint: the instance is made without "
        "it and holds transformers.Sam3Model(Sam3Config()) built on the meta device "
        "(ASSUMPTION: facebook/sam3's config.json could not be read; Sam3Config() defaults "
        f"give 840.4M parameters, the model card says 848M), then .eval(), .to({dtype}) as "
        "create_sam3() does, moved to uninitialised CPU storage. ASSUMPTION: input_ids "
        "length 3 (start, 'dummy', end: CLIP BPE makes 'dummy' one token); the recipe reads "
        "it from the gated processor. Example inputs: " + _shapes(inputs) + "."
    )
    return TraceTarget(
        module=module, args=(), kwargs=inputs, dtype=dtype, packages=("transformers",), notes=notes
    )
