"""Which constructs the probe library covers and the parameters each probe takes.

Kept apart from `probes.py` so the main process can plan probes without importing torch.
"""

from __future__ import annotations

from typing import Any

PARAMS: dict[str, tuple[str, ...]] = {
    "conv_transpose": (
        "dim", "in_channels", "out_channels", "kernel", "stride", "padding",
        "output_padding", "dilation", "groups", "bias", "input_shape",
    ),
}


def has_probe(construct: str) -> bool:
    return construct in PARAMS


def probe_params(construct: str, params: dict[str, Any]) -> dict[str, Any]:
    """The instance parameters a probe takes (a trace may record more, e.g. module paths)."""
    keys = PARAMS[construct]
    return {k: params[k] for k in keys if k in params}


def _dims(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def label(construct: str, params: dict[str, Any], dtype: str) -> str:
    """A short human name for a probe, e.g. `ConvTranspose1d 512->256 k16 s8 p0 op0 @1x512x10`."""
    short = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(dtype, dtype)
    if construct == "conv_transpose":
        p = params
        return (f"ConvTranspose{p.get('dim', '?')}d {p.get('in_channels')}->"
                f"{p.get('out_channels')} k{_dims(p.get('kernel'))} s{_dims(p.get('stride'))} "
                f"p{_dims(p.get('padding', 0))} op{_dims(p.get('output_padding', 0))} "
                f"@{_dims(p.get('input_shape'))} {short}")
    shown = " ".join(f"{k}={_dims(v)}" for k, v in sorted(params.items()))
    return f"{construct} {shown} {short}"
