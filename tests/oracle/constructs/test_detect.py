"""Construct detection on small hand-built modules, through torch.export."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import warnings
from functools import cache
from pathlib import Path

import pytest
import torch

from inventory.trace.detect import Grouped, detect, group
from oracle.catalog.regimes import load_regimes
from oracle.constructs import detected as detected_constructs
from oracle.constructs import get as get_construct
from oracle.constructs import probe_params
from oracle.workers import probes


def _export(module: torch.nn.Module, *args: torch.Tensor):
    return torch.export.export(module.eval(), args).run_decompositions().graph.nodes


class Decoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up1 = torch.nn.ConvTranspose1d(
            16, 8, kernel_size=8, stride=4, padding=2, output_padding=1
        )
        self.up2 = torch.nn.ConvTranspose1d(
            16, 8, kernel_size=8, stride=4, padding=2, output_padding=1
        )
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
    assert one.params == {
        "dim": 1,
        "in_channels": 16,
        "out_channels": 8,
        "kernel": [8],
        "stride": [4],
        "padding": [2],
        "output_padding": [1],
        "dilation": [1],
        "groups": 1,
        "bias": True,
        "input_shape": [1, 16, 10],
    }
    assert one.modules == ("up1", "up2")
    assert two.params["dim"] == 2 and two.params["groups"] == 2
    assert two.params["out_channels"] == 4 and two.params["bias"] is False
    assert two.params["input_shape"] == [1, 6, 5, 7]


class InContext(torch.nn.Module):
    """Transposed convs and what consumes them (#40's failure needs the squeeze)."""

    def __init__(self) -> None:
        super().__init__()
        self.mono = torch.nn.ConvTranspose1d(4, 1, 8, stride=2)
        self.sliced = torch.nn.ConvTranspose1d(4, 3, 4, stride=2)
        self.shared = torch.nn.ConvTranspose1d(4, 1, 2, stride=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.mono(x).squeeze(1)
        s = self.shared(x)  # two users: neither is the conv's own consumer
        return (
            y.reshape(y.shape[0], -1),
            torch.relu(self.sliced(x)[..., :-1]),
            s.squeeze(1),
            s + 1,
        )


def test_a_transposed_conv_records_the_shape_ops_that_consume_it():
    found = {
        f.module: f.params.get("consumer")
        for f in detect(_export(InContext(), torch.randn(1, 4, 32)))
    }
    # squeeze of the single out-channel, then a flatten; a slice then an elementwise op (the
    # chain stops there); an output used twice has no consumer of its own
    assert found == {"mono": ["squeeze", "reshape"], "sliced": ["slice"], "shared": None}


def test_a_consumer_is_a_probe_parameter_and_the_probe_applies_it():
    params = {
        "dim": 1,
        "in_channels": 4,
        "out_channels": 1,
        "kernel": [8],
        "stride": [2],
        "padding": [0],
        "output_padding": [0],
        "input_shape": [1, 4, 32],
        "consumer": ["squeeze", "reshape"],
    }
    assert probe_params("conv_transpose", {**params, "modules": "m"}) == params
    probe = probes.build({"construct": "conv_transpose", "params": params})
    (found,) = detect(_export(probe.module, *probe.inputs.values()))
    assert found.params["consumer"] == ["squeeze", "reshape"]
    assert tuple(probe.module(*probe.inputs.values()).shape) == (1, 70)
    with pytest.raises(ValueError, match="consumer 'gelu' is not one of squeeze, reshape"):
        probes.build({"construct": "conv_transpose", "params": {**params, "consumer": ["gelu"]}})


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
    found = {
        (g.kind, g.modules): g
        for g in group(detect(_export(module, torch.randn(1, 16, 20, dtype=torch.float16))))
    }
    bn = found[("batch_norm", ("bn",))]
    assert bn.dtype == "float16" and bn.params["param_dtype"] == "float16"
    assert bn.params["depthwise_kernel"] == 9 and bn.params["channels"] == 16
    after_pointwise = found[("batch_norm", ("bn_after_pointwise",))]
    assert "depthwise_kernel" not in after_pointwise.params
    ln = found[("layer_norm", ("ln",))]
    assert ln.params["elementwise_affine"] is False and ln.params["normalized_shape"] == [16]
    gn = found[("group_norm", ("gn",))]
    assert gn.params["num_groups"] == 4 and gn.params["affine"] is True


# ---- the constructs of the other fixes: each present, absent, and in each regime ---------------
#
# Every instance found below must build its construct's probe (oracle.workers.probes) from its own
# parameters and export: `_probes_build` checks each test's instances.

F = torch.nn.functional
# The norm and conv constructs have the section above (their regimes name only what differs
# from the probe builder's defaults, which a trace spells out); every other construct a trace
# detects is tested below, a new one included without being listed here.
FIRST_KINDS = ("batch_norm", "conv_transpose", "group_norm", "layer_norm")
NEW_KINDS = tuple(c.kind for c in detected_constructs() if c.kind not in FIRST_KINDS)


@cache
def _table(path: Path) -> dict:
    """A converter release's get_decomp_table(), from its environment's `_decomp.py` (a file
    that needs only torch); `path` is the environment's folder."""
    (file,) = sorted(path.glob("lib/python*/site-packages/coreai_torch/_decomp.py"))
    spec = importlib.util.spec_from_file_location(f"_decomp_{path.name.replace('.', '_')}", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_decomp_table()


def _found(
    module: torch.nn.Module,
    *args: torch.Tensor,
    dynamic_shapes=None,
    table: dict | None = None,
    kinds=NEW_KINDS,
) -> list[Grouped]:
    """Instances in the exported graph, decomposed with `table` (default: torch's own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)
        ep = ep.run_decompositions() if table is None else ep.run_decompositions(table)
    found = group(detect(ep.graph.nodes, kinds))
    _probes_build(found)
    return found


def _probes_build(found: list[Grouped]) -> None:
    """Each instance's probe builds from its parameters, exports and runs."""
    for g in found:
        if g.kind == "quantize":
            continue  # needs coreai-torch: checked in its converter environment below
        spec = {
            "construct": g.kind,
            "params": probe_params(g.kind, g.params),
            "dtype": g.dtype,
            "values": "trained",
            "seed": 0,
            "pipeline": {"decompositions": "coreai", "optimize": True, "shapes": "static"},
        }
        probe = probes.build(spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.export.export(
                probe.module, tuple(probe.inputs.values()), dynamic_shapes=probe.dynamic_shapes()
            )
        with torch.no_grad():
            probe.module(*probe.inputs.values())


def _of(found: list[Grouped], kind: str) -> list[Grouped]:
    return [g for g in found if g.kind == kind]


def _probe(g: Grouped) -> tuple:
    """What a probe is built from: its parameters and dtype, and the instance's count."""
    return probe_params(g.kind, g.params), g.dtype, g.count


class Divisions(torch.nn.Module):
    def forward(self, i, j, x, y):
        return (
            i / j,
            torch.true_divide(i, j),
            torch.div(i, j, rounding_mode=None),
            i / 2.5,
            i / 7,
            x / y,
            x / torch.tensor(8.0),
            x / 4.0,
            torch.div(i, j, rounding_mode="floor"),
            torch.div(x, y, rounding_mode="trunc"),
            x // y,
        )


def test_true_divisions_record_form_and_operand_dtypes():
    i, j = (
        torch.randint(-9, 9, (4, 16), dtype=torch.int32),
        torch.randint(1, 9, (4, 16), dtype=torch.int32),
    )
    x, y = torch.randn(4, 16, dtype=torch.float16), torch.rand(4, 16, dtype=torch.float16) + 1
    found = _found(Divisions(), i, j, x, y, kinds=["true_divide"])
    assert {g.kind for g in found} == {"true_divide"}  # floor and trunc modes are not
    assert [_probe(g) for g in found] == [
        # int / int, torch.true_divide exports as the same div.Tensor: one instance of two
        ({"form": "tensor", "operands": "int32", "shape": [4, 16]}, "float32", 2),
        ({"form": "div_mode_none", "operands": "int32", "shape": [4, 16]}, "float32", 1),
        ({"form": "scalar", "operands": "int32", "shape": [4, 16], "divisor": 2.5}, "float32", 1),
        ({"form": "scalar", "operands": "int32", "shape": [4, 16], "divisor": 7}, "float32", 1),
        ({"form": "tensor", "operands": "float", "shape": [4, 16]}, "float16", 1),
        ({"form": "tensor_0dim_fp32", "operands": "float", "shape": [4, 16]}, "float16", 1),
        ({"form": "scalar", "operands": "float", "shape": [4, 16], "divisor": 4.0}, "float16", 1),
    ]
    assert [g.params["operand_types"] for g in found] == [
        "int32 / int32",
        "int32 / int32",
        "int32 / float",
        "int32 / int",
        "float16 / float16",
        "float16 / 0-dim float32 tensor",
        "float16 / float",
    ]


def test_floor_divisions_are_their_own_construct_trunc_is_none():
    i, j = (
        torch.randint(-9, 9, (4, 16), dtype=torch.int32),
        torch.randint(1, 9, (4, 16), dtype=torch.int32),
    )
    x, y = torch.randn(4, 16, dtype=torch.float16), torch.rand(4, 16, dtype=torch.float16) + 1
    found = _found(Divisions(), i, j, x, y, kinds=["floor_divide"])
    assert [_probe(g) for g in found] == [
        ({"form": "tensor", "operands": "int32", "shape": [4, 16]}, "float32", 1),
        ({"form": "tensor", "operands": "float", "shape": [4, 16]}, "float16", 1),  # x // y
    ]
    assert [g.params["operand_types"] for g in found] == ["int32 // int32", "float16 // float16"]


class SineEmbedding(torch.nn.Module):
    """sam3's form: an int64 arange cast to fp16, floor-divided by a Python int."""

    def forward(self, x):
        dim_t = torch.arange(128, dtype=torch.int64).to(x.dtype)
        return x + torch.div(dim_t, 2, rounding_mode="floor")


def test_an_fp16_floor_division_by_a_python_int():
    found = _found(
        SineEmbedding(), torch.randn(1, 128, dtype=torch.float16), kinds=["floor_divide"]
    )
    assert [_probe(g) for g in found] == [
        ({"form": "scalar", "operands": "float", "shape": [128], "divisor": 2}, "float16", 1)
    ]
    assert found[0].params["operand_types"] == "float16 // int"


class ManyDivisions(torch.nn.Module):
    def forward(self, a, b, c):
        return a / a.sum(), b / (b + 1), c / (c + 1), a * 2


def test_divisions_of_many_shapes_are_one_instance_with_a_representative_shape():
    found = _found(
        ManyDivisions(),
        torch.rand(2, 3, dtype=torch.float16) + 1,
        torch.rand(5, dtype=torch.float16),
        torch.rand(1, 7, 7, dtype=torch.float16),
    )
    # a / a.sum() divides by a 0-dim tensor of its own dtype: a scalar divisor to the lowering
    assert [(g.params["form"], g.count) for g in found] == [("scalar", 1), ("tensor", 2)]
    tensor = found[1]
    assert tensor.params["shape"] == [5] and tensor.params["shapes_seen"] == ["5", "1x7x7"]


def test_a_graph_without_division_records_none():
    class NoDiv(torch.nn.Module):
        def forward(self, x):
            return x * 0.5, torch.floor_divide(x, 2), x.reciprocal()

    assert _found(NoDiv(), torch.randn(4, 8), kinds=["true_divide"]) == []


class Means(torch.nn.Module):
    def forward(self, x, i):
        return x.mean(-1, keepdim=True, dtype=torch.float32), x.mean(1), i.mean(dtype=torch.float32)


def test_means_with_and_without_a_dtype_argument():
    found = _found(
        Means(),
        torch.randn(4, 64, dtype=torch.float16),
        torch.randint(0, 9, (4, 64), dtype=torch.int32),
    )
    assert [_probe(g) for g in found] == [
        (
            {
                "operand": "float",
                "shape": [4, 64],
                "dims": [-1],
                "keepdim": True,
                "dtype_arg": "float32",
            },
            "float16",
            1,
        ),
        # a plain mean: dtype_arg "" makes the probe call x.mean(dims) without one
        (
            {"operand": "float", "shape": [4, 64], "dims": [1], "keepdim": False, "dtype_arg": ""},
            "float16",
            1,
        ),
        ({"operand": "int32", "shape": [4, 64], "dtype_arg": "float32"}, "float32", 1),
    ]


class Minima(torch.nn.Module):
    def forward(self, a, b, x):
        return (
            torch.min(a, -1).indices,
            torch.min(b, 0, keepdim=True).values,
            torch.min(x, 1),
            x.min(),
            torch.argmin(x, 1),
        )


def test_min_dim_by_operand_dtype():
    found = _found(
        Minima(),
        torch.randint(-9, 9, (4, 16), dtype=torch.int8),
        torch.randint(-9, 9, (16, 4), dtype=torch.int64),
        torch.randn(4, 16),
    )
    # x.min() (min.default) and argmin are other ops
    assert [_probe(g) for g in found] == [
        ({"int_dtype": "int8", "shape": [4, 16], "dim": -1, "keepdim": False}, "float32", 1),
        ({"int_dtype": "int32", "shape": [16, 4], "dim": 0, "keepdim": True}, "float32", 1),
        ({"shape": [4, 16], "dim": 1, "keepdim": False}, "float32", 1),
    ]
    assert found[1].params["tensor_dtype"] == "int64"


class Pools(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = torch.nn.MaxPool2d(2)

    def forward(self, x):
        return (
            F.max_pool2d(x, 2),
            self.pool(x),
            F.max_pool2d(x, 3, 1, padding=1),
            F.max_pool2d(x, 3, padding=1),
        )


def test_max_pool2d_with_and_without_a_stride_argument():
    found = _found(Pools(), torch.randn(1, 4, 8, 8))
    assert [_probe(g) for g in found] == [
        ({"form": "functional", "kernel": [2, 2], "input_shape": [1, 4, 8, 8]}, "float32", 1),
        (
            {"form": "module", "kernel": [2, 2], "stride": [2, 2], "input_shape": [1, 4, 8, 8]},
            "float32",
            1,
        ),
        (
            {
                "form": "functional",
                "kernel": [3, 3],
                "stride": [1, 1],
                "padding": [1, 1],
                "input_shape": [1, 4, 8, 8],
            },
            "float32",
            1,
        ),
        (
            {
                "form": "functional",
                "kernel": [3, 3],
                "padding": [1, 1],
                "input_shape": [1, 4, 8, 8],
            },
            "float32",
            1,
        ),
    ]
    assert _found(torch.nn.AvgPool2d(2), torch.randn(1, 4, 8, 8)) == []


def test_atan2_of_floats_and_of_integers():
    class Atan2(torch.nn.Module):
        def forward(self, y, x, i, j):
            return torch.atan2(y, x), torch.atan2(i, j)

    found = _found(
        Atan2(),
        torch.randn(8, 8, dtype=torch.float16),
        torch.randn(8, 8, dtype=torch.float16),
        torch.randint(-5, 5, (8, 8), dtype=torch.int32),
        torch.randint(-5, 5, (8, 8), dtype=torch.int32),
    )
    assert [_probe(g) for g in found] == [
        ({"shape": [8, 8]}, "float16", 1),
        ({"shape": [8, 8], "operands": "int32"}, "float32", 1),
    ]
    assert _found(torch.nn.Tanh(), torch.randn(8, 8)) == []


class Pads(torch.nn.Module):
    def forward(self, a, b, c):
        return (
            F.pad(a, (3, 2), "reflect"),
            F.pad(b, (1, 2, 3, 0), "replicate"),
            F.pad(c, (1, 1, 2, 0, 0, 1), "reflect"),
            F.pad(a, (3, 2), "constant", 0.5),
            F.pad(b, (0, 0, 1, 0)),
        )


PAD_ARGS = (
    torch.randn(1, 4, 16, dtype=torch.float16),
    torch.randn(1, 4, 8, 8),
    torch.randn(1, 2, 4, 5, 6),
)
PADS = [
    ({"mode": "reflect", "pads": [3, 2], "input_shape": [1, 4, 16]}, "float16", 1),
    ({"mode": "replicate", "pads": [1, 2, 3, 0], "input_shape": [1, 4, 8, 8]}, "float32", 1),
    ({"mode": "reflect", "pads": [1, 1, 2, 0, 0, 1], "input_shape": [1, 2, 4, 5, 6]}, "float32", 1),
    ({"mode": "constant", "pads": [3, 2], "input_shape": [1, 4, 16], "value": 0.5}, "float16", 1),
    (
        {"mode": "constant", "pads": [0, 0, 1, 0], "input_shape": [1, 4, 8, 8], "value": 0.0},
        "float32",
        1,
    ),
]


@pytest.mark.parametrize("table", [None, "0.4.1", "0.4.2"], ids=["default", "0.4.1", "0.4.2"])
def test_pads_by_mode_whether_or_not_the_table_decomposes_them(table, env):
    """0.4.2's table keeps reflection/replication pads whole; torch's and 0.4.1's decompose
    them into index arithmetic, from which the same pad is read back."""
    found = _found(
        Pads(), *PAD_ARGS, table=_table(env(table).path) if table else None, kinds=["pad"]
    )
    assert [_probe(g) for g in found] == PADS
    decomposed = [g.params.get("graph", "") for g in found[:3]]
    if table == "0.4.2":
        assert decomposed == ["", "", ""]
    else:
        assert all(d.startswith("decomposed by the table") for d in decomposed)


def test_a_graph_without_padding_records_none():
    assert _found(torch.nn.Conv1d(4, 4, 3), torch.randn(1, 4, 16)) == []


class Aranges(torch.nn.Module):
    def forward(self, x, offset):
        return (
            x + torch.arange(0, 72, dtype=x.dtype),
            torch.arange(0, 5, 0.5),
            offset + torch.arange(0, 16),
            torch.arange(4, 100, 3, dtype=torch.float32),
            offset + torch.arange(0, 16, dtype=torch.int64),
        )


def test_every_arange_is_recorded_integer_ones_with_the_dtype_the_graph_holds():
    found = _found(
        Aranges(), torch.randn(1, 72, dtype=torch.float16), torch.zeros(1, dtype=torch.int32)
    )
    assert [_probe(g) for g in found] == [
        ({"start": 0, "end": 72, "step": 1, "arange_dtype": "float16"}, "float16", 1),
        # float bounds without a dtype: torch's default (float32), and the probe's ""
        ({"start": 0, "end": 5, "step": 0.5, "arange_dtype": ""}, "float32", 1),
        # an integer arange (mimi's ring positions): a float32 probe of the same bounds
        ({"start": 0, "end": 16, "step": 1, "arange_dtype": ""}, "float32", 1),
        ({"start": 4, "end": 100, "step": 3, "arange_dtype": "float32"}, "float32", 1),
        # spelled with an explicit int64: another instance, as the graph differs
        ({"start": 0, "end": 16, "step": 1, "arange_dtype": "int64"}, "float32", 1),
    ]
    integer = [g for g in found if g.params.get("tensor_dtype")]
    assert [g.params["tensor_dtype"] for g in integer] == ["int64", "int64"]


class Tiled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1, 16))

    def forward(self, x):
        return x * self.w.repeat(x.shape[0], 1)


def test_repeat_static_and_symbolic():
    static = _found(Tiled(), torch.randn(3, 16))
    # a static repeat's probe is built with its own input shape and repeats
    assert [_probe(g) for g in static] == [
        ({"batch": 3, "length": 16, "input_shape": [1, 16], "repeats": [3, 1]}, "float32", 1)
    ]
    symbolic = _found(
        Tiled(), torch.randn(3, 16), dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=16)},)
    )
    assert [_probe(g) for g in symbolic] == [
        (
            {
                "batch": 3,
                "length": 16,
                "dynamic_batch": [2, 16],
                "input_shape": [1, 16],
                "repeats": [3, 1],
            },
            "float32",
            1,
        )
    ]
    assert symbolic[0].params["sizes"] == "dynamic: example sizes"


