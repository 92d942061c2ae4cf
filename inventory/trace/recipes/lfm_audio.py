"""lfm_audio: the recipe's own `EncoderAdapter(mel_len)`
(conversion/lfm_audio/export_encoder_adapter.py).

The recipe resolves its checkpoint path at import time: `CKPT = hf_snapshot(...)` globs the local
Hugging Face cache and raises FileNotFoundError when the snapshot is absent. The adapter points
HF_HUB_CACHE at a private folder holding an empty placeholder of that file, so the glob finds a
path; nothing is read from it, since `load_weights()` is never called.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from inventory.trace.recipes import Builder, entry_point, example_inputs, on_cpu
from inventory.trace.recipes.parakeet import _shapes
from inventory.trace.targets import TraceTarget

HUB_REPO = "LiquidAI/LFM2.5-Audio-1.5B"
HUB_FILE = "model.safetensors"


def placeholder_cache() -> Path:
    """A Hugging Face cache with one empty snapshot file of the recipe's checkpoint."""
    cache = Path(tempfile.mkdtemp(prefix="inventory-hf-")) / "hub"
    snapshot = cache / f"models--{HUB_REPO.replace('/', '--')}" / "snapshots" / "placeholder"
    snapshot.mkdir(parents=True)
    (snapshot / HUB_FILE).write_bytes(b"")
    return cache


def build(root: Path, builder: Builder, dtype: str) -> TraceTarget:
    import torch

    os.environ["HF_HUB_CACHE"] = str(placeholder_cache())
    adapter = entry_point(root, builder)
    with torch.device("meta"):
        module = adapter(**builder.kwargs).eval()
    module = module.to(getattr(torch, dtype))
    module, inputs = on_cpu(module, example_inputs(builder))
    notes = (
        f"The recipe's own module: {builder.described()}, built on the meta device, cast "
        f"with .to({dtype}), then moved to uninitialised CPU storage. The recipe cannot be "
        f"imported offline as written (CKPT = hf_snapshot('{HUB_REPO}', '{HUB_FILE}') at "
        "import raises FileNotFoundError without the snapshot): HF_HUB_CACHE pointed at a "
        "private cache holding an empty placeholder of that file; nothing is read, since "
        "load_weights() is never called. ASSUMPTION: mel_len comes from an uncommitted "
        "oracle file in main(); the registry's kwargs state the value used. Example input: "
        + _shapes(inputs)
        + "."
    )
    return TraceTarget(module=module, args=(), kwargs=inputs, dtype=dtype, packages=(), notes=notes)
