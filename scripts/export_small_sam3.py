"""Export a small real model with a given coreai-torch release, the way the sam3 recipe does.

The registry's sam3 trace target (transformers `Sam3Model`, the recipe's 5-output wrapper, fp16)
at the small configuration the trace-target tests use (`SAM3_SMALL`), with seeded random weights
on the CPU, exported with `torch.export`, the release's decompositions, `to_coreai()`,
`optimize()` and `save_asset()`. It is no shipped file: it gives `scan` and `repair` a bundle with
a real model's module hierarchy to work on (the examples of docs/commands/repair.md and
scan.md). Needs the `trace` extra.

    .venv/bin/python scripts/export_small_sam3.py 0.4.0 OUT/sam3_float16.aimodel
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

from oracle.envs.environment import ensure_env, site_packages  # noqa: E402


def main(release: str, out: Path) -> None:
    import torch
    from small_configs import SAM3_SMALL

    from inventory.trace.targets import sam3

    sys.path.append(str(site_packages(ensure_env(release).python)))
    import coreai_torch
    from coreai_torch import TorchConverter

    target = sam3.build(device="cpu", config_overrides=SAM3_SMALL, image=224)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in target.module.parameters():
            p.copy_((torch.randn(p.shape, generator=gen) * 0.05).to(p.dtype))
    start = time.perf_counter()
    ep = torch.export.export(target.module, target.args, kwargs=target.kwargs, strict=False)
    ep = ep.run_decompositions(coreai_torch.get_decomp_table())
    prog = TorchConverter().add_exported_program(ep).to_coreai()
    if hasattr(prog, "optimize"):  # 0.4.3's to_coreai() returns the optimized program
        result = prog.optimize()
        prog = result if result is not None else prog
    shutil.rmtree(out, ignore_errors=True)
    prog.save_asset(out)
    print(f"{out}: coreai-torch {release}, {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
