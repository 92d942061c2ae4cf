"""coreai-torch's quantize / dequantize ops (#24: a negative axis).

The probe uses `torch.ops.coreai`, registered by coreai-torch itself: built only inside a
converter environment, where coreai-torch is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def _coreai_ops() -> Any:
    """torch.ops.coreai, registering coreai-torch's quantize/dequantize if nobody has yet.

    They are defined (identically in 0.4.0-0.4.3) by coreai_torch._compression.custom_layers,
    which `import coreai_torch` does not load. Imported lazily: only converter environments
    have coreai_torch.
    """
    import torch

    try:
        torch.ops.coreai.quantize  # noqa: B018 - raises if the op is not registered
    except (AttributeError, RuntimeError):
        import coreai_torch._compression.custom_layers  # noqa: F401
    return torch.ops.coreai


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _QuantDequant(torch.nn.Module):
        def __init__(
            self,
            scale: torch.Tensor,
            zero_point: torch.Tensor | None,
            axis: int,
            qdtype: torch.dtype,
        ) -> None:
            super().__init__()
            self.register_buffer("scale", scale)
            self.register_buffer("zero_point", zero_point)
            self.axis = axis
            self.qdtype = qdtype

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            ops = _coreai_ops()
            q = ops.quantize(x, self.scale, self.qdtype, zero_point=self.zero_point, axis=self.axis)
            # The round trip shows a wrong axis, rounding and saturation alike; one output (outputs
            # are matched to the reference by position).
            return ops.dequantize(q, self.scale, zero_point=self.zero_point, axis=self.axis)

    _coreai_ops()
    shape = [int(v) for v in params.get("shape", [2, 8, 8])]
    axis = int(params.get("axis", -1))
    qdtype = p.DTYPES[params.get("output_dtype", "int8")]
    channels = shape[axis]
    per_channel = [1] * len(shape)
    per_channel[axis] = channels
    # Channels of very different magnitude: a scale applied along the wrong axis shows.
    magnitude = p.log_uniform(channels, 0.05, 20.0, gen)
    x = torch.randn(shape, generator=gen) * magnitude.view(per_channel)
    qmax = 127.0
    scale = x.abs().amax(dim=[d for d in range(len(shape)) if d != axis % len(shape)]) / qmax
    zero_point = None
    if params.get("zero_point", False):
        zero_point = torch.randint(-8, 9, [channels], generator=gen, dtype=torch.int8)
    if values == "adversarial":
        # Saturation beyond the clip range and exact rounding ties (k + 0.5) * scale.
        ties = (torch.randint(-100, 100, shape, generator=gen).float() + 0.5) * scale.view(
            per_channel
        )
        x = torch.where(torch.rand(shape, generator=gen) < 0.3, ties, x)
        x = torch.where(torch.rand(shape, generator=gen) < 0.05, x * 3.0, x)
    return p.Built(_QuantDequant(scale, zero_point, axis, qdtype), {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# torch.ops.coreai.quantize(input, scale, output_dtype, zero_point, minval, axis) and
# dequantize(input, scale, zero_point, minval, axis, input_dtype, output_dtype), present only when
# a recipe quantizes with coreai-torch's compression layers. The probe is a per-channel int8
# quantize -> dequantize round trip along `axis` (the fix: a negative axis); `op`, `rank`,
# `per_channel` and `quant_dtype` say what the graph holds (a per-tensor scale is probed per
# channel: the axis is still lowered).


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    quantize = g.target_name(node).startswith("coreai.quantize")
    x = node.args[0]
    shape, how = sizes.concrete(x)
    scale = node.args[1]
    if quantize:
        zero_point, axis = g.arg(node, 3, "zero_point"), g.arg(node, 5, "axis", 0)
        qdtype, fdtype = g.arg(node, 2, "output_dtype"), g.val(x).dtype
    else:
        zero_point, axis = g.arg(node, 2, "zero_point"), g.arg(node, 4, "axis", 0)
        qdtype, fdtype = g.val(x).dtype, g.val(node).dtype
    params: dict[str, Any] = {"shape": shape, "axis": int(axis or 0)}
    if zero_point is not None:
        params["zero_point"] = True
    if g.name(qdtype) == "int8":
        params["output_dtype"] = "int8"
    params.update(
        op="quantize" if quantize else "dequantize",
        rank=len(shape),
        per_channel=g.is_tensor(scale) and g.val(scale).numel() > 1,
        quant_dtype=g.name(qdtype),
    )
    dtype = g.probe_dtype(fdtype, params)
    return g.Found("quantize", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="quantize",
    params=("shape", "axis", "output_dtype", "zero_point"),
    build=build,
    readers=(Reader(("coreai.quantize.default", "coreai.dequantize.default"), detect),),
    scan=ScanSignature(
        unseen="a quantize round trip is plain ops after lowering; its axis is not named"
    ),
    representative=("shape", "op"),  # a quantize and its dequantize: one round-trip probe
)
