"""lfm_audio: LFM2.5-Audio-1.5B audio encoder + adapter, fp16.

Recipe: the zoo's `lfm_audio/export_encoder_adapter.py` (default `--dtype float16`) ->
`lfm_audio_encoder_adapter_float16_L{L}.aimodel`, mel [1,128,L] -> [1,T,2048]. Which LFM-audio
graphs were published is not known (no recipe.toml, card or Hugging Face repo in the zoo); the
encoder+adapter is the one with convolutions, and none of the candidate graphs holds a
transposed convolution. L comes from an uncommitted oracle file and is not found: the ASR gate's
48 audio frames imply L in 377..384, and 384 is used as the stand-in.
"""

from __future__ import annotations

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

MEL_LEN = 384  # stand-in: not found in the zoo (48 frames after 8x subsampling)
LFM_DIM = 2048


class EncoderAdapter(nn.Module):
    """mel [1,128,L] -> conformer -> LayerNorm -> Linear -> GELU -> Linear (audio adapter)."""

    def __init__(self, stack: ConformerStack, out_dim: int = LFM_DIM) -> None:
        super().__init__()
        hidden = stack.encoder.config.hidden_size
        self.stack = stack
        self.audio_adapter = nn.Sequential(
            nn.LayerNorm(hidden), nn.Linear(hidden, out_dim), nn.GELU(), nn.Linear(out_dim, out_dim)
        )

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.audio_adapter(self.stack(mel.transpose(1, 2)))


def build(
    mel_len: int = MEL_LEN,
    device: str = "meta",
    dtype: torch.dtype = torch.float16,
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
        scale_input=False,
    )
    values.update(overrides)
    cfg = encoder_config(**values)
    frames = subsampled_length(mel_len)
    with torch.device(device):
        encoder = ParakeetEncoder(cfg)
        module = EncoderAdapter(ConformerStack(encoder, frames, dtype, device))
    module = module.eval().to(dtype)
    mel = torch.zeros(1, values["mels"], mel_len, dtype=dtype, device=device)
    notes = conformer_notes(
        "lfm_audio (export_encoder_adapter.py)",
        f"hidden {values['hidden']}, {values['layers']} layers, {values['heads']} heads, "
        f"FF {values['ff']}, {values['mels']} mels, conv kernel {values['kernel']}, "
        f"subsampling channels {values['sub_channels']}, bias on everywhere, no xscale",
        f"ASSUMPTION: mel length L={mel_len} is a stand-in (the recipe's L comes from an "
        "uncommitted oracle file; the ASR gate's 48 frames imply 377..384), giving "
        f"{frames} frames. The wrapper transposes mel [1,{values['mels']},{mel_len}] to "
        f"[1,{mel_len},{values['mels']}] first; no attention mask (single clip). The audio "
        f"adapter (LayerNorm {values['hidden']} -> Linear {values['hidden']}->{LFM_DIM} -> GELU "
        f"-> Linear {LFM_DIM}->{LFM_DIM}) is reconstructed from the recipe's facts with plain "
        "torch.nn modules; liquid-audio's own ConformerEncoder is not used (it needs Python "
        ">= 3.12 and the recipe does not import it either). Only the encoder+adapter graph is "
        "traced; the LFM2 backbone and detokenizer graphs hold no transposed convolution "
        "(detokenizer upsampling is nearest-exact on the host).",
    )
    return TraceTarget(
        module=module,
        args=(mel,),
        dtype=str(dtype).removeprefix("torch."),
        packages=("transformers",),
        notes=notes,
    )
