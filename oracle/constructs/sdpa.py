"""Scaled dot-product attention as `F.scaled_dot_product_attention` writes it: causal or not, with
no mask, a boolean mask or an additive float mask, an explicit scale or the default, grouped
key/value heads or not.

Attention written out by hand (QK^T, softmax, PV) is not this kind: its products and softmax are
the `matmul` and `softmax` kinds' instances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import (
    Construct,
    Reader,
    ScanSignature,
    arrives_decomposed,
    dims,
)

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

MASKS = ("none", "bool", "additive")

# ---- the probe --------------------------------------------------------------------------------
# query, key and value of q_shape and kv_shape (value's last dim: v_dim, the key's by default);
# mask "bool": True (an int32 1, made bool in the graph) where a query may attend, a sliding
# window of `window` positions back (and the diagonal, so no row is empty); "additive": the same
# window as 0 inside and the dtype's lowest value outside, what transformers builds for a causal
# or sliding-window fp16 model.


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch
    import torch.nn.functional as F

    from oracle.constructs import _probe as p

    class _Attention(torch.nn.Module):
        def __init__(self, causal: bool, scale: float | None, gqa: bool) -> None:
            super().__init__()
            self.causal = causal
            self.scale = scale
            self.gqa = gqa

        def forward(
            self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
        ) -> torch.Tensor:
            # a boolean mask arrives as int32 (a probe's integer inputs are) and is made in the
            # graph, as a model builds its mask from comparisons
            m = mask if mask.is_floating_point() else mask.bool()
            return F.scaled_dot_product_attention(
                q, k, v, m, is_causal=self.causal, scale=self.scale, enable_gqa=self.gqa
            )

    class _Maskless(_Attention):
        def forward(  # type: ignore[override]  # no mask input: the graph holds none
            self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
        ) -> torch.Tensor:
            return F.scaled_dot_product_attention(
                q, k, v, is_causal=self.causal, scale=self.scale, enable_gqa=self.gqa
            )

    q_shape = [int(d) for d in params["q_shape"]]
    kv_shape = [int(d) for d in params["kv_shape"]]
    v_shape = [*kv_shape[:-1], int(params.get("v_dim", kv_shape[-1]))]
    q = torch.randn(q_shape, generator=gen)
    k = torch.randn(kv_shape, generator=gen)
    v = torch.randn(v_shape, generator=gen)
    if values == "adversarial":  # a few keys far above the rest: scores dominated by them
        k = k + 6.0 * (torch.rand(kv_shape, generator=gen) > 0.95)
    scale = params.get("scale")
    args = (bool(params.get("causal", False)), None if scale is None else float(scale))
    module = (_Maskless if params["mask"] == "none" else _Attention)(*args, bool(params["gqa"]))
    inputs = {"q": q, "k": k, "v": v}
    if params["mask"] == "none":
        return p.Built(module, inputs)
    mask_shape = [int(d) for d in params["mask_shape"]]
    rows, cols = mask_shape[-2], mask_shape[-1]
    i = torch.arange(rows).unsqueeze(-1) + (cols - rows)
    j = torch.arange(cols).unsqueeze(0)
    window = int(params.get("window", cols))
    allowed = ((j <= i) & (j > i - window)).expand(mask_shape).contiguous()
    if params["mask"] == "bool":
        return p.Built(module, {**inputs, "mask": allowed.to(torch.int32)}, fixed_dtype=("mask",))
    if params["mask"] != "additive":
        raise ValueError(f"unknown mask {params['mask']!r}")
    # the fp16 lowest value, kept in fp32 here: the engine casts the input to the probe's dtype
    lowest = torch.full(mask_shape, -65504.0)
    return p.Built(module, {**inputs, "mask": torch.where(allowed, 0.0, lowest)})


# ---- the detector ------------------------------------------------------------------------------
# aten.scaled_dot_product_attention.default, kept whole by coreai-torch's decomposition table
# (torch's own decomposes it into a backend kernel). The mask is read from the graph's operand:
# its dtype (bool or float) and shape; a mask's values (causal, windowed) are data, not graph.


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    q, k, v = node.args[:3]
    if not (g.is_tensor(q) and g.is_tensor(k) and g.is_tensor(v)):
        return None
    q_shape, how_q = sizes.concrete(q)
    kv_shape, how_k = sizes.concrete(k)
    hows = [how_q, how_k]
    params: dict[str, Any] = {"q_shape": q_shape, "kv_shape": kv_shape}
    v_dim = g.shape(v)[-1]
    if v_dim != g.shape(k)[-1]:
        params["v_dim"] = int(v_dim)
    mask = g.arg(node, 3, "attn_mask")
    if g.is_tensor(mask):
        mask_shape, how_m = sizes.concrete(mask)
        hows.append(how_m)
        params["mask"] = "bool" if g.val(mask).dtype == torch.bool else "additive"
        params["mask_shape"] = mask_shape
    else:
        params["mask"] = "none"
    params["causal"] = bool(g.arg(node, 5, "is_causal", False))
    scale = g.arg(node, 6, "scale")
    if scale is not None:
        params["scale"] = float(scale)
    if g.worst(hows) != "static":
        # sizes from .item() or dynamic dims (sam3's DETR cross-attention): not recorded. The
        # probe takes plain ints, so it would export with static sizes and not hold the instance
        # (test_probe_fidelity); the op kind stays covered by the bundle's static attentions.
        return None
    params["gqa"] = bool(g.arg(node, 7, "enable_gqa", False))
    dropout = float(g.arg(node, 4, "dropout_p", 0.0) or 0.0)
    if dropout:
        params["graph_dropout"] = dropout  # an exported eval graph keeps it; the probe has none
    dtype = g.probe_dtype(g.val(q).dtype, params)
    return g.Found("sdpa", params, dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`sdpa 1x16x5184x64 kv 1x16x5184x64 causal mask=additive scale=0.125 fp16`."""
    causal = " causal" if params.get("causal") else ""
    mask = "" if params.get("mask") == "none" else f" mask={params.get('mask')}"
    scale = f" scale={params['scale']:.4g}" if params.get("scale") is not None else ""
    gqa = " gqa" if params.get("gqa") else ""
    return (
        f"sdpa {dims(params.get('q_shape'))} kv {dims(params.get('kv_shape'))}"
        f"{causal}{mask}{scale}{gqa} {short}"
    )


CONSTRUCT = Construct(
    kind="sdpa",
    params=(
        "q_shape",
        "kv_shape",
        "v_dim",
        "mask",
        "mask_shape",
        "causal",
        "scale",
        "gqa",
        "window",
    ),
    build=build,
    readers=(Reader(("aten.scaled_dot_product_attention.default",), detect),),
    # coreai-torch lowers it to a call of a private graph declared as this composite
    scan=ScanSignature(
        composite="scaled_dot_product_attention",
        fewer=arrives_decomposed("scaled_dot_product_attention"),
    ),
    representative=("q_shape", "kv_shape", "mask_shape"),
    label=label,
    value_params=("window",),
)
