"""A decoder block of the transformer era (tests/helpers/recipe_repos.py's DECODER_RECIPE:
RMSNorm upcast to fp32, rotary embedding, causal SDPA, a SwiGLU MLP, fp16), registered from its
recipe: it traces to instances of the transformer kinds with their parameters, and `plan` covers
at least 90% of its ops by probes alone."""

from __future__ import annotations

import json
import tomllib

from cli import invoke
from recipe_repos import decoder_registry, decoder_repo

from oracle.infra.paths import envs_dir


def test_a_decoder_block_traces_to_the_transformer_kinds_and_plan_probes_its_ops(
    tmp_path, converter_envs, json_schema
):
    repo, commit = decoder_repo(tmp_path)
    registry = tmp_path / "recipes.toml"
    registry.write_text(decoder_registry(commit))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    env = {"INVENTORY_CACHE": str(cache)}
    args = ("--registry", str(registry))
    traced = invoke("trace", "decoder", "--recipe-root", str(repo), "--write", "-q", *args, **env)
    assert traced.returncode == 0, traced.stderr

    instances = tomllib.loads(registry.read_text())["bundles"]["decoder"]["instances"]
    by_kind: dict[str, list[dict]] = {}
    for i in instances:
        by_kind.setdefault(i["kind"], []).append(i)
    # two blocks and the final norm: five RMSNorms, upcast from fp16, with their weight
    [norm] = by_kind["rms_norm"]
    assert norm["count"] == 5 and norm["dtype"] == "float16"
    assert norm["params"] == {
        "input_shape": [1, 16, 64],
        "eps": 1e-6,
        "upcast": True,
        "weight": True,
    }
    [attention] = by_kind["sdpa"]
    assert attention["count"] == 2 and attention["dtype"] == "float16"
    assert attention["params"] == {
        "q_shape": [1, 4, 16, 16],
        "kv_shape": [1, 4, 16, 16],
        "mask": "none",
        "causal": True,
        "gqa": False,
    }
    [gate] = by_kind["silu"]
    assert gate["count"] == 2 and gate["params"] == {"form": "gated", "input_shape": [1, 16, 128]}
    # rotate-half's cat of two slices of the last dim, and the rotary embedding it belongs to:
    # q and k of each block, in fp16 with fp16 tables
    [cat] = by_kind["cat_dynamic"]
    assert cat["count"] == 4 and cat["params"]["mode"] == "sliced"
    assert cat["params"]["dim"] == 3
    [rotary] = by_kind["rotary"]
    assert rotary["count"] == 4 and rotary["dtype"] == "float16"
    assert rotary["params"] == {
        "form": "half",
        "input_shape": [1, 4, 16, 16],
        "table_shape": [1, 1, 16, 16],
        "table_dtype": "float16",
        "upcast": False,
    }
    linears = [i for i in by_kind["matmul"] if i["params"]["form"] == "linear"]
    assert sum(i["count"] for i in linears) == 14  # q, k, v, o, gate, up, down in each block

    planned = invoke("plan", "--to", "0.4.2", "--bundle", "decoder", "--json", *args, **env)
    assert "Traceback" not in planned.stderr, planned.stderr
    document = json.loads(planned.stdout)
    json_schema(document)
    [bundle] = [b for b in document["result"]["bundles"] if b["bundle"] == "decoder"]
    cover = bundle["coverage"]
    census = tomllib.loads(registry.read_text())["bundles"]["decoder"]["trace"]["facts"]["ops"]
    assert cover["ops"] == sum(census.values())
    probed = sum(cover["classes"]["probed"].values())
    assert probed / cover["ops"] >= 0.9, cover["classes"]["not covered"]
    for kind in (
        "aten.scaled_dot_product_attention.default",
        "aten.silu.default",
        "aten.rsqrt.default",
        "aten.mm.default",
        "aten.neg.default",
    ):
        assert kind in cover["classes"]["probed"], kind
