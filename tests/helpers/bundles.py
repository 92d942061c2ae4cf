"""Bundles the tests make: a minimal one on disk (its files only, for the checks that run before
any core is asked), the nested-module asset a release writes, and the in-environment script that
converts a small module into a saved `.aimodel`."""

from __future__ import annotations

from pathlib import Path

from oracle.clients.worker_pool import Pool
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.workers import asset_probe


def minimal_bundle(folder: Path) -> Path:
    """A bundle whose files repair checks before anything runs (no converter needed)."""
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text('{"assetVersion": "2.0"}')
    (folder / "main.mlirb").write_bytes(b"ML\xefR" + b"\0" * 16)
    return folder


def export(env, version: str, out: Path) -> Path:
    """The asset probe (nested modules), as the given release writes it."""
    spec = ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), "float32", Pipeline())
    with Pool(out / "logs") as pool:
        answer = pool.worker(env(version)).call(
            {"op": "convert", "spec": spec.to_json(), "out": str(out / version)}
        )
    assert answer["ok"], answer
    return Path(answer["files"]["asset"])


# Runs inside a converter environment: convert small modules and save them as bundles, the way
# a recipe does (torch.export, the converter's decomposition table, to_coreai, optimize, save).
CONVERT = r'''
import sys
from pathlib import Path

import coreai_torch
import torch
from coreai_torch import TorchConverter


class BatchNorms(torch.nn.Module):
    """Two identical batch norms (one body after optimize) and one on another shape."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.BatchNorm2d(4)
        self.b = torch.nn.BatchNorm2d(4)
        self.c = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.b(torch.relu(self.a(x)))
        return self.c(y.reshape(1, 8, 4, 8))


class ConvBatchNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(x))


class Upsampler(torch.nn.Module):
    """A conv transpose and a group norm over a dynamic length."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose1d(4, 2, 4, stride=2, padding=1)
        self.norm = torch.nn.GroupNorm(1, 2)

    def forward(self, x):
        return self.norm(self.up(x))


def trained(module, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            if t.is_floating_point():
                data = torch.randn(t.shape, generator=gen)
                t.copy_(data.abs() + 0.5 if name.endswith("running_var") else data)
    return module.eval()


MODELS = {
    "batchnorms": (BatchNorms, (1, 4, 8, 8), None),
    "convbn": (ConvBatchNorm, (1, 3, 8, 8), None),
    "upsampler": (Upsampler, (1, 4, 16), {2: (4, 64)}),
}


def convert(kind, seed, out):
    cls, shape, dynamic = MODELS[kind]
    module = trained(cls(), seed)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    dims = None
    if dynamic:
        dims = ({axis: torch.export.Dim(f"d{axis}", min=lo, max=hi)
                 for axis, (lo, hi) in dynamic.items()},)
    ep = torch.export.export(module, (x,), dynamic_shapes=dims)
    ep = ep.run_decompositions(coreai_torch.get_decomp_table())
    prog = TorchConverter().add_exported_program(ep).to_coreai()
    if hasattr(prog, "optimize"):  # 0.4.3's to_coreai() returns the optimized program
        result = prog.optimize()
        prog = result if result is not None else prog
    prog.save_asset(out)


for arg in sys.argv[2:]:
    name, kind, seed = arg.split(":")
    convert(kind, int(seed), Path(sys.argv[1]) / f"{name}.aimodel")
'''
