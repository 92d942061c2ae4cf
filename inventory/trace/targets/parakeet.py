"""parakeet: the Parakeet-TDT-0.6B v3 FastConformer encoder bundle, L=2885, fp16.

Recipe: the zoo's `parakeet/export_encoder.py` (default `--dtype float16`) ->
`parakeet_encoder_float16_L2885.aimodel`, mel [1,128,2885] -> enc_proj [1,361,640]. The recipe
re-authors the encoder in plain torch, mirroring transformers' `modeling_parakeet.py`; here the
transformers classes themselves stand in for that re-authoring (same architecture, same module
names), configured with the recipe's values. The predictor/joint bundles hold no convolution
and are not traced.

This module also holds the FastConformer helpers the sortformer and lfm_audio targets share.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inventory.trace.targets import TraceTarget

MEL_LEN = 2885  # 30 s bucket of the shipped encoder


def subsampled_length(mel_len: int, stages: int = 3) -> int:
    """Frames after the dw_striding subsampling (k3, s2, p1 per stage)."""
    for _ in range(stages):
        mel_len = (mel_len + 2 - 3) // 2 + 1
    return mel_len


def encoder_config(
    *,
    hidden: int,
    layers: int,
    heads: int,
    ff: int,
    mels: int,
    kernel: int,
    sub_channels: int,
    conv_bias: bool,
    linear_bias: bool,
    scale_input: bool,
    **extra: Any,
) -> Any:
    """A transformers ParakeetEncoderConfig with the recipe's values.

    Attention is "eager" (matmul + softmax): the recipes write attention out by hand, with no SDPA.
    """
    from transformers import ParakeetEncoderConfig

    return ParakeetEncoderConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ff,
        num_mel_bins=mels,
        conv_kernel_size=kernel,
        subsampling_conv_channels=sub_channels,
        subsampling_factor=8,
        convolution_bias=conv_bias,
        attention_bias=linear_bias,
        scale_input=scale_input,
        # taken through PreTrainedConfig's keyword arguments at run time; the dataclass
        # signature transformers types it with does not list it
        attn_implementation="eager",
        **extra,
    )  # type: ignore[call-arg]


def relative_positions(config: Any, frames: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    """The [1, 2T-1, hidden] relative-position table, computed once by transformers' own
    ParakeetEncoderRelPositionalEncoding (on CPU) so it can be baked as a constant, as the
    recipes bake theirs instead of computing it in the graph."""
    from transformers.models.parakeet.modeling_parakeet import (
        ParakeetEncoderRelPositionalEncoding,
    )

    with torch.device("cpu"):
        table = ParakeetEncoderRelPositionalEncoding(config)(
            torch.zeros(1, frames, config.hidden_size)
        )
    return table.to(device=device, dtype=dtype)


class ConformerStack(nn.Module):
    """ParakeetEncoder's subsampling and blocks, driven with a baked position table.

    Same computation as ParakeetEncoder.forward in eval (no mask): subsampling -> optional
    xscale -> blocks; dropout is identity in eval and the position table is a buffer.
    """

    pos_emb: torch.Tensor  # a buffer (register_buffer)

    # transformers' ParakeetEncoder: Any, since an nn.Module's attribute reads as
    # `Tensor | Module` to a type checker
    def __init__(self, encoder: Any, frames: int, dtype: torch.dtype, device: str) -> None:
        super().__init__()
        self.encoder = encoder
        self.register_buffer(
            "pos_emb", relative_positions(encoder.config, frames, dtype, device), persistent=False
        )

    def layers(self, hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.encoder.input_scale != 1.0:
            hidden = hidden * self.encoder.input_scale
        for block in self.encoder.layers:
            hidden = block(hidden, attention_mask=mask, position_embeddings=self.pos_emb)
        return hidden

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # features [B, T, mels]
        return self.layers(self.encoder.subsampling(features))


def conformer_notes(name: str, values: str, extra: str) -> str:
    return (
        f"Stand-in: transformers ParakeetEncoder (real upstream FastConformer: "
        f"ParakeetEncoderSubsamplingConv2D, ParakeetEncoderBlock with rel-pos attention, "
        f"ConvolutionModule with depthwise Conv1d + BatchNorm1d) replaces the {name} recipe's "
        f"plain-torch re-authoring of the same NeMo FastConformer; configured with the recipe's "
        f"values ({values}); eager attention (matmul+softmax, no SDPA) like the recipe. "
        "Differences from the recipe's own graph that come from transformers' code: softmax is "
        "computed in float32 and cast back to fp16, and the score scale multiplies the content "
        "and position terms separately. fp16 export on CPU works as is. The relative "
        "position table is computed once by transformers' ParakeetEncoderRelPositionalEncoding "
        "and baked as a buffer (the recipe bakes its table too). ParakeetEncoder takes "
        "input_features [B, T, mels] (time before mels). "
        + extra
        + " Weights random (meta device unless stated); module cast with .to(torch.float16) "
        "(parameters and buffers, BatchNorm running stats included) as the recipe does."
    )


class ParakeetEncoderExport(nn.Module):
    """mel [1,128,L] -> enc_proj [1,T,640]: encoder + encoder_projector, as the bundle."""

    def __init__(self, stack: ConformerStack, projector: nn.Linear) -> None:
        super().__init__()
        self.stack = stack
        self.projector = projector

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.projector(self.stack(mel.transpose(1, 2)))


def build(
    mel_len: int = MEL_LEN,
    device: str = "meta",
    dtype: torch.dtype = torch.float16,
    **overrides: Any,
) -> TraceTarget:
    from transformers import ParakeetForTDT, ParakeetTDTConfig

    values: dict[str, Any] = dict(
        hidden=1024,
        layers=24,
        heads=8,
        ff=4096,
        mels=128,
        kernel=9,
        sub_channels=256,
        conv_bias=False,
        linear_bias=False,
        scale_input=False,
    )
    values.update(overrides)
    enc_cfg = encoder_config(**values)
    cfg = ParakeetTDTConfig(encoder_config=enc_cfg.to_dict())
    with torch.device(device):
        tdt = ParakeetForTDT(cfg)
    frames = subsampled_length(mel_len)
    encoder = tdt.encoder
    # ParakeetTDTConfig rebuilds the sub-config, which drops the attention choice; the attention
    # modules read this same config object at call time.
    encoder.config._attn_implementation = "eager"
    module = (
        ParakeetEncoderExport(ConformerStack(encoder, frames, dtype, device), tdt.encoder_projector)
        .eval()
        .to(dtype)
    )
    mel = torch.zeros(1, values["mels"], mel_len, dtype=dtype, device=device)
    notes = conformer_notes(
        "parakeet (export_encoder.py)",
        f"hidden {values['hidden']}, {values['layers']} layers, {values['heads']} heads, "
        f"FF {values['ff']}, {values['mels']} mels, conv kernel {values['kernel']}, "
        f"subsampling channels {values['sub_channels']}, no bias in the conformer's linears "
        "and convolutions, no xscale",
        "Encoder and encoder_projector (Linear 1024->640) are the modules of a transformers "
        "ParakeetForTDT built from ParakeetTDTConfig defaults (vocab 8193, decoder hidden 640); "
        f"its predictor and joint are not part of this bundle. The wrapper transposes mel "
        f"[1,{values['mels']},{mel_len}] to [1,{mel_len},{values['mels']}] first (the recipe's "
        f"subsampling does the same transpose); {frames} frames out; no attention mask, "
        "matching the recipe's single-clip export.",
    )
    return TraceTarget(
        module=module,
        args=(mel,),
        dtype=str(dtype).removeprefix("torch."),
        packages=("transformers",),
        notes=notes,
    )
