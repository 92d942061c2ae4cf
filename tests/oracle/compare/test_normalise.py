"""The normaliser: what it must erase, what it must keep, on real and captured IR."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle.compare.normalisation import compare_texts, normalise
from oracle.compare.spec import ProbeSpec
from oracle.executors.comparison import _convert

COMPOSITE = """module {
  coreai.graph private noinline @batch_norm_RAND(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    coreai.output %arg0 : tensor<4xf32>
  }
  coreai.graph @main(%arg0: tensor<4xf32> {coreai.name = "x"}) -> (tensor<4xf32>) {
    %0 = coreai.constant dense_resource<RES> : tensor<64xf32>
    %1 = coreai.invoke @batch_norm_RAND(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("PATH":3:0)
    coreai.output %1 : tensor<4xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      RES: "0xBLOB"
    }
  }
#-}
"""

BLOB = "10000000" + "AB" * 256


def _text(rand: str, res: str, path: str = "a", blob: str = BLOB) -> str:
    return (
        COMPOSITE.replace("RAND", rand)
        .replace("RES", res)
        .replace("PATH", path)
        .replace("BLOB", blob)
    )


def test_random_composite_names_resource_handles_and_locations_are_erased():
    a = _text("hxmvlxqs", "resource_16183899027337741279", "one")
    b = _text("qwertyui", "resource_15361609355879019948", "two")
    assert a != b
    assert compare_texts(a, b).identical
    assert "hxmvlxqs" not in normalise(a)
    assert "loc(" not in normalise(a)


def test_a_weight_change_is_never_normalised_away():
    a = _text("hxmvlxqs", "resource_1")
    b = _text("hxmvlxqs", "resource_1", blob="10000000" + "AB" * 255 + "AC")
    result = compare_texts(a, b)
    assert not result.identical
    assert result.changed_lines == 2 and "sha256:" in result.diff


def test_specialised_composite_names_keep_their_suffix():
    text = _text("hxmvlxqs", "resource_1").replace(
        "@batch_norm_hxmvlxqs", "@batch_norm_hxmvlxqs_spec_tensor4f32"
    )
    out = normalise(text)
    assert "@batch_norm_G1_spec_tensor4f32" in out


@pytest.mark.slow
@pytest.mark.own_workers  # two worker processes: a shared worker would convert both
def test_two_conversions_in_two_processes_normalise_identical(env, tmp_path):
    """Real IR: the same module converted by two separate worker processes."""
    from oracle.clients.worker_pool import Pool

    spec = ProbeSpec(
        "conv_transpose",
        {
            "dim": 1,
            "in_channels": 64,
            "out_channels": 32,
            "kernel": [16],
            "stride": [8],
            "input_shape": [1, 64, 5],
        },
    )
    texts = []
    for i in range(2):
        with Pool(tmp_path / f"logs{i}") as pool:  # a fresh process each time
            side = _convert(pool, env("0.4.1"), spec, tmp_path / f"run{i}")
        assert side.ok, side.error
        texts.append(Path(side.files["shipped"]).read_text())
    assert texts[0] != texts[1], "expected per-process resource handles in the raw text"
    assert normalise(texts[0]) == normalise(texts[1])
