"""mimi: pocket-tts's Mimi decoder as one streaming step, the shape the zoo recipe exports.

Recipe: `export_mimi_decoder.py --upsample outer --fold-quantizer --graph-state` (fp32), bundle
`mimi_decoder_float32_ring272_outer_q_gs.aimodel`. One call turns one raw flow-LM latent [1,32]
(12.5 Hz) into 1920 PCM samples at 24 kHz; 12 streaming-state tensors persist between calls.

The modules and their configuration are pocket-tts's own (`build_mimi` over the `mimi` section
of the wheel's `english.yaml`). The step around them is written here from the recipe's
documented rewrites, not taken from the recipe:

* streaming Conv1d: cat(previous, x) -> conv; the tail of the concatenation is the new previous;
* streaming ConvTranspose1d: convtr -> overlap-add the previous partial onto the head; the tail
  minus the bias is the new partial;
* ELU as where(x > 0, x, expm1(x));
* upsampler (`--upsample outer`): the depthwise ConvTranspose1d(k=2s, stride s) applied to one
  frame is a per-channel outer product latent[c] * W[c, 0, :], so no transposed conv is emitted;
* quantizer fold (`--fold-quantizer`): latent * emb_std + emb_mean, then the bias-free k=1
  quantizer projection, in the graph;
* decoder transformer: KV cache as a fixed shift register of RING slots (cat + slice) with a
  boolean positional mask into scaled_dot_product_attention;
* graph state (`--graph-state`): the new states are written into the state inputs with copy_,
  the only output is the PCM.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from inventory.trace.targets import TraceTarget

RING = 272  # KV shift-register slots in the shipped bundle (kv0/kv1 [2,1,272,8,64]): >= 250 + 16
DEFAULT_CONFIG = "english"


def elu(x: torch.Tensor) -> torch.Tensor:
    """ELU(alpha=1) written out as the recipe does (no aten.elu in the graph)."""
    return torch.where(x > 0, x, torch.expm1(x))


def _history(conv: nn.Conv1d) -> int:
    """Samples a streaming Conv1d keeps from the previous step (pad_mode constant)."""
    return (conv.kernel_size[0] - 1) * conv.dilation[0] + 1 - conv.stride[0]


def _streaming_conv(
    conv: nn.Conv1d, x: torch.Tensor, prev: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if prev is None:
        return conv(x), None
    joined = torch.cat([prev, x], dim=-1)
    return conv(joined), joined[..., joined.shape[-1] - prev.shape[-1] :]


def _overlap_add(
    y: torch.Tensor, partial: torch.Tensor, bias: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Add the carried partial onto the head of a transposed-conv output; split off the tail."""
    keep = y.shape[-1] - partial.shape[-1]
    head = y[..., : partial.shape[-1]] + partial
    y = torch.cat([head, y[..., partial.shape[-1] :]], dim=-1)
    tail = y[..., keep:]
    if bias is not None:
        tail = tail - bias.view(-1, 1)
    return y[..., :keep], tail