class Cats(torch.nn.Module):
    def forward(self, x, y):
        return torch.cat([x, y], dim=1), torch.cat([x[:, :4], y], dim=2)


def test_cat_static_is_the_control_dynamic_axes_are_recorded():
    x, y = torch.randn(2, 12, 8), torch.randn(2, 4, 8)
    static = _found(Cats(), x, y)
    assert [_probe(g) for g in static] == [  # every static cat of one dtype: one instance
        (
            {
                "mode": "sliced",
                "batch": 2,
                "length": 8,
                "channels": 12,
                "other_channels": 4,
                "prefix": 8,
                "dim": 1,
                "input_shapes": [[2, 12, 8], [2, 4, 8]],
            },
            "float32",
            2,
        )
    ]
    assert static[0].params["shapes_seen"] == ["2x12x8 + 2x4x8", "2x4x8 + 2x4x8"]
    length = torch.export.Dim("length", min=8, max=64)
    dynamic = _found(Cats(), x, y, dynamic_shapes=({1: length}, None))
    assert [_probe(g) for g in dynamic] == [
        (
            {
                "mode": "along_dynamic",
                "batch": 2,
                "length": 12,
                "channels": 8,
                "prefix": 4,
                "dynamic_length": [8, 64],
                "dim": 1,
                "input_shapes": [[2, 12, 8], [2, 4, 8]],
            },
            "float32",
            1,
        ),
        (
            {
                "mode": "sliced",
                "batch": 2,
                "length": 12,
                "channels": 8,
                "other_channels": 8,
                "prefix": 4,
                "dynamic_length": [8, 64],
                "dim": 2,
                "input_shapes": [[2, 4, 8], [2, 4, 8]],
            },
            "float32",
            1,
        ),
    ]


