"""Batch norm in inference form (#54: 0.4.2 computes an fp16 batch norm in fp32 inside), optionally
after a depthwise Conv1d as in a Conformer's convolution module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import DTYPE_SHORT, Construct, Reader, ScanSeen, ScanSignature
from oracle.infra.checkpoint import TensorSource

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def _running_var(c: int, regime: str, gen: torch.Generator) -> torch.Tensor:
    """Running variances: `spread` over orders of magnitude, all `tiny` (below fp16's smallest
    normal, some below its smallest subnormal), all `huge` (above fp16's max), or `mixed`."""
    from oracle.constructs import _probe as p

    if regime == "spread":
        return p.log_uniform(c, 1e-3, 1e2, gen)
    if regime == "tiny":
        return p.log_uniform(c, 1e-9, p.FP16_TINY * 0.8, gen)
    if regime == "huge":
        return p.log_uniform(c, p.FP16_MAX * 1.2, 1e7, gen)
    if regime == "mixed":
        var = p.log_uniform(c, 1e-3, 1e2, gen)
        order = p.permuted(c, gen)
        quarter = max(1, c // 4)
        var[order[:quarter]] = p.log_uniform(quarter, 1e-9, p.FP16_TINY * 0.8, gen)
        var[order[quarter : 2 * quarter]] = p.log_uniform(quarter, p.FP16_MAX * 1.2, 1e7, gen)
        return var
    raise ValueError(f"unknown running_var regime {regime!r}")


def _bn_only(conv: torch.nn.Module | None) -> tuple[str, ...]:
    # With a conv in front, `param_dtype` is the batch norm's alone: the conv runs in the dtype.
    return ("bn",) if conv is not None else ()


def build(
    params: dict[str, Any], gen: torch.Generator, values: str, tensors: dict[str, Any] | None = None
) -> Built:
    """With values "checkpoint", `tensors` holds the instance's own running statistics, affine
    parameters and depthwise conv weights (CHECKPOINT); a conv without a bias in the checkpoint
    gets a zero bias (the same values; the probe's conv always has the bias op)."""
    import torch

    from oracle.constructs import _probe as p

    class _BatchNorm(torch.nn.Module):
        """A batch norm, optionally after a depthwise Conv1d (a Conformer's convolution
        module)."""

        def __init__(self, bn: torch.nn.Module, conv: torch.nn.Module | None) -> None:
            super().__init__()
            self.conv = conv
            self.bn = bn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.conv is not None:
                x = self.conv(x)
            return self.bn(x)

    dim = int(params.get("dim", 1))
    c = int(params["channels"])
    length = int(params.get("length", 16))
    batch = int(params.get("batch", 1))
    kernel = params.get("depthwise_kernel")
    if kernel and dim != 1:
        raise ValueError("depthwise_kernel needs dim = 1 (a Conv1d)")
    bn = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d}[dim](
        c, eps=float(params.get("eps", 1e-5)), affine=bool(params.get("affine", True))
    )
    fill = "trained" if values == "checkpoint" else values
    p.fill_trained(bn, gen, fill)
    shape = [batch, c] + [length] * dim
    conv = None
    if kernel:
        k = int(kernel)
        conv = torch.nn.Conv1d(c, c, k, padding=k // 2, groups=c, bias=True)
        p.fill_trained(conv, gen, fill)
    if values == "checkpoint":
        return _from_checkpoint(bn, conv, shape, tensors or {}, gen)
    default_regime = {"init": None, "trained": "spread", "adversarial": "mixed"}[values]
    regime = params.get("running_var", default_regime)
    if regime is None:  # fresh init: mean 0, var 1
        x = torch.randn(shape, generator=gen)
        return p.Built(_BatchNorm(bn, conv), {"x": x}, param_dtype_modules=_bn_only(conv))
    var = _running_var(c, regime, gen)
    per_channel = [1, c] + [1] * dim
    if conv is None:
        mean = (
            torch.randn(c, generator=gen) * 0.5 * var.sqrt().clamp(max=10.0)
            + torch.randn(c, generator=gen) * 0.2
        )
        # The input the statistics describe: x ~ N(running_mean, running_var) per channel.
        x = mean.view(per_channel) + var.sqrt().view(per_channel) * torch.randn(
            shape, generator=gen
        )
    else:
        x = torch.randn(shape, generator=gen)
        with torch.no_grad():
            y = conv(x)
        mean = y.mean(dim=(0, 2)) + torch.randn(c, generator=gen) * 0.05
        if regime == "spread":  # as trained: the statistics of what the conv produces
            var = y.var(dim=(0, 2)) * p.log_uniform(c, 0.5, 2.0, gen)
    # the norm tracks running statistics (its defaults): these buffers are never None
    assert bn.running_mean is not None and bn.running_var is not None
    assert bn.num_batches_tracked is not None
    with torch.no_grad():
        bn.running_mean.copy_(mean)
        bn.running_var.copy_(var)
        bn.num_batches_tracked.fill_(10000)
    return p.Built(_BatchNorm(bn, conv), {"x": x}, param_dtype_modules=_bn_only(conv))


def _from_checkpoint(
    bn: Any, conv: Any, shape: list[int], tensors: dict[str, Any], gen: torch.Generator
) -> Built:
    """The probe with one traced module's own tensors. Its input: x ~ N(running_mean,
    running_var) per channel for a batch norm alone (the statistics describe its input); N(0, 1)
    into a depthwise conv (the activations the statistics came from are not in a checkpoint)."""
    import torch

    from oracle.constructs import _probe as p

    own = {name: torch.as_tensor(array).float() for name, array in tensors.items()}
    with torch.no_grad():
        for name, value in own.items():
            target = {"bn": bn, "conv": conv}[name.split(".")[0]]
            tensor = getattr(target, name.split(".")[1])
            if tuple(tensor.shape) != tuple(value.shape):
                raise ValueError(
                    f"checkpoint tensor {name} has shape {list(value.shape)}, the "
                    f"probe's is {list(tensor.shape)}"
                )
            tensor.copy_(value)
        if conv is not None and "conv.bias" not in own:
            conv.bias.zero_()
        bn.num_batches_tracked.fill_(10000)
    if conv is None:
        per_channel = [1, shape[1]] + [1] * (len(shape) - 2)
        x = bn.running_mean.view(per_channel) + bn.running_var.clamp(min=0).sqrt().view(
            per_channel
        ) * torch.randn(shape, generator=gen)
    else:
        x = torch.randn(shape, generator=gen)

    class _BatchNorm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = conv
            self.bn = bn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.conv is not None:
                x = self.conv(x)
            return self.bn(x)

    return p.Built(_BatchNorm(), {"x": x}, param_dtype_modules=_bn_only(conv))


# ---- the detector ------------------------------------------------------------------------------


def _producer_depthwise(node: Any, channels: Any) -> tuple[int, str] | None:
    """The kernel and module path of a depthwise convolution feeding `node` directly (as in a
    Conformer)."""
    from oracle.constructs import _graph as g

    src = node.args[0] if node.args else None
    if (
        src is None
        or getattr(src, "op", "") != "call_function"
        or g.target_name(src) != "aten.convolution.default"
    ):
        return None
    args = list(src.args) + [None] * (9 - len(src.args))
    weight_shape = g.shape(args[1])
    if args[6] or int(args[8] or 1) != channels or len(weight_shape) < 3:
        return None
    return int(weight_shape[2]), g.module_path(src)


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    # aten._native_batch_norm_legit_no_training(input, weight, bias, running_mean,
    #                                           running_var, momentum, eps)
    x, weight, _bias, _mean, var = node.args[:5]
    eps = node.args[6] if len(node.args) > 6 else 1e-5
    shape = g.shape(x)
    channels = shape[1]
    params: dict[str, Any] = {
        "dim": len(shape) - 2,
        "channels": channels,
        "batch": shape[0],
        "length": shape[2] if len(shape) > 2 else 1,
        "eps": float(eps),
        "affine": weight is not None,
        "param_dtype": g.dtype(var),
        "input_shape": shape,
    }
    producer = _producer_depthwise(node, channels)
    if producer is not None:
        params["depthwise_kernel"] = producer[0]
    return g.Found(
        "batch_norm",
        params,
        g.dtype(x),
        g.module_path(node),
        producer[1] if producer is not None else "",
    )


def label(p: dict[str, Any], short: str) -> str:
    dw = f"dwconv k{p['depthwise_kernel']} -> " if p.get("depthwise_kernel") else ""
    pd = p.get("param_dtype")
    params_in = f" params {DTYPE_SHORT.get(pd, pd)}" if pd else ""
    return (
        f"{dw}BatchNorm{p.get('dim', 1)}d {p.get('channels')} "
        f"var={p.get('running_var', 'default')}{params_in} {short}"
    )


# ---- the scan ----------------------------------------------------------------------------------


def _fewer(seen: ScanSeen) -> list[str]:
    """optimize() of a stamping coreai-core folds a batch norm into the 2-D convolution before
    it, which is then all a scan finds."""
    if seen.optimized and seen.stamped and seen.op_count("conv2d"):
        return [
            "optimize() in coreai-core 1.0.0b2 and later folds a batch norm that directly "
            "follows a 2-D convolution into the convolution's weights: a folded batch norm "
            "leaves no call site"
        ]
    return []


CONSTRUCT = Construct(
    kind="batch_norm",
    params=(
        "dim",
        "channels",
        "length",
        "batch",
        "eps",
        "affine",
        "running_var",
        "depthwise_kernel",
        "param_dtype",
    ),
    build=build,
    readers=(Reader(("aten._native_batch_norm_legit_no_training.default",), detect),),
    scan=ScanSignature(composite="batch_norm", fewer=_fewer),
    label=label,
    # `--weights`: each traced batch norm's own statistics and affine parameters, and the
    # depthwise conv's weights where one feeds it (the registry records that module too).
    checkpoint={
        "bn.running_mean": TensorSource("module", "running_mean"),
        "bn.running_var": TensorSource("module", "running_var"),
        "bn.weight": TensorSource("module", "weight", required=False),
        "bn.bias": TensorSource("module", "bias", required=False),
        "conv.weight": TensorSource("producer", "weight"),
        "conv.bias": TensorSource("producer", "bias", required=False),
    },
)
