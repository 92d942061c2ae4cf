"""Run once by a new converter environment's python, in the background (`bytecode.py`), never
imported by the tool: what a probe does, on a tiny module (converted, optimized, saved, run), so
that the interpreter writes the bytecode of every module a worker will import. Importing torch
is not enough: `torch.export` imports about 1,200 more modules when it first exports, the
converter its lowerings and coreai-core's compiler its dialects when they first run. A step that
fails here is left: the bytecode of what ran is written, and a real failure is the worker's to
report. Its last line says how many modules it compiled (how many of them the held torch's:
none once the held torch's own warm-up has run, `warm_up_torch.py`), or where it stopped.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

# before the imports below: the bytecode they write is counted
_BEGAN = time.time()

import numpy  # noqa: E402, F401 - imported for its bytecode
import safetensors  # noqa: E402, F401
import torch  # noqa: E402
import torch.export  # noqa: E402


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
    held = Path(torch.__file__).resolve().parent.parent
    print(f"{_compiled(held)} modules compiled, {_compiled(held, only=True)} of the held torch")
    return 0


def _compiled(held: Path, only: bool = False) -> int:
    """How many loaded modules have bytecode written since this process began (by it, or by
    another process beside it); with `only`, those under the held torch's folder."""
    count = 0
    for module in list(sys.modules.values()):
        cached = getattr(module, "__cached__", None)
        source = getattr(module, "__file__", None)
        if not isinstance(cached, str) or not isinstance(source, str):
            continue
        if only and not Path(source).resolve().is_relative_to(held):
            continue
        try:
            if os.stat(cached).st_mtime >= _BEGAN:
                count += 1
        except OSError:
            pass
    return count


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # noqa: BLE001 - what ran has its bytecode; nothing else matters
        print(f"warm-up stopped: {type(exc).__name__}: {exc}"[:300])
        sys.exit(1)
