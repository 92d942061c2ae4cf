"""sortformer: Streaming Sortformer 4-spk v2, the static `forward_for_export` step, fp16.

Recipe: the zoo's `sortformer_diar/export_sortformer.py --dtype float16` ->
`sortformer_float16.aimodel`. Inputs chunk_mel [1,1520,128] (time before mels), spkcache
[1,188,512], valid [1,378]; outputs preds [1,378,4] and chunk_pe [1,190,512].

Graph: pre-encode (dw_striding subsampling) of the chunk -> chunk_pe; cat(spkcache, chunk_pe) ->
xscale sqrt(512) -> 17 rel-pos Conformer layers -> Linear 512->192 -> 18 post-LN Transformer
layers (192, 8 heads x 24, inner 768, ReLU) -> ReLU, Linear 192->192, ReLU, Linear 192->4,
sigmoid, times the valid mask. Masks are derived in the graph from `valid`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from inventory.trace.targets import TraceTarget
from inventory.trace.targets.parakeet import (
    ConformerStack,
    conformer_notes,
    encoder_config,
    subsampled_length,
)

CHUNK_MEL, SPKCACHE, N_SPK = 1520, 188, 4
TF_HID, TF_HEADS, TF_INNER, TF_LAYERS = 192, 8, 768, 18
NEG = -10000.0  # the recipe's additive mask value


class PostLNBlock(nn.Module):
    """NeMo-style post-LN transformer encoder block (reconstructed from the recipe's facts):
    q and k each divided by sqrt(sqrt(head_dim)), additive key mask, ReLU feed-forward."""

    def __init__(self, dim: int, heads: int, inner: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.ff_in = nn.Linear(dim, inner)
        self.ff_out = nn.Linear(inner, dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.root = math.sqrt(math.sqrt(self.head_dim))

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        q = self._split(self.query(x)) / self.root
        k = self._split(self.key(x)) / self.root
        v = self._split(self.value(x))
        probs = torch.softmax(q @ k.transpose(-1, -2) + key_bias, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(x.shape)
        x = self.norm1(self.out(ctx) + x)
        return self.norm2(self.ff_out(torch.relu(self.ff_in(x))) + x)


class SortformerStep(nn.Module):
    def __init__(self, stack: ConformerStack, tf_layers: int = TF_LAYERS) -> None:
        super().__init__()
        hidden = stack.encoder.config.hidden_size
        self.stack = stack
        self.encoder_proj = nn.Linear(hidden, TF_HID)
        self.transformer = nn.ModuleList(
            PostLNBlock(TF_HID, TF_HEADS, TF_INNER) for _ in range(tf_layers)
        )
        self.hidden_to_hidden = nn.Linear(TF_HID, TF_HID)
        self.hidden_to_spks = nn.Linear(TF_HID, N_SPK)

    def forward(
        self, chunk_mel: torch.Tensor, spkcache: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keep = valid > 0.5  # [B, T]
        pair = (keep[:, :, None] & keep[:, None, :])[:, None]  # [B, 1, T, T] for the conformer
        key_bias = ((1.0 - valid) * NEG)[:, None, None, :]  # [B, 1, 1, T] for the transformer
        chunk_pe = self.stack.encoder.subsampling(chunk_mel)  # pre-xscale, returned to host
        h = self.stack.layers(torch.cat([spkcache, chunk_pe], dim=1), pair)
        h = self.encoder_proj(h)
        for block in self.transformer:
            h = block(h, key_bias)
        h = self.hidden_to_hidden(torch.relu(h))
        preds = torch.sigmoid(self.hidden_to_spks(torch.relu(h)))
        return preds * valid[:, :, None], chunk_pe


def build(
    chunk_mel: int = CHUNK_MEL,
    spkcache: int = SPKCACHE,
    device: str = "meta",
    dtype: torch.dtype = torch.float16,
    tf_layers: int = TF_LAYERS,
    **overrides: Any,
) -> TraceTarget:
    from transformers import ParakeetEncoder

    values: dict[str, Any] = dict(
        hidden=512,
        layers=17,
        heads=8,
        ff=2048,
        mels=128,
        kernel=9,
        sub_channels=256,
        conv_bias=True,
        linear_bias=True,
        scale_input=True,
    )
    values.update(overrides)
    cfg = encoder_config(**values)
    chunk_frames = subsampled_length(chunk_mel)
    total = spkcache + chunk_frames
    with torch.device(device):
        encoder = ParakeetEncoder(cfg)
        step = SortformerStep(ConformerStack(encoder, total, dtype, device), tf_layers)
    module = step.eval().to(dtype)
    args = (
        torch.zeros(1, chunk_mel, values["mels"], dtype=dtype, device=device),
        torch.zeros(1, spkcache, values["hidden"], dtype=dtype, device=device),
        torch.ones(1, total, dtype=dtype, device=device),
    )
    notes = conformer_notes(
        "sortformer (sortformer_model.py / export_sortformer.py)",
        f"hidden {values['hidden']}, {values['layers']} layers, {values['heads']} heads, "
        f"FF {values['ff']}, {values['mels']} mels, conv kernel {values['kernel']}, "
        f"subsampling channels {values['sub_channels']}, bias on, xscale sqrt(hidden) applied "
        "to cat(spkcache, chunk_pe)",
        "chunk_mel is already [B, T, mels], the layout ParakeetEncoder's subsampling takes, so "
        f"no transpose. Inputs chunk_mel [1,{chunk_mel},{values['mels']}], spkcache "
        f"[1,{spkcache},{values['hidden']}] (zeros), valid [1,{total}] (ones); {chunk_frames} "
        "chunk frames. Masks: the conformer gets a boolean [B,1,T,T] mask from valid, applied the "
        "transformers way (masked_fill with finfo.min in attention, zeroing masked frames "
        "before the depthwise conv) instead of the recipe's additive -1e4 bias and multiplicative "
        "conv mask; and transformers multiplies the conformer scores by a reciprocal where the "
        f"recipe divides, so the graph holds {2 * tf_layers} true divisions (the post-LN "
        f"transformer's) instead of {2 * tf_layers + values['layers']}. Reconstructed here from "
        "the recipe's facts, not upstream code (NeMo is not installed): the Linear "
        f"{values['hidden']}->{TF_HID} projection, the {tf_layers}-layer "
        f"post-LN transformer ({TF_HID} dim, {TF_HEADS} heads, inner {TF_INNER}, ReLU, q and k "
        "divided by sqrt(sqrt(head_dim)), additive -1e4 key mask) and the sigmoid speaker head "
        "masked by valid.",
    )
    return TraceTarget(
        module=module,
        args=args,
        dtype=str(dtype).removeprefix("torch."),
        packages=("transformers",),
        notes=notes,
    )
