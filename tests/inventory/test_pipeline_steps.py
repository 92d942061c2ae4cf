"""The recipes' export pipelines, as the registry records them, against the probes.

A probe is exported the way `oracle/workers/probe_worker.py` converts it (positional inputs, grad
on,
`add_exported_program`) and the way each recipe's pipeline does (`[bundles.X.pipeline]`: keyword
inputs; `torch.no_grad()` in coreai-models' export_to_coreai; sam3's `torch.autocast("cpu",
float16)`; `add_pytorch_module` without externalisation), under the bundle's exporter release. A
step that changed the aten graph or either program would have to be applied to the probes; this
test is what says none does, for every probe of the registry (and that the check can see a step
that does change a graph). `remove_functionalization` rewrites auto-functionalized nodes only:
their count must be 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.instances import instance_spec
from inventory.registry import exporter_release, load_registry
from oracle.catalog.releases import load_catalog
from oracle.compare.spec import ProbeSpec
from oracle.constructs import has_probe

BUNDLES = {b.name: b for b in load_registry()}


def steps_of(name: str) -> dict[str, str]:
    export = BUNDLES[name].export
    return {"grad": export["grad"], "autocast": export.get("autocast", ""), "api": export["api"]}


def run(pool, env, spec: ProbeSpec, steps: dict[str, str], out: Path) -> dict:
    answer = pool.worker(env).call(
        {"op": "pipeline", "spec": spec.to_json(), "steps": steps, "out": str(out)}
    )
    assert answer["ok"], answer
    return answer


def test_every_bundle_records_its_export_pipeline():
    for name, bundle in BUNDLES.items():
        export = bundle.export
        assert export["grad"] in ("no_grad", "enabled") and export["api"] in (
            "add_pytorch_module",
            "add_exported_program",
        ), name
        assert export["names"]["inputs"] and export["names"]["outputs"], name
        assert export["source"] and export["remove_functionalization"], name
    assert steps_of("sam3") == {
        "grad": "enabled",
        "autocast": "float16",
        "api": "add_exported_program",
    }
    assert BUNDLES["mimi"].export["names"]["states"][:4] == ["up_p", "kv0", "kv1", "offset"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_no_recipe_export_step_changes_what_the_converter_sees_of_a_probe(
    name, env, pool, tmp_path
):
    bundle = BUNDLES[name]
    converter, _ = exporter_release(bundle.exporter, load_catalog())
    specs = [instance_spec(bundle, i) for i in bundle.instances if has_probe(i.kind)]
    assert specs
    differing = []
    for n, spec in enumerate(specs):
        answer = run(pool, env(converter), spec, steps_of(name), tmp_path / f"p{n}")
        if (
            not (
                answer["aten_identical"]
                and answer["emitted_identical"]
                and answer["shipped_identical"]
            )
            or answer["auto_functionalized"]
        ):
            differing.append((spec.label(), answer))
    assert differing == []


@pytest.mark.slow
def test_an_autocast_entered_around_torch_export_is_not_traced(env, pool, tmp_path):
    """Why sam3's autocast changes nothing: torch.export does not trace an autocast context
    entered outside the exported call. Eager, the same fp32 transposed convolution computes in
    fp16 under it; exported, the graph inserts no cast (only the recorded fake value says fp16,
    and run_decompositions, which every pipeline runs, re-traces it to the graph's real fp32),
    and the converted programs are the ones without autocast."""
    import torch

    spec = ProbeSpec(
        "conv_transpose",
        {
            "dim": 1,
            "in_channels": 8,
            "out_channels": 4,
            "kernel": [4],
            "stride": [2],
            "padding": [0],
            "output_padding": [0],
            "input_shape": [1, 8, 6],
        },
    )
    conv = torch.nn.ConvTranspose1d(8, 4, 4, 2)
    with torch.autocast("cpu", dtype=torch.float16):
        assert conv(torch.randn(1, 8, 6)).dtype == torch.float16  # eager: autocast acts
        ep = torch.export.export(conv, (torch.randn(1, 8, 6),))
    (node,) = [n for n in ep.graph.nodes if n.op == "call_function"]
    assert (
        node.meta["val"].dtype == torch.float16 and node.args[0].meta["val"].dtype == torch.float32
    )  # recorded as fp16, but no cast in the graph
    (node,) = [n for n in ep.run_decompositions().graph.nodes if n.op == "call_function"]
    assert node.meta["val"].dtype == torch.float32
    answer = run(
        pool,
        env("0.4.1"),
        spec,
        {"grad": "no_grad", "autocast": "float16", "api": "add_pytorch_module"},
        tmp_path,
    )
    assert answer["aten_identical"] and answer["emitted_identical"]
    assert "aten.convolution.default" in (tmp_path / "aten.recipe.txt").read_text()
