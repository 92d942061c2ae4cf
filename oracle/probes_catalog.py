"""Which constructs the probe library covers and the parameters each probe takes.

Kept apart from `probes.py` so the main process can plan probes without importing torch.
"""

from __future__ import annotations

from typing import Any

PARAMS: dict[str, tuple[str, ...]] = {
    "conv_transpose": (
        "dim", "in_channels", "out_channels", "kernel", "stride", "padding",
        "output_padding", "dilation", "groups", "bias", "input_shape", "dynamic_length",
    ),
    "batch_norm": (
        "dim", "channels", "length", "batch", "eps", "affine", "running_var",
        "depthwise_kernel", "param_dtype",
    ),
    "layer_norm": ("normalized_shape", "input_shape", "elementwise_affine", "bias", "eps"),
    "group_norm": (
        "num_groups", "channels", "batch", "length", "affine", "eps", "dynamic_batch",
        "dynamic_length",
    ),
    "true_divide": ("form", "operands", "shape", "divisor", "divide_by_zero"),
    "mean_dtype": ("operand", "shape", "dims", "keepdim", "dtype_arg"),
    "min_dim": ("int_dtype", "shape", "dim", "keepdim"),
    "max_pool2d": ("form", "kernel", "stride", "padding", "ceil_mode", "input_shape"),
    "atan2": ("shape", "operands"),
    "quantize": ("shape", "axis", "output_dtype", "zero_point"),
    "pad": ("mode", "pads", "input_shape", "value"),
    "arange_float": ("start", "end", "step", "arange_dtype", "batch"),
    "repeat_symbolic": ("batch", "length", "dynamic_batch"),
    "cat_dynamic": (
        "mode", "batch", "length", "channels", "other_channels", "prefix", "dynamic_length",
        "dynamic_batch",
    ),
    "view_dynamic": ("mode", "batch", "length", "channels", "heads", "dynamic_batch",
                     "dynamic_hw"),
    "masked_scatter": ("shape", "broadcast", "dynamic_batch"),
    "select_dynamic": ("batch", "length", "channels", "dim", "index", "dynamic_length"),
}


DTYPE_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


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
    short = DTYPE_SHORT.get(dtype, dtype)
    if construct == "conv_transpose":
        p = params
        return (f"ConvTranspose{p.get('dim', '?')}d {p.get('in_channels')}->"
                f"{p.get('out_channels')} k{_dims(p.get('kernel'))} s{_dims(p.get('stride'))} "
                f"p{_dims(p.get('padding', 0))} op{_dims(p.get('output_padding', 0))} "
                f"@{_dims(p.get('input_shape'))} {short}")
    p = params
    if construct == "batch_norm":
        dw = f"dwconv k{p['depthwise_kernel']} -> " if p.get("depthwise_kernel") else ""
        pd = p.get("param_dtype")
        params_in = f" params {DTYPE_SHORT.get(pd, pd)}" if pd else ""
        return (f"{dw}BatchNorm{p.get('dim', 1)}d {p.get('channels')} "
                f"var={p.get('running_var', 'default')}{params_in} {short}")
    if construct == "pad":
        return f"pad {p.get('mode')} {_dims(p.get('pads'))} @{_dims(p.get('input_shape'))} {short}"
    if construct == "max_pool2d":
        stride = f"s{_dims(p['stride'])}" if p.get("stride") else (
            "stride=kernel" if p.get("form") == "module" else "no stride")
        return (f"max_pool2d ({p.get('form', 'functional')}) k{_dims(p.get('kernel'))} {stride} "
                f"@{_dims(p.get('input_shape'))} {short}")
    if construct == "true_divide":
        return f"divide {p.get('form', 'tensor')} {p.get('operands', 'int32')} operands {short}"
    shown = " ".join(f"{k}={_dims(v)}" for k, v in sorted(params.items()))
    return f"{construct} {shown} {short}"
