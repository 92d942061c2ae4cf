"""sam3: Meta SAM 3 through Apple's official recipe (`models/sam3/export.py`), fp16.

The recipe exports the unmodified transformers `Sam3Model` (cast with `.to(torch.float16)`) behind
a wrapper returning a 5-tuple (pred_masks, pred_boxes, pred_logits, presence_logits,
semantic_seg), inputs pixel_values [1,3,1008,1008] fp16 and input_ids int32, under
`torch.autocast("cpu", float16)`. Here the same class is built at `Sam3Config()` defaults, taken
to be facebook/sam3's (its config.json could not be read: 840.4M parameters at the defaults, the
model card says 848M), with random weights on the meta device.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inventory.trace.targets import TraceTarget

IMAGE = 1008
# CLIP BPE encodes "dummy" as one token, so tokenizer(["dummy"]) without padding gives
# [<start_of_text>, dummy, <end_of_text>]. Whether facebook/sam3's tokenizer.json pads by default
# (the processor pads to 32) could not be checked: 3 is an assumption.
INPUT_IDS_LEN = 3
START, DUMMY, END = 49406, 34246, 49407  # CLIP BPE ids; only the length shapes the graph


class Sam3Export(nn.Module):
    """The recipe's wrapper shape: two inputs, five outputs as a tuple."""

    def __init__(self, model: nn.Module, autocast: bool = False) -> None:
        super().__init__()
        self._model = model
        self.autocast = autocast

    def _run(self, pixel_values: torch.Tensor, input_ids: torch.Tensor) -> tuple[Any, ...]:
        out = self._model(pixel_values=pixel_values, input_ids=input_ids)
        return (
            out.pred_masks,
            out.pred_boxes,
            out.pred_logits,
            out.presence_logits,
            out.semantic_seg,
        )

    def forward(self, pixel_values: torch.Tensor, input_ids: torch.Tensor) -> tuple[Any, ...]:
        if self.autocast:
            with torch.autocast(device_type="cpu", dtype=torch.float16):
                return self._run(pixel_values, input_ids)
        return self._run(pixel_values, input_ids)


def build(
    device: str = "meta",
    input_ids_len: int = INPUT_IDS_LEN,
    autocast: bool = False,
    config_overrides: dict[str, Any] | None = None,
    image: int = IMAGE,
) -> TraceTarget:
    from transformers import Sam3Config, Sam3Model

    config = Sam3Config(**(config_overrides or {}))
    with torch.device(device):
        model = Sam3Model(config)
    module = Sam3Export(model.eval().to(torch.float16), autocast=autocast).eval()
    ids = [START, DUMMY, END] + [END] * max(input_ids_len - 3, 0)  # padded like CLIP (eot)
    kwargs = {
        "pixel_values": torch.zeros(1, 3, image, image, dtype=torch.float16, device=device),
        "input_ids": torch.tensor([ids[:input_ids_len]], dtype=torch.int32, device=device),
    }
    notes = (
        "Real upstream: transformers Sam3Model, unmodified, at Sam3Config()"
        f"{' with test overrides ' + repr(config_overrides) if config_overrides else ' defaults'} "
        "(ASSUMPTION: facebook/sam3's config.json could not be read; 840.4M parameters at the "
        "defaults vs the card's '848M') "
        f"(attention implementation {model.config._attn_implementation}), random weights on "
        f"the {device} device, cast with .to(torch.float16) as the recipe does. Wrapper "
        "reconstructed from the recipe: kwargs pixel_values "
        f"[1,3,{image},{image}] fp16 and input_ids int32, 5-tuple output (pred_masks, pred_boxes, "
        f"pred_logits, presence_logits, semantic_seg). ASSUMPTION: input_ids length "
        f"{input_ids_len}: the recipe uses Sam3Processor.tokenizer(['dummy']) from the gated "
        "facebook/sam3 checkpoint, not available here; CLIP BPE makes 'dummy' one token "
        "(checked against open_clip's bpe_simple_vocab_16e6), so 3 = start + dummy + end if "
        "the tokenizer does not pad by default (32 if it pads like the processor). "
        + (
            "Exported under torch.autocast('cpu', float16) entered inside forward (module paths "
            "of ops inside the autocast region are lost in torch.export's metadata). "
            if autocast
            else "The recipe exports under torch.autocast('cpu', float16); this target leaves it "
            "off because, with every parameter and input already fp16, checked locally: "
            "exporting inside an autocast context gives the identical graph after the "
            "coreai-torch 0.4.1 decompositions (7165 nodes, same ops, dtypes and shapes; "
            "transformers 5.24.0, torch 2.13.0), while autocast entered inside forward loses the "
            "nn_module_stack of every op. build(autocast=True) puts it back inside forward. "
        )
        + "transformers' version is not the recipe's (<5.10.1, likely 5.9.0)."
    )
    return TraceTarget(
        module=module,
        args=(),
        kwargs=kwargs,
        dtype="float16",
        packages=("transformers",),
        notes=notes,
    )
