"""parakeet: the recipe's own `Encoder(mel_len)` (conversion/parakeet/export_encoder.py).

Offline as written: its module-level imports are numpy and torch, and only `load_weights()` (never
called here) reaches the hub. Built on meta, cast with `.to(dtype)` as `main()` does, then moved
to uninitialised CPU storage.
"""

from __future__ import annotations

from pathlib import Path

from inventory.trace.recipes import Builder, entry_point, example_inputs, on_cpu
from inventory.trace.targets import TraceTarget


def build(root: Path, builder: Builder, dtype: str) -> TraceTarget:
    import torch

    encoder = entry_point(root, builder)
    with torch.device("meta"):
        module = encoder(**builder.kwargs).eval()
    module = module.to(getattr(torch, dtype))
    module, inputs = on_cpu(module, example_inputs(builder))
    notes = (
        f"The recipe's own module: {builder.described()}, built on the meta device, "
        f"cast with .to({dtype}) as main() does, then moved to uninitialised CPU storage; "
        "load_weights() (the hub checkpoint) is never called, so no weight is read. "
        "Example input as main()'s bucket: " + _shapes(inputs) + "."
    )
    return TraceTarget(module=module, args=(), kwargs=inputs, dtype=dtype, packages=(), notes=notes)


def _shapes(inputs: dict) -> str:
    return ", ".join(
        f"{k} {list(v.shape)} {str(v.dtype).removeprefix('torch.')}" for k, v in inputs.items()
    )