class MimiDecodeStep(nn.Module):
    """One 12.5 Hz frame of Mimi decoding with explicit, in-graph state.

    forward(latent, up_p, kv0, ..., offset, c<i>...) -> pcm; every state input is overwritten
    with its next value (copy_), as the `--graph-state` export does.
    """

    emb_std: torch.Tensor  # buffers (register_buffer)
    emb_mean: torch.Tensor

    # pocket-tts ships no type information: its modules are Any here (an nn.Module's attribute
    # reads as `Tensor | Module` to a type checker)
    def __init__(self, mimi: Any, steps: int, ring: int = RING) -> None:
        super().__init__()
        from pocket_tts.modules.conv import StreamingConv1d, StreamingConvTranspose1d
        from pocket_tts.modules.seanet import SEANetResnetBlock

        self.quantizer = mimi.quantizer
        self.upsample = mimi.upsample
        self.transformer = mimi.decoder_transformer
        self.decoder = mimi.decoder
        self.steps = steps
        self.ring = ring
        up = self.upsample.convtr.convtr
        dim = self.quantizer.dimension
        # FlowLM's latent de-normalisation buffers (ones/zeros until a checkpoint is loaded).
        self.register_buffer("emb_std", torch.ones(dim, device=up.weight.device))
        self.register_buffer("emb_mean", torch.zeros(dim, device=up.weight.device))
        if up.weight.shape[1] != 1 or up.groups != up.in_channels:
            raise ValueError("outer-product upsampling needs a depthwise ConvTranspose1d")
        if self.transformer.input_proj is not None:
            raise ValueError("expected no decoder-transformer input projection")
        self.context = self.transformer.transformer.context

        # The state plan, in the bundle's order: up_p, kv<i>, offset, then c<module index>.
        self.state_shapes: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
            "up_p": ((1, up.out_channels, up.kernel_size[0] - up.stride[0]), torch.float32)
        }
        for i, layer in enumerate(self.transformer.transformer.layers):
            att = layer.self_attn
            shape = (2, 1, ring, att.num_kv_heads, att.dim_per_head)
            self.state_shapes[f"kv{i}"] = (shape, torch.float32)
        self.state_shapes["offset"] = ((1,), torch.int32)
        self.plan: list[tuple[str, int, str | None]] = []  # (kind, module index, state name)
        for idx, layer in enumerate(self.decoder.model):
            if isinstance(layer, nn.ELU):
                self.plan.append(("elu", idx, None))
            elif isinstance(layer, StreamingConv1d):
                if layer.pad_mode != "constant":
                    raise ValueError("only constant-padded streaming convs are on the decode path")
                hist = _history(layer.conv)
                name = f"c{idx}" if hist else None
                if name:
                    self.state_shapes[name] = ((1, layer.conv.in_channels, hist), torch.float32)
                self.plan.append(("conv", idx, name))
            elif isinstance(layer, StreamingConvTranspose1d):
                tr = layer.convtr
                name = f"c{idx}"
                pt = tr.kernel_size[0] - tr.stride[0]
                self.state_shapes[name] = ((1, tr.out_channels, pt), torch.float32)
                self.plan.append(("convtr", idx, name))
            elif isinstance(layer, SEANetResnetBlock):
                convs = [m for m in layer.block if isinstance(m, StreamingConv1d)]
                names = [f"c{idx}" if j == 0 else f"c{idx}_{j}" for j in range(len(convs))]
                for conv, name in zip(convs, names, strict=True):
                    hist = _history(conv.conv)
                    if hist:
                        self.state_shapes[name] = ((1, conv.conv.in_channels, hist), torch.float32)
                self.plan.append(("resblock", idx, None))
            else:
                raise TypeError(f"unexpected decoder layer {type(layer).__name__}")
        self.state_names = tuple(self.state_shapes)
        self._device = up.weight.device

    def example_states(self, device: torch.device | str | None = None) -> tuple[torch.Tensor, ...]:
        dev = device or self._device
        return tuple(
            torch.zeros(shape, dtype=dt, device=dev) for shape, dt in self.state_shapes.values()
        )

    # -- decoder transformer with a shift-register KV cache --
    def _attention(
        self, layer: Any, x: torch.Tensor, cache: torch.Tensor, offset: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        from pocket_tts.modules.attention import _build_attention_mask
        from pocket_tts.modules.rope import apply_rope

        att = layer.self_attn
        b, t, _ = x.shape
        d = att.dim_per_head
        proj = att.in_proj(x)
        q = proj[..., : att.attn_dim].reshape(b, t, att.num_heads, d)
        k, v = proj[..., att.attn_dim :].reshape(b, t, 2, att.num_kv_heads, d).unbind(dim=2)
        q, k = apply_rope(q, k, offset=offset.to(torch.float32), max_period=att.rope.max_period)
        shifted = torch.cat([cache[:, :, t:], torch.stack([k, v])], dim=2)
        base = offset.to(torch.long).view(1, 1)
        slots = torch.arange(self.ring, device=x.device, dtype=torch.long).view(1, -1)
        pos_k = base + (t - self.ring) + slots
        pos_q = base + torch.arange(t, device=x.device, dtype=torch.long).view(1, -1)
        mask = _build_attention_mask(pos_q, pos_k, self.context)
        keys = shifted[0].transpose(1, 2)
        values = shifted[1].transpose(1, 2)
        if att.num_kv_heads != att.num_heads:
            keys = keys.repeat_interleave(att.num_heads // att.num_kv_heads, dim=1)
            values = values.repeat_interleave(att.num_heads // att.num_kv_heads, dim=1)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, mask)
        out = att.out_proj(out.transpose(1, 2).reshape(b, t, att.attn_dim))
        return out, shifted

    def forward(self, latent: torch.Tensor, *states: torch.Tensor) -> torch.Tensor:
        st = dict(zip(self.state_names, states, strict=True))
        new: dict[str, torch.Tensor] = {}
        # --fold-quantizer: raw latent [1,32] -> de-normalise -> k=1 projection -> [1,512,1]
        z = self.quantizer((latent * self.emb_std + self.emb_mean).unsqueeze(-1))
        # --upsample outer: one input frame, depthwise kernel 2s -> outer product, overlap-add
        up = self.upsample.convtr.convtr
        y = z * up.weight[:, 0, :].unsqueeze(0)
        x, new["up_p"] = _overlap_add(y, st["up_p"], up.bias)
        # decoder transformer (ProjectedTransformer without projections), 16 steps at 200 Hz
        h = x.transpose(1, 2)
        for i, layer in enumerate(self.transformer.transformer.layers):
            upd, new[f"kv{i}"] = self._attention(layer, layer.norm1(h), st[f"kv{i}"], st["offset"])
            h = h + layer.layer_scale_1(upd)
            h = layer._ff_block(h)
        h = self.transformer.output_projs[0](h)  # decode_from_latent keeps the first output
        z = h.transpose(1, 2)
        # SEANet decoder
        for kind, idx, name in self.plan:
            layer = self.decoder.model[idx]
            if kind == "elu":
                z = elu(z)
            elif kind == "conv":
                z, prev = _streaming_conv(layer.conv, z, st[name] if name else None)
                if name and prev is not None:
                    new[name] = prev
            elif kind == "convtr":
                assert name is not None  # every streaming convtr keeps a state (__init__)
                z, new[name] = _overlap_add(layer.convtr(z), st[name], layer.convtr.bias)
            else:  # resblock: ELU, conv(k, history), ELU, conv(k=1), residual add
                v, j = z, 0
                for sub in layer.block:
                    if isinstance(sub, nn.ELU):
                        v = elu(v)
                        continue
                    sname = f"c{idx}" if j == 0 else f"c{idx}_{j}"
                    v, prev = _streaming_conv(sub.conv, v, st.get(sname))
                    if prev is not None:
                        new[sname] = prev
                    j += 1
                z = z + v
        new["offset"] = st["offset"] + self.steps
        for name in self.state_names:  # --graph-state: commit after every read
            st[name].copy_(new[name])
        return z


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, val in over.items():
        out[key] = (
            _merge(out[key], val)
            if isinstance(val, dict) and isinstance(out.get(key), dict)
            else val
        )
    return out


def load_mimi(
    config: str = DEFAULT_CONFIG, overrides: dict[str, Any] | None = None, device: str = "meta"
) -> nn.Module:
    """pocket-tts's MimiModel, built by its own build_mimi from the wheel's yaml (no weights)."""
    from pocket_tts.models.mimi import build_mimi
    from pocket_tts.utils.config import CONFIGS_DIR, MimiConfig, load_config

    mimi_cfg = load_config(CONFIGS_DIR / f"{config}.yaml").mimi
    if overrides:
        mimi_cfg = MimiConfig(**_merge(mimi_cfg.model_dump(), overrides))
    with torch.device(device):
        return build_mimi(mimi_cfg)


def step_for(mimi: Any, ring: int = RING) -> MimiDecodeStep:
    steps = mimi.encoder_frame_rate / mimi.frame_rate
    if steps != int(steps):
        raise ValueError(f"non-integer upsampling {steps}")
    return MimiDecodeStep(mimi, int(steps), ring).eval().to(torch.float32)


def build(
    config: str = DEFAULT_CONFIG,
    overrides: dict[str, Any] | None = None,
    device: str = "meta",
    ring: int = RING,
) -> TraceTarget:
    step = step_for(load_mimi(config, overrides, device), ring)
    dim = step.quantizer.dimension
    latent = torch.zeros(1, dim, dtype=torch.float32, device=device)
    names = ", ".join(f"{n} {list(s)}" for n, (s, _) in step.state_shapes.items())
    notes = (
        f"Real upstream: pocket-tts Mimi modules (build_mimi over the mimi section of the wheel's "
        f"{config}.yaml{' with test overrides' if overrides else ''}): DummyQuantizer, "
        "ConvTrUpsample1d weights, the decoder ProjectedTransformer's layers (norms, in/out "
        "projections, LayerScale, _ff_block, apply_rope, _build_attention_mask) and the "
        "SEANetDecoder's Conv1d/ConvTranspose1d modules. Reconstructed here from the recipe's "
        "documented flags (--upsample outer --fold-quantizer --graph-state), not the recipe's "
        "code: the one-frame step (streaming conv = cat(prev, x) then conv; streaming convtr = "
        "convtr then overlap-add of the carried partial; ELU = where(x>0, x, expm1(x)); upsampler "
        "as a per-channel outer product, so its ConvTranspose1d(k32,s16,groups=512) is absent; "
        f"KV cache as a {step.ring}-slot shift register with a boolean mask into SDPA; quantizer "
        "fold latent*emb_std+emb_mean -> k=1 projection). States are real graph state the way "
        "--graph-state exports them: extra inputs written with copy_ (torch.export records input "
        "mutations), the only output is pcm. Input latent "
        f"[1,{dim}] fp32, states (zeros): {names}. Weights random "
        f"({'meta device' if device == 'meta' else device}); dtype float32 as shipped."
    )
    return TraceTarget(
        module=step,
        args=(latent, *step.example_states(device)),
        dtype="float32",
        packages=("pocket-tts",),
        notes=notes,
    )
