"""mimi: the recipe's own `MimiDecoderStep` (conversion/pocket-tts/export_mimi_decoder.py) with
`--upsample outer --fold-quantizer --graph-state`.

The recipe's `main()` takes `mimi` from `TTSModel.load_model()`, which downloads Kyutai's weights
from the hub; offline, the adapter builds the same modules with pocket-tts's own `build_mimi`
over its `english.yaml` (no weights), and passes fold tensors of the recipe's shapes (their values
come from the same hub model and do not shape the graph). The example inputs are the recipe's:
a [1,32] latent and its own `init_state(dtype)`.
"""

from __future__ import annotations

from pathlib import Path

from inventory.trace.recipes import Builder, entry_point, example_inputs, load, on_cpu
from inventory.trace.recipes.parakeet import _shapes
from inventory.trace.targets import TraceTarget

# `--fold-quantizer`: the shapes main() reads off the hub model (flow_lm.emb_std, emb_mean,
# mimi.quantizer.output_proj.weight); values are irrelevant to the graph.
FOLD_SHAPES = {"emb_std": [32], "emb_mean": [32], "proj_w": [512, 32, 1]}


def build(root: Path, builder: Builder, dtype: str) -> TraceTarget:
    import torch

    from inventory.trace.targets.mimi import load_mimi

    step_class = entry_point(root, builder)
    recipe = load(root, builder)
    torch_dtype = getattr(torch, dtype)
    mimi = load_mimi(device="meta")
    with torch.device("meta"):
        fold = {name: torch.zeros(shape) for name, shape in FOLD_SHAPES.items()}
        module = step_class(mimi, fold_front=fold, **builder.kwargs).eval()
    module = module.to(torch_dtype)
    inputs = {**example_inputs(builder), **recipe.init_state(torch_dtype)}
    module, inputs = on_cpu(module, inputs)
    notes = (
        f"The recipe's own module: {builder.described()} with fold_front tensors of the "
        f"recipe's shapes ({FOLD_SHAPES}); its `mimi` argument is pocket-tts's MimiModel "
        "built by pocket-tts's own build_mimi over the wheel's english.yaml on the meta "
        "device, where the recipe's main() loads TTSModel.load_model() from the hub (not "
        "reachable offline; the pocket-tts version is not pinned by the recipe). Cast with "
        f".to({dtype}), moved to uninitialised CPU storage. Example inputs: the recipe's "
        "latent and its init_state(): " + _shapes(inputs) + "."
    )
    return TraceTarget(
        module=module, args=(), kwargs=inputs, dtype=dtype, packages=("pocket-tts",), notes=notes
    )
