"""Layer norm (#55)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import (
    Construct,
    Reader,
    ScanSeen,
    ScanSignature,
    arrives_decomposed,
)

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def _offset_input(
    shape: list[int], reduce_dims: int, gen: torch.Generator, values: str
) -> torch.Tensor:
    """Rows with their own offset and scale; adversarial: offsets far above the spread (the
    variance of a row is then a small difference of large numbers)."""
    import torch

    from oracle.constructs import _probe as p

    rows = shape[: len(shape) - reduce_dims] + [1] * reduce_dims
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":
        offset = 300.0 + torch.randn(rows, generator=gen) * 50.0
        scale = p.log_uniform(int(torch.tensor(rows).prod()), 1e-2, 1.0, gen).view(rows)
    elif values == "init":
        return x
    else:
        offset = torch.randn(rows, generator=gen) * 0.5
        scale = p.log_uniform(int(torch.tensor(rows).prod()), 0.3, 3.0, gen).view(rows)
    return offset + scale * x


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _LayerNorm(torch.nn.Module):
        def __init__(self, ln: torch.nn.LayerNorm) -> None:
            super().__init__()
            self.ln = ln

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.ln(x)

    normalized = [int(v) for v in params["normalized_shape"]]
    shape = [int(v) for v in params["input_shape"]]
    ln = torch.nn.LayerNorm(
        normalized,
        eps=float(params.get("eps", 1e-5)),
        elementwise_affine=bool(params.get("elementwise_affine", True)),
        bias=bool(params.get("bias", True)),
    )
    p.norm_affine(ln.weight, ln.bias, gen, values)
    x = _offset_input(shape, len(normalized), gen, values)
    return p.Built(_LayerNorm(ln), {"x": x})


# ---- the detector ------------------------------------------------------------------------------


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    # aten.native_layer_norm(input, normalized_shape, weight, bias, eps)
    x, normalized, weight, bias = node.args[:4]
    eps = node.args[4] if len(node.args) > 4 else 1e-5
    params = {
        "normalized_shape": [int(v) for v in normalized],
        "input_shape": g.shape(x),
        "elementwise_affine": weight is not None,
        "bias": bias is not None,
        "eps": float(eps),
    }
    return g.Found("layer_norm", params, g.dtype(x), g.module_path(node))


# ---- the scan ----------------------------------------------------------------------------------


def _fewer(seen: ScanSeen) -> list[str]:
    """Besides a decomposing pipeline: a layer norm without affine parameters can be written or
    lowered as plain ops, whose rsqrt is the one trace of it a scan can point to."""
    reasons = arrives_decomposed("layer_norm")(seen)
    rsqrt = seen.op_count("rsqrt")
    if rsqrt:
        reasons.append(
            f"{rsqrt} rsqrt op(s) outside composites could be layer norms "
            f"without affine parameters lowered to plain ops"
        )
    return reasons


CONSTRUCT = Construct(
    kind="layer_norm",
    params=("normalized_shape", "input_shape", "elementwise_affine", "bias", "eps"),
    build=build,
    readers=(Reader(("aten.native_layer_norm.default",), detect),),
    scan=ScanSignature(composite="layer_norm", fewer=_fewer),
)
