"""The asset probe's `HOLDS`: the library's constructs its module is built of, which attribution
credits a change of the probe to (a lowering record naming one of them can change its program).

Bisection of 0.4.1 -> 0.4.2 saw #54's fp16 batch norm commit change the fp16 asset probe, and no
record explained it: the probe was taken for a container only. This test keeps `HOLDS` what the
detectors find in the probe's exported graph, in both dtypes the release notes probe it in: a
construct added to the probe, or a detector that learns to see one of its ops, fails here until
`HOLDS` says so. Torch export only (no converter environment): fast tier.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from inventory.trace.detect import detect
from oracle.workers import asset_probe


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_detectors_find_exactly_what_the_asset_probe_says_it_holds(dtype: str):
    probe = asset_probe.build({"params": dict(asset_probe.DEFAULT_PARAMS), "dtype": dtype})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(probe.module, tuple(probe.inputs.values()))
        nodes = list(ep.run_decompositions().graph.nodes)
    found = {f.kind for f in detect(nodes)}
    assert found == set(asset_probe.HOLDS)