class Shapes(torch.nn.Module):
    def forward(self, x):
        b, t, c = x.shape
        return (
            x.view(b, t, 4, c // 4),
            x.reshape(b * t, c),
            x.reshape(b, -1),
            x[:, -1],
            x[:, 0],
            x.view(-1, c),
        )


def test_views_and_selects_only_with_symbolic_sizes():
    x = torch.randn(2, 12, 16)
    # static: int shape lists and static dims, resolved at conversion in every release
    assert _found(Shapes(), x) == []
    batch = torch.export.Dim("batch", min=2, max=16)
    length = torch.export.Dim("length", min=2, max=64)
    found = _found(Shapes(), x, dynamic_shapes=({0: batch, 1: length},))
    views = [
        (g.params["mode"], g.params["batch"], g.params["dynamic_batch"], g.dtype)
        for g in _of(found, "view_dynamic")
    ]
    assert views == [
        ("split_heads", 2, [2, 16], "float32"),
        ("merge", 2, [2, 16], "float32"),
        ("flatten", 2, [2, 16], "float32"),
    ]
    # x.view(-1, c): no SymInt in the list; x[:, -1] and x[:, 0] on the dynamic length
    assert [_probe(g) for g in _of(found, "select_dynamic")] == [
        (
            {
                "batch": 2,
                "length": 12,
                "channels": 16,
                "dim": 1,
                "index": -1,
                "dynamic_length": [2, 64],
            },
            "float32",
            1,
        ),
        (
            {
                "batch": 2,
                "length": 12,
                "channels": 16,
                "dim": 1,
                "index": 0,
                "dynamic_length": [2, 64],
            },
            "float32",
            1,
        ),
    ]


class DataDependent(torch.nn.Module):
    """SAM 3's detr decoder in small: a grid from sizes held in a tensor (.item() in the graph)."""

    def forward(self, x, hw):
        h, w = hw[0, 0], hw[0, 1]
        grid = (torch.arange(0, h, dtype=x.dtype) / h)[:, None] + (
            torch.arange(0, w, dtype=x.dtype) / w
        )[None, :]
        return x + grid.reshape(1, -1), grid.view(1, h.item(), w.item(), 1)


def test_data_dependent_sizes_of_a_static_graph_are_resolved_from_its_runtime_asserts():
    found = _found(DataDependent(), torch.randn(1, 36), torch.tensor([[6, 6]]))
    note = "data-dependent (.item()): sizes taken as equal factors of a runtime-asserted product"
    aranges = _of(found, "arange")
    # hw is an input: each size is a run-time one ("data"), which the probes rebuild so, the
    # division's 0-dim int64 divisor included
    assert [_probe(g) for g in aranges] == [
        (
            {"start": 0, "end": 6, "step": 1, "arange_dtype": "float32", "end_source": "data"},
            "float32",
            2,
        )
    ]
    divisions = _of(found, "true_divide")
    assert [_probe(g) for g in divisions] == [
        (
            {
                "form": "scalar",
                "operands": "float",
                "shape": [6],
                "divisor_dtype": "int64",
                "item_shape": ["u0"],
                "size_source": "data",
            },
            "float32",
            2,
        )
    ]
    assert divisions[0].params["operand_types"] == "float32 / 0-dim int64 tensor"
    views = _of(found, "view_dynamic")
    assert [(g.params["mode"], g.params["batch"], g.params["output_shape"]) for g in views] == [
        ("split_heads", 6, [1, 6, 6, 1])
    ]
    # hw is an input here: a run-time size, no dynamic input dim (no dynamic_batch to export)
    assert views[0].params["size_source"] == "data" and "dynamic_batch" not in views[0].params
    assert {g.params["sizes"] for g in aranges + divisions + views} == {note}


def test_masked_scatter_elementwise_and_broadcast():
    class Scatter(torch.nn.Module):
        def forward(self, x, s):
            return x.masked_scatter(x > 0, s), x.masked_scatter(x.mean(-1, keepdim=True) > 0, s)

    found = _found(
        Scatter(),
        torch.randn(4, 16, dtype=torch.float16),
        torch.randn(4, 16, dtype=torch.float16),
        kinds=("masked_scatter",),
    )
    assert [_probe(g) for g in found] == [
        ({"shape": [4, 16]}, "float16", 1),
        ({"shape": [4, 16], "broadcast": True}, "float16", 1),
    ]
    assert _found(torch.nn.ReLU(), torch.randn(4, 16)) == []


_QUANTIZE = """
import json, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, {root!r})
import torch
import coreai_torch
import coreai_torch._compression.custom_layers  # registers torch.ops.coreai
from inventory.trace.detect import detect, group
from oracle.workers import probes
from oracle.constructs import detected as detected_constructs
from oracle.constructs import probe_params


class Quant(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.rand(8) + 0.1)
        self.register_buffer("zp", torch.zeros(8, dtype=torch.int8))

    def forward(self, x):
        q = torch.ops.coreai.quantize(x, self.scale, torch.int8, zero_point=self.zp, axis=-1)
        return torch.ops.coreai.dequantize(q, self.scale, zero_point=self.zp, axis=-1), x * 2


ep = torch.export.export(Quant(), (torch.randn(2, 4, 8),))
ep = ep.run_decompositions(coreai_torch.get_decomp_table())
found = group(detect(ep.graph.nodes, ["quantize"]))
for g in found:
    probe = probes.build({{"construct": g.kind, "params": probe_params(g.kind, g.params),
                          "dtype": g.dtype}})
    torch.export.export(probe.module, tuple(probe.inputs.values()))
print(json.dumps([[g.params, g.dtype, g.count] for g in found]))
"""


def test_coreai_quantize_dequantize_in_a_converter_environment(env):
    """coreai-torch registers torch.ops.coreai: the probe is built in its environment."""
    root = str(Path(__file__).resolve().parents[3])
    proc = subprocess.run(
        [str(env("0.4.2").python), "-c", _QUANTIZE.format(root=root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    ((params, dtype, count),) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (probe_params("quantize", params), dtype, count) == (
        {"shape": [2, 4, 8], "axis": -1, "zero_point": True, "output_dtype": "int8"},
        "float32",
        2,
    )  # the quantize and its dequantize: one round trip
    assert params["per_channel"] is True and params["rank"] == 3


# ---- every regime's own probe reads back as that regime ----------------------------------------

REGIMES = [r for r in load_regimes() if r.construct in NEW_KINDS and r.construct != "quantize"]
# Regimes whose probe the trace reads as another regime, and why.
READ_OTHERWISE = {
    "select_dynamic/last-of-static-length": "a select on a static dim is not recorded",
    "cat_dynamic/reshaped-dynamic-batch": "read as along_dynamic (a cat along a dynamic axis)",
    "cat_dynamic/upsampled-dynamic-length": "read as along_dynamic (a cat along a dynamic axis)",
}


def _as_traced(regime) -> tuple[dict, str]:
    """A regime's parameters as a trace of its probe records them: what the graph cannot show
    (a 0-dim divisor's value, how the division was spelled, values) is left out."""
    params = dict(regime.spec.params)
    params.pop("divide_by_zero", None)
    for key in get_construct(regime.construct).value_params:
        params.pop(key, None)  # it picks input values, not the graph (atan2's `pairs`)
    if params.get("form") == "true_divide":
        params["form"] = "tensor"  # torch.true_divide exports as div.Tensor
    if params.get("form") == "tensor_0dim_fp32":
        params.pop("divisor", None)  # a tensor's value is not in the graph
    if regime.construct == "arange":
        params.setdefault("step", 1)
        if params["arange_dtype"] == "input":
            params["arange_dtype"] = regime.spec.dtype
    # defaults the graph spells out
    if regime.construct == "min_dim" or (regime.construct == "mean_dtype" and "dims" in params):
        params.setdefault("keepdim", False)
    if params.get("mode") == "constant":
        params.setdefault("value", 0.0)
    if regime.construct == "max_pool2d" and params["form"] == "module":
        params.setdefault("stride", params["kernel"])  # nn.MaxPool2d passes stride = kernel
    if regime.construct == "cat_dynamic" and "dynamic_length" not in params:
        params["length"] = params["prefix"]  # the cat sees x[:, :prefix], not x
    # the instance's own layout, which the graph gives and a probe is built with: a cat's dim
    # and input shapes, a repeat's input shape and repeats (at the example sizes)
    if regime.construct == "cat_dynamic" and params.get("mode") == "sliced":
        b, p = params["batch"], params["prefix"]
        params.setdefault("dim", 2)
        params.setdefault(
            "input_shapes", [[b, p, params["channels"]], [b, p, params["other_channels"]]]
        )
    if regime.construct == "cat_dynamic" and params.get("mode") == "along_dynamic":
        b, c = params["batch"], params["channels"]
        params.setdefault("dim", 1)
        params.setdefault("input_shapes", [[b, params["length"], c], [b, params["prefix"], c]])
    if regime.construct == "repeat_symbolic":
        params.setdefault("input_shape", [1, params["length"]])
        params.setdefault("repeats", [params["batch"], 1])
    for key in ("dynamic_batch", "dynamic_length"):
        if key in params:  # torch.export specializes sizes 0 and 1: a dim's minimum is 2
            params[key] = [max(2, params[key][0]), params[key][1]]
    return params, regime.spec.dtype


@pytest.mark.parametrize("regime", REGIMES, ids=[r.id for r in REGIMES])
def test_a_regimes_probe_traces_back_to_that_regime(regime, env):
    probe = probes.build(regime.spec.to_json())
    table = _table(env("0.4.2").path) if regime.spec.pipeline.decompositions == "coreai" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(
            probe.module, tuple(probe.inputs.values()), dynamic_shapes=probe.dynamic_shapes()
        )
        ep = ep.run_decompositions() if table is None else ep.run_decompositions(table)
    found = [
        (probe_params(g.kind, g.params), g.dtype)
        for g in group(detect(ep.graph.nodes, [regime.construct]))
    ]
    if regime.id in READ_OTHERWISE:
        assert _as_traced(regime) not in found, READ_OTHERWISE[regime.id]
        return
    assert found == [_as_traced(regime)]


class Softmaxes(torch.nn.Module):
    """Attention's softmax three ways: in the model's dtype, upcast to fp32 as transformers
    writes it (softmax(dtype=float32)) and cast back, and over an inner dim."""

    def forward(self, scores: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.softmax(scores, -1),
            torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype),
            torch.softmax(other, 1),
        )


def test_softmax_by_dim_and_whether_it_is_upcast():
    found = _found(
        Softmaxes().half(),
        torch.randn(1, 4, 8, 8, dtype=torch.float16),
        torch.randn(2, 16, 8, dtype=torch.float16),
        kinds=["softmax"],
    )
    assert [_probe(g) for g in found] == [
        ({"input_shape": [1, 4, 8, 8], "dim": -1, "upcast": False}, "float16", 1),
        # the operand is a cast to fp32 of the fp16 scores: the probe is built in fp16, casts up
        ({"input_shape": [1, 4, 8, 8], "dim": -1, "upcast": True}, "float16", 1),
        ({"input_shape": [2, 16, 8], "dim": 1, "upcast": False}, "float16", 1),
    ]


def test_a_softmax_of_an_fp32_model_is_not_upcast():
    found = _found(Softmaxes(), torch.randn(1, 4, 8, 8), torch.randn(2, 16, 8), kinds=["softmax"])
    assert [_probe(g) for g in found] == [
        ({"input_shape": [1, 4, 8, 8], "dim": -1, "upcast": False}, "float32", 2),
        ({"input_shape": [2, 16, 8], "dim": 1, "upcast": False}, "float32", 1),
    ]


class AttentionBlock(torch.nn.Module):
    """A linear projection with a bias, QK^T (the keys transposed), PV, an output projection
    without one applied to a batched and a 2-D input."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(32, 32)
        self.out = torch.nn.Linear(32, 32, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, c = x.shape
        q = self.qkv(x).view(b, t, 4, 8).transpose(1, 2)
        weights = torch.softmax(q @ q.transpose(-1, -2), -1)
        y = (weights @ q).transpose(1, 2).reshape(b, t, c)
        return self.out(y), self.out(x[0])


def test_linear_layers_and_attention_products_with_their_operands_as_written():
    found = _found(
        AttentionBlock().half(), torch.randn(1, 6, 32, dtype=torch.float16), kinds=["matmul"]
    )
    linear = {"form": "linear", "in_features": 32, "out_features": 32}
    assert [_probe(g) for g in found] == [
        ({**linear, "bias": True, "input_shapes": [[1, 6, 32]]}, "float16", 1),
        (
            {"form": "matmul", "transposed": True, "input_shapes": [[1, 4, 6, 8], [1, 4, 6, 8]]},
            "float16",
            1,
        ),
        (
            {"form": "matmul", "transposed": False, "input_shapes": [[1, 4, 6, 6], [1, 4, 6, 8]]},
            "float16",
            1,
        ),
        # a batched and a 2-D input of one layer: one instance, the first input's shape
        ({**linear, "bias": False, "input_shapes": [[1, 6, 32]]}, "float16", 2),
    ]
    assert [g.params["op"] for g in found] == ["addmm", "bmm", "bmm", "mm"]
    assert found[-1].params["shapes_seen"] == ["1x6x32", "6x32"]


class Attentions(torch.nn.Module):
    """F.scaled_dot_product_attention three ways: causal with the default scale, an additive
    mask with transformers' explicit scale over fewer key/value heads (grouped), and a boolean
    mask over a longer key sequence (a streaming decoder's cache)."""

    def forward(
        self, q: torch.Tensor, kv: torch.Tensor, few: torch.Tensor, add: torch.Tensor, keep
    ) -> tuple[torch.Tensor, ...]:
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return (
            sdpa(q, q, q, is_causal=True),
            sdpa(q, few, few, add, scale=0.125, enable_gqa=True),
            sdpa(q, kv, kv, keep),
        )


def test_sdpa_with_its_mask_kind_causality_scale_and_heads():
    q = torch.randn(1, 4, 6, 8, dtype=torch.float16)
    found = _found(
        Attentions().half(),
        q,
        torch.randn(1, 4, 10, 8, dtype=torch.float16),
        torch.randn(1, 2, 6, 8, dtype=torch.float16),
        torch.zeros(1, 1, 6, 6, dtype=torch.float16),
        torch.ones(1, 1, 6, 10, dtype=torch.bool),
        table={},  # coreai-torch's table keeps the op whole, as an empty one does
        kinds=["sdpa"],
    )
    plain = {"q_shape": [1, 4, 6, 8], "gqa": False}
    assert [_probe(g) for g in found] == [
        ({**plain, "kv_shape": [1, 4, 6, 8], "mask": "none", "causal": True}, "float16", 1),
        (
            {
                **plain,
                "kv_shape": [1, 2, 6, 8],
                "mask": "additive",
                "mask_shape": [1, 1, 6, 6],
                "causal": False,
                "scale": 0.125,
                "gqa": True,
            },
            "float16",
            1,
        ),
        (
            {**plain, "kv_shape": [1, 4, 10, 8], "mask": "bool", "mask_shape": [1, 1, 6, 10]}
            | {"causal": False},
            "float16",
            1,
        ),
    ]


def test_attention_written_by_hand_is_no_sdpa_instance():
    """QK^T, softmax and PV written out are the matmul and softmax kinds' instances."""
    found = _found(
        AttentionBlock().half(),
        torch.randn(1, 6, 32, dtype=torch.float16),
        kinds=["sdpa", "softmax", "matmul"],
    )
    assert {g.kind for g in found} == {"softmax", "matmul"}


class Mlps(torch.nn.Module):
    """A SwiGLU MLP (silu of the gate times the up projection), a plain SiLU, and GELU exact and
    tanh-approximated."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(8, 16, bias=False)
        self.up = torch.nn.Linear(8, 16, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        gelu = torch.nn.functional.gelu
        return (
            torch.nn.functional.silu(self.gate(x)) * self.up(x),
            torch.nn.functional.silu(x),
            gelu(x),
            gelu(x, approximate="tanh"),
        )


def test_silu_gated_or_plain_and_gelu_by_its_approximation():
    found = _found(
        Mlps().half(),
        torch.randn(1, 5, 8, dtype=torch.float16),
        table={},  # coreai-torch's table keeps silu, as an empty one does
        kinds=["silu", "gelu"],
    )
    assert [(g.kind, *_probe(g)) for g in found] == [
        ("silu", {"form": "gated", "input_shape": [1, 5, 16]}, "float16", 1),
        ("silu", {"form": "plain", "input_shape": [1, 5, 8]}, "float16", 1),
        ("gelu", {"approximate": "none", "input_shape": [1, 5, 8]}, "float16", 1),
        ("gelu", {"approximate": "tanh", "input_shape": [1, 5, 8]}, "float16", 1),
    ]


class RMSNorms(torch.nn.Module):
    """transformers' RMSNorm in an fp16 model (upcast, cast back, weight) and one without weight
    computed in the model's dtype."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        plain = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)
        return self.weight * h.to(x.dtype), plain


def test_rms_norm_with_its_upcast_weight_and_eps():
    found = _found(RMSNorms().half(), torch.randn(1, 5, 8, dtype=torch.float16), kinds=["rms_norm"])
    assert [_probe(g) for g in found] == [
        ({"input_shape": [1, 5, 8], "eps": 1e-6, "upcast": True, "weight": True}, "float16", 1),
        ({"input_shape": [1, 5, 8], "eps": 1e-5, "upcast": False, "weight": False}, "float16", 1),
    ]


class ConvModuleGates(torch.nn.Module):
    """A conformer convolution module's gate (pointwise conv, then F.glu over channels), nn.GLU
    over the last dim, and two sigmoids that are no GLU: a speaker head's, and a hand-written
    gate whose halves are not one tensor's."""

    def __init__(self) -> None:
        super().__init__()
        self.pointwise = torch.nn.Conv1d(8, 16, 1)
        self.glu = torch.nn.GLU()
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.nn.functional.glu(self.pointwise(x), dim=1),
            self.glu(y),
            torch.sigmoid(self.head(y)),
            y[..., :4] * torch.sigmoid(x.transpose(1, 2)[..., 4:]),
            2 * torch.sigmoid(y),  # a constant operand beside a sigmoid
        )


def test_glu_over_its_dim_in_the_input_dtype_and_no_other_sigmoid():
    """torch's decomposition of an fp16 GLU computes in fp32 between two casts: the instance is
    the fp16 input's, over the dim the slices take (non-negative, as the graph holds it)."""
    found = _found(
        ConvModuleGates().half(),
        torch.randn(1, 8, 5, dtype=torch.float16),
        torch.randn(1, 5, 8, dtype=torch.float16),
        kinds=["glu"],
    )
    assert [(g.kind, *_probe(g)) for g in found] == [
        ("glu", {"dim": 1, "input_shape": [1, 16, 5]}, "float16", 1),
        ("glu", {"dim": 2, "input_shape": [1, 5, 8]}, "float16", 1),
    ]
    _probes_build(found)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def _rotate_pairwise(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.view(*x.shape[:-1], -1, 2).unbind(dim=-1)
    return torch.stack((-x2, x1), dim=-1).flatten(start_dim=-2)


class Rotaries(torch.nn.Module):
    """Llama's rotate-half on a query in the model's dtype, SAM 3's pairwise rotation over an
    fp32 upcast with fp32 tables (transformers' apply_rotary_pos_emb_2d), and two negations that
    are no rotary: a plain one and a rotate-half never multiplied by a table."""

    def forward(
        self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cos32: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        h = q.float()
        pairwise = (h * cos32 + _rotate_pairwise(h) * cos32.flip(-1)).type_as(q)
        return pairwise, q * cos + _rotate_half(q) * sin, -q, _rotate_half(q), -(q + 1)


def test_rotary_rotate_half_or_pairwise_and_no_other_negation():
    q = torch.randn(1, 2, 6, 8, dtype=torch.float16)
    table = torch.randn(1, 1, 6, 8, dtype=torch.float16)
    found = _found(Rotaries(), q, table, table, torch.randn(6, 8), kinds=["rotary"])
    plain = {"input_shape": [1, 2, 6, 8]}
    assert [(g.kind, *_probe(g)) for g in found] == [
        (
            "rotary",
            {**plain, "form": "pairwise", "table_shape": [6, 8], "table_dtype": "float32"}
            | {"upcast": True},
            "float16",
            1,
        ),
        (
            "rotary",
            {**plain, "form": "half", "table_shape": [1, 1, 6, 8], "table_dtype": "float16"}
            | {"upcast": False},
            "float16",
            1,
        ),
    ]
    _probes_build(found)


class MixedRotary(torch.nn.Module):
    """SAM 3 as transformers 5.9.0 writes it under `.to(torch.float16)`: the fp32-upcast query
    times the fp16 [N, d] table buffers; and as 5.24.0 does, times fp32 [1, N, d] tables computed
    in the forward (from a table that was never fp16 nor [N, d])."""

    def forward(self, q: torch.Tensor, cos: torch.Tensor, angles: torch.Tensor) -> tuple:
        h = q.float()
        buffers = (h * cos + _rotate_pairwise(h) * cos.flip(-1)).type_as(q)
        table = angles[None, ...].repeat_interleave(2, dim=-1)
        computed = (h * table.cos() + _rotate_pairwise(h) * table.sin()).type_as(q)
        return buffers, computed


def test_rotary_tables_are_read_as_the_products_take_them():
    """The table's dtype and shape are those of the product's operand: an fp16 table is a
    mixed-precision product the probe must hold, so neither is read through the cast or the
    reshape that made it (sam3's stand-in states the difference from its recipe's)."""
    q = torch.randn(1, 2, 6, 8, dtype=torch.float16)
    cos = torch.randn(6, 8, dtype=torch.float16)
    found = _found(MixedRotary(), q, cos, torch.randn(6, 4), kinds=["rotary"])
    pairwise = {"form": "pairwise", "input_shape": [1, 2, 6, 8], "upcast": True}
    assert sorted(
        (g.params["table_dtype"], g.params["table_shape"], g.dtype, g.count) for g in found
    ) == [("float16", [6, 8], "float16", 1), ("float32", [1, 6, 8], "float16", 1)]
    assert all(_probe(g)[0].items() >= pairwise.items() for g in found)


class MacaronLayer(torch.nn.Module):
    """A FastConformer layer's residuals: two macaron half-steps (`x + 0.5 * ff(x)`), and
    residuals that are not scaled by a constant (the attention's, a layer scale's parameter)."""

    def __init__(self) -> None:
        super().__init__()
        self.ff1 = torch.nn.Linear(8, 8)
        self.ff2 = torch.nn.Linear(8, 8)
        self.attn = torch.nn.Linear(8, 8)
        self.gamma = torch.nn.Parameter(torch.full((8,), 0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ff1(x)
        x = x + self.attn(x)
        x = x + self.gamma * self.attn(x)
        x = 1 + x  # a constant operand of an add
        x = x * 22.6 + 0.5 * self.ff1(x)  # two constant products: no single scaled branch
        return 0.5 * self.ff2(x) + x


def test_scaled_residual_only_where_a_constant_scales_the_branch():
    found = _found(
        MacaronLayer().half(), torch.randn(1, 5, 8, dtype=torch.float16), kinds=["scaled_residual"]
    )
    assert [(g.kind, *_probe(g)) for g in found] == [
        ("scaled_residual", {"input_shape": [1, 5, 8], "scale": 0.5}, "float16", 2)
    ]
    _probes_build(found)


class RelPosScores(torch.nn.Module):
    """transformers' relative-position attention scores (modeling_parakeet.py): each term scaled
    on its own, `matmul(q, k) * scaling + masked(matrix_bd * scaling)`; the recipe's
    `(matrix_ac + matrix_bd) / sqrt(d_k)` divides the sum instead."""

    def forward(self, q, k, bd, mask) -> tuple:
        scaled_bd = (bd * 0.125).masked_fill(mask, -1e4)
        return q @ k.transpose(-1, -2) * 0.125 + scaled_bd, (q @ k.transpose(-1, -2) + bd) / 8.0


def test_a_tensor_plus_a_constant_product_is_one_whatever_the_tensor_holds():
    """The construct is the graph's two ops (the probe holds them as they are), not a claim that
    the tensor is the branch's input: attention scores scaled term by term are one; the same
    scores divided after the sum are none."""
    q, k, bd = (torch.randn(1, 2, 5, 8, dtype=torch.float16) for _ in range(3))
    bd = bd[..., :5]
    mask = torch.zeros(1, 1, 5, 5, dtype=torch.bool)
    found = _found(RelPosScores(), q, k, bd, mask, kinds=["scaled_residual"])
    assert [(g.kind, *_probe(g)) for g in found] == [
        ("scaled_residual", {"input_shape": [1, 2, 5, 5], "scale": 0.125}, "float16", 1)
    ]


class StreamingStep(torch.nn.Module):
    """One streaming step with its states as inputs, as the zoo's Mimi decoder writes it for
    torch.export: a KV shift register, a streaming conv's carried input and a streaming transposed
    conv's carried partial (with and without a bias); and concats that update no state: two
    activations, a state whose tail no one keeps, a shift whose slice is not the new entries'
    size, a learned prefix (a parameter, not a state)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(4, 4, 3)
        self.convtr = torch.nn.ConvTranspose1d(4, 4, 4, stride=2)
        self.prefix = torch.nn.Parameter(torch.zeros(1, 4, 2))

    def forward(
        self, x: torch.Tensor, kv: torch.Tensor, prev: torch.Tensor, partial: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        new = torch.stack([x.transpose(1, 2), x.transpose(1, 2)])  # k and v: [2, 1, 6, 4]
        shifted = torch.cat([kv[:, :, 6:], new], dim=2)
        joined = torch.cat([prev, x], dim=-1)
        h, prev_n = self.conv(joined), joined[..., -2:]
        y = self.convtr(h)
        y = torch.cat([y[..., :2] + partial, y[..., 2:]], dim=-1)
        bias = self.convtr.bias
        assert bias is not None
        partial_n = y[..., -2:] - bias[:, None]
        up = torch.cat([y[..., :2] + partial, y[..., 2:]], dim=-1)  # no bias to take off
        return (
            shifted,
            h,
            prev_n,
            y[..., :-2],
            partial_n,
            up[..., -2:],
            torch.cat([x, h], dim=-1),  # two activations
            self.conv(torch.cat([prev, h], dim=-1)),  # a state whose tail no one keeps
            torch.cat([kv[:, :, 2:], new], dim=2),  # a shift that grows the cache
            torch.cat([self.prefix, x], dim=-1)[..., -2:],  # a parameter, not a state
        )


def test_cache_updates_of_each_form_and_no_other_concat():
    """Each state's update is found from its concat, in the state's dtype, along the axis the
    slices take (non-negative); the concats that update no state are none."""
    found = _found(
        StreamingStep(),
        torch.randn(1, 4, 6),
        torch.randn(2, 1, 8, 4),
        torch.randn(1, 4, 2),
        torch.randn(1, 4, 2),
        kinds=["cache_update"],
    )
    assert [(g.kind, *_probe(g)) for g in found] == [
        (
            "cache_update",
            {
                "form": "shift",
                "dim": 2,
                "state_shape": [2, 1, 8, 4],
                "input_shape": [2, 1, 6, 4],
                "bias": False,
            },
            "float32",
            1,
        ),
        (
            "cache_update",
            {
                "form": "history",
                "dim": 2,
                "state_shape": [1, 4, 2],
                "input_shape": [1, 4, 6],
                "bias": False,
            },
            "float32",
            1,
        ),
        (
            "cache_update",
            {
                "form": "overlap_add",
                "dim": 2,
                "state_shape": [1, 4, 2],
                "input_shape": [1, 4, 14],
                "bias": True,
            },
            "float32",
            1,
        ),
        (
            "cache_update",
            {
                "form": "overlap_add",
                "dim": 2,
                "state_shape": [1, 4, 2],
                "input_shape": [1, 4, 14],
                "bias": False,
            },
            "float32",
            1,
        ),
    ]
    _probes_build(found)


class Lookups(torch.nn.Module):
    """A decoder's token embedding (int64 indices), a position table looked up with int32
    indices and a padding row, and a row gather written as indexing (no embedding op)."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(32, 8)
        self.positions = torch.nn.Parameter(torch.randn(6, 8))

    def forward(self, ids: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            self.tokens(ids),
            torch.nn.functional.embedding(pos, self.positions, padding_idx=0),
            self.positions[ids],
        )


def test_embedding_with_its_table_indices_and_padding_row():
    found = _found(
        Lookups().half(),
        torch.randint(0, 32, (1, 5)),
        torch.randint(0, 6, (2, 6), dtype=torch.int32),
        kinds=["embedding"],
    )
    shared = {"embedding_dim": 8, "input_shape": [1, 5], "index_dtype": "int64"}
    assert [(g.kind, *_probe(g)) for g in found] == [
        ("embedding", {"num_embeddings": 32, **shared}, "float16", 1),
        (
            "embedding",
            {**shared, "num_embeddings": 6, "input_shape": [2, 6], "index_dtype": "int32"}
            | {"padding_idx": 0},
            "float16",
            1,
        ),
    ]
