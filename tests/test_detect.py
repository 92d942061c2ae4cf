"""Construct detection on small hand-built modules, through torch.export."""

from __future__ import annotations

import torch

from inventory.trace.detect import detect, group


def _export(module: torch.nn.Module, *args: torch.Tensor):
    return torch.export.export(module.eval(), args).run_decompositions().graph.nodes


class Decoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up1 = torch.nn.ConvTranspose1d(16, 8, kernel_size=8, stride=4, padding=2,
                                            output_padding=1)
        self.up2 = torch.nn.ConvTranspose1d(16, 8, kernel_size=8, stride=4, padding=2,
                                            output_padding=1)
        self.mask = torch.nn.ConvTranspose2d(6, 4, kernel_size=2, stride=2, groups=2, bias=False)
        self.conv = torch.nn.Conv1d(8, 8, 3, padding=1)
        self.training_only = torch.nn.ConvTranspose1d(8, 8, 2, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = self.conv(self.up1(x)) + self.up2(x)
        if self.training:  # a source grep would flag this; the traced graph never holds it
            a = self.training_only(a)
        return a, self.mask(y)


def test_transposed_convs_are_found_with_exact_parameters_and_grouped():
    found = group(detect(_export(Decoder(), torch.randn(1, 16, 10), torch.randn(1, 6, 5, 7))))
    assert [g.count for g in found] == [2, 1]
    one, two = found
    assert one.params == {"dim": 1, "in_channels": 16, "out_channels": 8, "kernel": [8],
                          "stride": [4], "padding": [2], "output_padding": [1], "dilation": [1],
                          "groups": 1, "bias": True, "input_shape": [1, 16, 10]}
    assert one.modules == ("up1", "up2")
    assert two.params["dim"] == 2 and two.params["groups"] == 2
    assert two.params["out_channels"] == 4 and two.params["bias"] is False
    assert two.params["input_shape"] == [1, 6, 5, 7]


def test_ordinary_convolutions_are_not_transposed_ones():
    module = torch.nn.Sequential(torch.nn.Conv1d(4, 4, 3), torch.nn.Conv2d(4, 4, 1))
    nodes = _export(torch.nn.Sequential(module[0]), torch.randn(1, 4, 9))
    assert detect(nodes) == []


def test_fp16_modules_report_their_dtype():
    module = torch.nn.ConvTranspose1d(4, 2, 2, 2).to(torch.float16)
    found = detect(_export(module, torch.randn(1, 4, 3, dtype=torch.float16)))
    assert [f.dtype for f in found] == ["float16"]


class ConformerConv(torch.nn.Module):
    """A Conformer-style convolution module: depthwise Conv1d then BatchNorm1d."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.dw = torch.nn.Conv1d(c, c, 9, padding=4, groups=c)
        self.bn = torch.nn.BatchNorm1d(c)
        self.pw = torch.nn.Conv1d(c, c, 1)
        self.bn_after_pointwise = torch.nn.BatchNorm1d(c)
        self.ln = torch.nn.LayerNorm(c, elementwise_affine=False)
        self.gn = torch.nn.GroupNorm(4, c)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.bn(self.dw(x))
        z = self.bn_after_pointwise(self.pw(y))
        return self.ln(z.transpose(1, 2)), self.gn(z)


def test_norms_carry_dtype_parameters_and_what_precedes_them():
    module = ConformerConv().to(torch.float16)
    found = {(g.kind, g.modules): g for g in group(detect(
        _export(module, torch.randn(1, 16, 20, dtype=torch.float16))))}
    bn = found[("batch_norm", ("bn",))]
    assert bn.dtype == "float16" and bn.params["param_dtype"] == "float16"
    assert bn.params["depthwise_kernel"] == 9 and bn.params["channels"] == 16
    after_pointwise = found[("batch_norm", ("bn_after_pointwise",))]
    assert "depthwise_kernel" not in after_pointwise.params
    ln = found[("layer_norm", ("ln",))]
    assert ln.params["elementwise_affine"] is False and ln.params["normalized_shape"] == [16]
    gn = found[("group_norm", ("gn",))]
    assert gn.params["num_groups"] == 4 and gn.params["affine"] is True
