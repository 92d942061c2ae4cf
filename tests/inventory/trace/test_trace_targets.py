"""Trace targets: real upstream classes, traced through torch.export, detected node by node.

These build each target at a small configuration (the same code path as the shipped one,
smaller numbers). The shipped configurations are traced, through the project's worker and a real
converter environment's decomposition table, by tests/inventory/trace/test_standin.py, which holds
each stand-in against the recorded recipe trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from small_configs import SAM3_SMALL

from inventory.trace.detect import detect, group
from inventory.trace.targets import lfm_audio, mimi, parakeet, sam3, sortformer

ROOT = Path(__file__).resolve().parents[3]

# A small Mimi: 3 upsampling ratios like the shipped one, 4 steps per frame, a 6-step attention
# context in a 12-slot ring so that a few frames already wrap it.
MIMI_SMALL: dict[str, Any] = {
    "sample_rate": 960,
    "frame_rate": 10.0,
    "inner_dim": 8,
    "outer_dim": 16,
    "seanet": {"dimension": 16, "n_filters": 4, "ratios": [4, 3, 2]},
    "transformer": {
        "d_model": 16,
        "num_heads": 2,
        "num_layers": 1,
        "context": 6,
        "dim_feedforward": 32,
        "input_dimension": 16,
        "output_dimensions": [16],
    },
    "quantizer": {"dimension": 8, "output_dimension": 16},
}
MIMI_SMALL_RING = 12

CONFORMER_SMALL: dict[str, Any] = {
    "hidden": 32,
    "layers": 2,
    "heads": 2,
    "ff": 64,
    "mels": 16,
    "sub_channels": 8,
}


def _trace(target):
    ep = torch.export.export(target.module, target.args, kwargs=target.kwargs, strict=False)
    return ep.run_decompositions()


def _outputs(ep) -> list[list[int]]:
    """Shapes of the user outputs (mutated state inputs come first in the graph's output)."""
    from torch.export.graph_signature import OutputKind

    out = next(n for n in ep.graph.nodes if n.op == "output")
    specs = ep.graph_signature.output_specs
    return [
        list(a.meta["val"].shape)
        for a, spec in zip(out.args[0], specs, strict=True)
        if spec.kind == OutputKind.USER_OUTPUT
    ]


def _count(ep, op: str) -> int:
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and str(n.target) == op)


def _convtr(
    in_ch: int, out_ch: int, kernel: list[int], stride: list[int], input_shape: list[int]
) -> dict:
    dim = len(kernel)
    return {
        "dim": dim,
        "in_channels": in_ch,
        "out_channels": out_ch,
        "kernel": kernel,
        "stride": stride,
        "padding": [0] * dim,
        "output_padding": [0] * dim,
        "dilation": [1] * dim,
        "groups": 1,
        "bias": True,
        "input_shape": input_shape,
    }


def test_mimi_step_holds_the_three_decoder_conv_transposes_and_no_upsampler():
    ep = _trace(mimi.build(overrides=MIMI_SMALL, ring=MIMI_SMALL_RING))
    found = group(detect(ep.graph.nodes, ["conv_transpose"]))
    assert [(g.params, g.dtype, g.count, g.modules) for g in found] == [
        (_convtr(32, 16, [8], [4], [1, 32, 4]), "float32", 1, ("decoder.model.2.convtr",)),
        (_convtr(16, 8, [6], [3], [1, 16, 16]), "float32", 1, ("decoder.model.5.convtr",)),
        (_convtr(8, 4, [4], [2], [1, 8, 48]), "float32", 1, ("decoder.model.8.convtr",)),
    ]
    assert _outputs(ep) == [[1, 1, 96]]  # 4 steps x hop 24
    assert _count(ep, "aten.elu.default") == 0 and _count(ep, "aten.expm1.default") == 10
    # every state is committed in the graph (the --graph-state form)
    assert len(ep.graph_signature.user_inputs_to_mutate) == 11


def test_mimi_step_reproduces_pocket_tts_streaming_decode():
    """The re-authored step is numerically the upstream streaming decoder, ring wrap included."""
    from pocket_tts.modules.stateful_module import StatefulModule, increment_steps, init_states

    torch.manual_seed(0)
    model: Any = mimi.load_mimi(overrides=MIMI_SMALL, device="cpu").eval()  # pocket-tts's
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    for name, module in model.named_modules():
        if isinstance(module, StatefulModule):
            module._module_absolute_name = name
    step = mimi.step_for(model, ring=MIMI_SMALL_RING)
    frames = 7  # 28 steps: well past the 12-slot ring and the 6-step context
    latents = torch.randn(frames, 1, MIMI_SMALL["quantizer"]["dimension"])
    upstream_state = init_states(model, batch_size=1, sequence_length=frames * step.steps)
    states = step.example_states()
    with torch.no_grad():
        for latent in latents:
            want = model.decode_from_latent(latent[:, None, :], upstream_state)
            increment_steps(model, upstream_state, increment=step.steps)
            got = step(latent, *states)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert int(states[step.state_names.index("offset")]) == frames * step.steps


# Slow without a converter environment: each builds and exports a whole upstream model (10-20 s).
@pytest.mark.slow
@pytest.mark.parametrize(
    "build, shapes",
    [
        (lambda: parakeet.build(mel_len=96, **CONFORMER_SMALL), [[1, 12, 640]]),
        (
            lambda: sortformer.build(chunk_mel=80, spkcache=6, tf_layers=1, **CONFORMER_SMALL),
            [[1, 16, 4], [1, 10, 32]],
        ),
        (lambda: lfm_audio.build(mel_len=64, **CONFORMER_SMALL), [[1, 8, 2048]]),
    ],
    ids=["parakeet", "sortformer", "lfm_audio"],
)
def test_fastconformer_targets_hold_no_conv_transpose(build, shapes):
    target = build()
    ep = _trace(target)
    assert detect(ep.graph.nodes, ["conv_transpose"]) == []
    assert _outputs(ep) == shapes
    assert target.dtype == "float16"
    # one depthwise conv + fp16 batch norm per block, as the recipes' graphs have
    norms = [
        n
        for n in ep.graph.nodes
        if n.op == "call_function"
        and str(n.target) == "aten._native_batch_norm_legit_no_training.default"
    ]
    assert len(norms) == CONFORMER_SMALL["layers"]
    assert all(n.args[0].meta["val"].dtype == torch.float16 for n in norms)


@pytest.mark.slow  # builds and exports sam3's vision encoder (about 20 s)
def test_sam3_fpn_neck_holds_three_conv_transposes_two_parameter_sets():
    ep = _trace(sam3.build(config_overrides=SAM3_SMALL, image=224))
    found = group(detect(ep.graph.nodes, ["conv_transpose"]))
    assert [(g.params, g.dtype, g.count, g.modules) for g in found] == [
        (
            _convtr(64, 32, [2, 2], [2, 2], [1, 64, 16, 16]),
            "float16",
            2,
            (
                "_model.vision_encoder.neck.fpn_layers.0.scale_layers.0",
                "_model.vision_encoder.neck.fpn_layers.1.scale_layers.0",
            ),
        ),
        (
            _convtr(32, 16, [2, 2], [2, 2], [1, 32, 32, 32]),
            "float16",
            1,
            ("_model.vision_encoder.neck.fpn_layers.0.scale_layers.2",),
        ),
    ]
    assert len(_outputs(ep)) == 5
