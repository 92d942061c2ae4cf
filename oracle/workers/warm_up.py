"""Run once by a new converter environment's python, in the background (`bytecode.py`), never
imported by the tool: what a probe does, on a tiny module (converted, optimized, saved, run), so
that the interpreter writes the bytecode of every module a worker will import. Importing torch
is not enough: `torch.export` imports about 1,200 more modules when it first exports, the
converter its lowerings and coreai-core's compiler its dialects when they first run. A step that
fails here is left: the bytecode of what ran is written, and a real failure is the worker's to
report. Prints one line when a step failed.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import numpy  # noqa: F401 - imported for its bytecode
import safetensors  # noqa: F401
import torch
import torch.export


class _Tiny(torch.nn.Module):
    """A transposed convolution, a layer norm and a division: lowerings most probes use."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.ConvTranspose1d(2, 2, 3, stride=2)
        self.norm = torch.nn.LayerNorm(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x).transpose(1, 2)) / 2


async def _run(asset: Path) -> None:
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    loaded = AIModelAsset.load(asset)
    async with loaded.executable() as model:
        function = model.load_function("main")
        name = list(function.desc.input_names)[0]
        await function({name: NDArray(torch.randn(1, 2, 4).contiguous())})


def main() -> int:
    import coreai.runtime  # noqa: F401
    from coreai_torch import TorchConverter

    exported = torch.export.export(_Tiny().eval(), (torch.randn(1, 2, 4),))
    program = TorchConverter().add_exported_program(exported.run_decompositions()).to_coreai()
    str(program)
    if hasattr(program, "optimize"):  # 0.4.3's to_coreai() returns it optimized already
        program = program.optimize() or program
        str(program)
    with tempfile.TemporaryDirectory() as tmp:
        asset = Path(tmp) / "warm-up.aimodel"
        program.save_asset(asset)
        asyncio.run(_run(asset))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # noqa: BLE001 - what ran has its bytecode; nothing else matters
        print(f"warm-up stopped: {type(exc).__name__}: {exc}"[:300])
        sys.exit(1)
