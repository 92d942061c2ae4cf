"""Run once when the held torch is installed, in the background (`oracle/envs/bytecode.py`),
by the tool's own interpreter with the held torch's folder first on its path; never imported by
the tool. What a worker does with torch alone, on a tiny module (exported, its decompositions
run), so that the interpreter writes the bytecode of the torch modules every environment's
worker imports, once, beside the files every environment shares. The converter's own modules
are each environment's warm-up's (`warm_up.py`). Its last line says how many of the held torch's
modules it compiled, or where it stopped.

    python -I warm_up_torch.py TORCH_SITE
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

_BEGAN = time.time()


def compiled_since(began: float, under: Path) -> int:
    """How many modules loaded from files under `under` have bytecode written since `began`
    (by this process, or by another one beside it)."""
    count = 0
    for module in list(sys.modules.values()):
        cached = getattr(module, "__cached__", None)
        source = getattr(module, "__file__", None)
        if not isinstance(cached, str) or not isinstance(source, str):
            continue
        if not Path(source).resolve().is_relative_to(under):
            continue
        try:
            if os.stat(cached).st_mtime >= began:
                count += 1
        except OSError:
            pass
    return count


def main(site: Path) -> int:
    sys.path.insert(0, str(site))
    import torch
    import torch.export

    if not Path(torch.__file__).resolve().is_relative_to(site):
        print(f"warm-up stopped: torch was imported from {torch.__file__}, not {site}")
        return 1

    class Tiny(torch.nn.Module):
        """The module `warm_up.py` converts: a transposed convolution, a layer norm, a
        division."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.ConvTranspose1d(2, 2, 3, stride=2)
            self.norm = torch.nn.LayerNorm(2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norm(self.conv(x).transpose(1, 2)) / 2

    torch.export.export(Tiny().eval(), (torch.randn(1, 2, 4),)).run_decompositions()
    print(f"{compiled_since(_BEGAN, site)} modules of the held torch compiled")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(Path(sys.argv[1]).resolve()))
    except Exception as exc:  # noqa: BLE001 - what ran has its bytecode; nothing else matters
        print(f"warm-up stopped: {type(exc).__name__}: {exc}"[:300])
        sys.exit(1)
