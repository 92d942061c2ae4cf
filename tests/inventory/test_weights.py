"""`--weights BUNDLE=CKPT.safetensors`: each traced module's probe takes that module's own tensors
from the checkpoint, read lazily by the module paths the registry records, and its verdict is
measured, module by module.

The done-when test of `--weights`: a parakeet checkpoint (its 24 conformer batch norms and their
depthwise convs, named as the recipe module's state_dict) in which one layer has running
variances below fp16's smallest normal.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli import invoke
from safetensors.numpy import save_file

from oracle.infra import checkpoint
from oracle.infra.checkpoint import Checkpoint, TensorSource, WeightsError, instance_tensors

ROOT = Path(__file__).resolve().parents[2]
FP16_TINY = 6.103515625e-05


def parakeet_checkpoint(
    path: Path, tiny_layer: int | None, channels: int = 1024, layers: int = 24
) -> Path:
    """Ordinary running statistics (variances 1e-2..10) in every layer; in `tiny_layer` a quarter
    of the channels' running_var lies below fp16's smallest normal."""
    rng = np.random.default_rng(0)
    tensors = {}
    for i in range(layers):
        var = np.exp(rng.uniform(np.log(1e-2), np.log(10.0), channels))
        if i == tiny_layer:
            var[: channels // 4] = np.exp(
                rng.uniform(np.log(1e-9), np.log(FP16_TINY * 0.6), channels // 4)
            )
        name = f"layers.{i}.conv"
        tensors[f"{name}.norm.running_var"] = var.astype(np.float16)
        tensors[f"{name}.norm.running_mean"] = (rng.standard_normal(channels) * 0.5).astype(
            np.float16
        )
        tensors[f"{name}.norm.weight"] = (1 + rng.standard_normal(channels) * 0.2).astype(
            np.float16
        )
        tensors[f"{name}.norm.bias"] = (rng.standard_normal(channels) * 0.1).astype(np.float16)
        tensors[f"{name}.depthwise_conv.weight"] = (
            rng.standard_normal((channels, 1, 9)) * 0.3
        ).astype(np.float16)
    save_file(tensors, str(path))
    return path


# ---- reading an instance's own tensors ---------------------------------------------------------

SOURCES = {
    "bn.running_var": TensorSource("module", "running_var"),
    "bn.bias": TensorSource("module", "bias", required=False),
    "conv.weight": TensorSource("producer", "weight"),
}


def test_an_instances_tensors_are_found_by_its_module_paths(tmp_path):
    path = tmp_path / "c.safetensors"
    save_file(
        {
            "model.layers.0.norm.running_var": np.ones(4, np.float32),
            "model.layers.0.dw.weight": np.ones((4, 1, 3), np.float32),
        },
        str(path),
    )
    ckpt = Checkpoint(path)
    got = instance_tensors(ckpt, SOURCES, "layers.0.norm", "layers.0.dw", "test")
    # a wrapper's prefix is tolerated; an optional tensor the checkpoint lacks is left out
    assert {k: v["name"] for k, v in got.items()} == {
        "bn.running_var": "model.layers.0.norm.running_var",
        "conv.weight": "model.layers.0.dw.weight",
    }
    assert got["bn.running_var"]["sha256"] == checkpoint.fingerprint(np.ones(4, np.float32))
    assert "conv.weight" not in instance_tensors(ckpt, SOURCES, "layers.0.norm", "", "test")
    with pytest.raises(WeightsError, match=r"no tensor layers.1.norm.running_var \(test\)"):
        instance_tensors(ckpt, SOURCES, "layers.1.norm", "", "test")


def test_two_candidates_for_one_module_are_an_error_not_a_guess(tmp_path):
    path = tmp_path / "c.safetensors"
    save_file(
        {
            "a.norm.running_var": np.ones(2, np.float32),
            "b.norm.running_var": np.ones(2, np.float32),
        },
        str(path),
    )
    with pytest.raises(WeightsError, match="2 tensors end with norm.running_var"):
        Checkpoint(path).find("norm", "running_var")


def test_the_worker_refuses_a_tensor_that_changed_since_planning(tmp_path):
    path = tmp_path / "c.safetensors"
    save_file({"n.running_var": np.ones(2, np.float32)}, str(path))
    ref = {
        "bn.running_var": {
            "name": "n.running_var",
            "sha256": checkpoint.fingerprint(np.ones(2, np.float32)),
        }
    }
    assert checkpoint.load(str(path), ref)["bn.running_var"].tolist() == [1.0, 1.0]
    save_file({"n.running_var": np.full(2, 2.0, np.float32)}, str(path))
    with pytest.raises(WeightsError, match="changed since the probe was planned"):
        checkpoint.load(str(path), ref)


def test_a_probe_built_from_a_checkpoint_holds_those_tensors(tmp_path):
    from oracle.workers import probes

    path = parakeet_checkpoint(tmp_path / "p.safetensors", tiny_layer=0, channels=8, layers=1)
    ckpt = Checkpoint(path)
    from oracle.constructs import get

    tensors = instance_tensors(
        ckpt,
        get("batch_norm").checkpoint,
        "layers.0.conv.norm",
        "layers.0.conv.depthwise_conv",
        "test",
    )
    spec = {
        "construct": "batch_norm",
        "dtype": "float16",
        "values": "checkpoint",
        "seed": 0,
        "params": {
            "dim": 1,
            "channels": 8,
            "length": 16,
            "batch": 1,
            "eps": 1e-5,
            "affine": True,
            "depthwise_kernel": 9,
            "param_dtype": "float16",
        },
        "pipeline": {"decompositions": "coreai", "optimize": True, "shapes": "static"},
        "tensors": tensors,
        "checkpoint": str(path),
    }
    probe = probes.build(spec)
    module: Any = probe.module  # the construct's own module: its parts are typed as Modules
    bn = module.bn
    want = ckpt.read("layers.0.conv.norm.running_var")
    assert (
        bn.running_var.dtype.is_floating_point
        and bn.running_var.numpy().tobytes() == want.tobytes()
    )  # fp16 in the checkpoint, fp16 in the module: the same values
    assert (
        module.conv.weight.detach().numpy() == ckpt.read("layers.0.conv.depthwise_conv.weight")
    ).all()
    assert float(module.conv.bias.detach().abs().max()) == 0.0  # no bias in the file
    assert (bn.running_var.float() < FP16_TINY).sum() == 2


# ---- the done-when test ------------------------------------------------------------------------


@pytest.mark.slow
def test_one_tiny_running_var_layer_is_measured_and_reported_the_others_as_ordinary(
    tmp_path, converter_envs, json_schema
):
    path = parakeet_checkpoint(tmp_path / "parakeet.safetensors", tiny_layer=7)
    proc = invoke(
        "affected",
        "--fix",
        "54",
        "--bundle",
        "parakeet",
        "--weights",
        f"parakeet={path}",
        "--json",
        "-q",
    )
    assert proc.returncode == 1, proc.stderr  # a re-export is required
    document = json.loads(proc.stdout)
    json_schema(document)  # per-module probes: "module", spec "tensors" and "checkpoint"
    bundle = document["result"]["bundles"][0]
    probes = bundle["probes"]
    assert [p["module"] for p in probes] == [f"layers.{i}.conv.norm" for i in range(24)]
    assert bundle["conditions"] == []  # measured, not inferred from a threshold
    ckpt = Checkpoint(path)
    for i, p in enumerate(probes):
        tensors = p["spec"]["tensors"]
        assert tensors["bn.running_var"]["name"] == f"layers.{i}.conv.norm.running_var"
        assert tensors["conv.weight"]["name"] == f"layers.{i}.conv.depthwise_conv.weight"
        assert tensors["bn.running_var"]["sha256"] == ckpt.fingerprint(
            f"layers.{i}.conv.norm.running_var"
        )
        evidence = Path(p["evidence"])
        assert (evidence / "result.json").is_file()
    tiny = probes[7]
    assert (tiny["verdict"], tiny["reexport"]) == ("values-move", "required")
    assert "NaN/inf" in tiny["reason"]
    measured = next(evidence.glob("measure-*"))
    assert {f.name for f in measured.glob("*.safetensors")} == {
        "inputs.safetensors",
        "reference.safetensors",
        "old.safetensors",
        "new.safetensors",
    }
    # measured: every ordinary layer's values move within fp16 tolerance (optional)
    ordinary = [p for i, p in enumerate(probes) if i != 7]
    assert [(p["verdict"], p["reexport"]) for p in ordinary] == [("values-move", "optional")] * 23
    assert bundle["reexport"] == "required"
    assert bundle["reason"].startswith("layers.7.conv.norm (its own tensors): ")
    chain = "\n".join(bundle["chain"])
    assert "layers.7.conv.norm: values-move, re-export required" in chain
    assert "23 module(s) (layers.0.conv.norm" in chain


def test_a_plans_value_condition_names_a_command_that_decides_it(tmp_path, matrix):
    """`plan` takes no checkpoint: its caveat names the `affected` run that does, and that
    command line, as printed with the checkpoint in place, parses and decides the condition."""
    plan = matrix.run_cli(("plan", "--to", "0.4.2")).data["result"]
    (parakeet,) = [b for b in plan["bundles"] if b["bundle"] == "parakeet"]
    (item,) = [i for i in parakeet["optional"] if i["fix"] == "54"]
    hinted = re.search(r"`(inventory [^`]*CHECKPOINT\.safetensors)`", item["reason"])
    assert hinted, item["reason"]
    path = parakeet_checkpoint(tmp_path / "parakeet.safetensors", tiny_layer=7)
    argv = shlex.split(hinted[1].replace("CHECKPOINT.safetensors", shlex.quote(str(path))))
    assert argv[:2] == ["inventory", "affected"], argv
    proc = invoke(*argv[1:], "--json", "-q")
    assert proc.returncode == 1, proc.stderr  # decided: a re-export is required
    (bundle,) = json.loads(proc.stdout)["result"]["bundles"]
    assert bundle["bundle"] == "parakeet" and bundle["reexport"] == "required"
    assert bundle["conditions"] == []  # measured with the checkpoint's tensors, not a caveat
    assert bundle["reason"].startswith("layers.7.conv.norm (its own tensors): ")
