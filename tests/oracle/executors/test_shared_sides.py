"""A comparison is made over stored sides (`oracle/executors/shared_sides.py`): a side two
comparisons share is converted once, under the real converters, and each comparison answers as
the comparison that converts both of its sides does; a store written before sides were is read,
not converted again; another driver's side is taken from the remote tier; a damaged side is
converted again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from oracle.compare.results import ProbeResult
from oracle.compare.spec import ProbeSpec
from oracle.executors import comparison, shared_sides
from oracle.store import location as store_location
from oracle.store import sides
from oracle.store.result_store import load_result

# differs between 0.4.1 and 0.4.2 (coreai-torch#40), so each comparison also measures
SPEC = ProbeSpec(
    "conv_transpose",
    {
        "dim": 1,
        "in_channels": 4,
        "out_channels": 2,
        "kernel": [4],
        "stride": [2],
        "padding": [0],
        "output_padding": [1],
        "input_shape": [1, 4, 11],
    },
)


@pytest.fixture
def converted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The release of every side converted from now on, in order (the real conversion runs)."""
    made: list[str] = []
    real = shared_sides._convert

    def spied(pool, env, spec, out):
        made.append(env.converter)
        return real(pool, env, spec, out)

    monkeypatch.setattr(shared_sides, "_convert", spied)
    yield made


def _answer(result: ProbeResult) -> tuple[object, ...]:
    shipped = {
        which: Path(side.files["shipped"]).read_text()
        for which, side in (("old", result.old), ("new", result.new))
    }
    return (result.emitted, result.shipped, result.outputs, result.old.ok, result.new.ok, shipped)


def _sides_of(result: ProbeResult) -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = json.loads(
        (Path(result.evidence) / shared_sides.SIDES_FILE).read_text()
    )
    return data


def test_a_side_shared_by_two_comparisons_is_converted_once_and_answers_as_before(
    converter_envs, pool, tmp_path, monkeypatch, converted
):
    a, b, c = (converter_envs[v] for v in ("0.4.1", "0.4.2", "0.4.3"))
    # as every store before sides held them: each comparison converted both of its sides
    monkeypatch.setenv("INVENTORY_STORE", str(tmp_path / "before"))
    before = [comparison.compare(SPEC, a, b, pool), comparison.compare(SPEC, b, c, pool)]
    assert before[0].shipped == "differs" and before[0].measurement is not None

    # that store is read as it is, under the same keys: nothing converted, no side made
    read = [shared_sides.compare(SPEC, a, b, pool), shared_sides.compare(SPEC, b, c, pool)]
    assert converted == [] and all(r.cached for r in read)
    assert [_answer(r) for r in read] == [_answer(r) for r in before]
    assert not (tmp_path / "before" / "sides").exists()

    monkeypatch.setenv("INVENTORY_STORE", str(tmp_path / "sides"))
    first = shared_sides.compare(SPEC, a, b, pool)
    second = shared_sides.compare(SPEC, b, c, pool)
    assert sorted(converted) == ["0.4.1", "0.4.2", "0.4.3"]  # 0.4.2 once, for both
    assert len(list((tmp_path / "sides" / "sides").iterdir())) == 3
    assert [_answer(first), _answer(second)] == [_answer(r) for r in before]
    assert first.measurement is not None and first.measurement.ok
    shared = sides.side_dir(SPEC, b).name
    assert _sides_of(first)["new"] == {"side": shared, "converted": True}
    assert _sides_of(second)["old"] == {"side": shared, "converted": False}
    # each comparison's record stands alone, its sides' files linked in and verified with it
    for result in (first, second):
        again = load_result(Path(result.evidence))
        assert again is not None and _answer(again) == _answer(result)

    # a damaged side is refused as a damaged result is: converted again, and replaced
    shipped = sides.side_dir(SPEC, b) / "new-0.4.2" / "shipped.mlir"
    if not shipped.exists():
        [shipped] = sides.side_dir(SPEC, b).rglob("shipped.mlir")
    text = shipped.read_text()
    shipped.unlink()  # the comparisons' links keep the original
    shipped.write_text(text.replace("coreai", "edited", 1))
    assert sides.load_side(sides.side_dir(SPEC, b)) is None
    converted.clear()
    third = shared_sides.compare(SPEC, a, b, pool, use_cache=False)
    assert sorted(converted) == ["0.4.1", "0.4.2"]
    assert sides.load_side(sides.side_dir(SPEC, b)) is not None
    assert _answer(third) == _answer(before[0])


def test_a_driver_takes_a_side_another_stored_from_the_remote_tier(
    converter_envs, pool, tmp_path, monkeypatch, converted
):
    a, b, c = (converter_envs[v] for v in ("0.4.1", "0.4.2", "0.4.3"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    said: list[str] = []
    try:
        # a first driver (a cache of its own in front of the tier) stores 0.4.1 -> 0.4.2
        monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "first"))
        store_location.choose(f"file://{tmp_path / 'shared'}", on_notice=said.append)
        shared_sides.compare(SPEC, a, b, pool)
        assert sorted(converted) == ["0.4.1", "0.4.2"]
        # a second driver, its cache empty, compares 0.4.2 -> 0.4.3: the 0.4.2 side is theirs
        converted.clear()
        monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "second"))
        store_location.choose(f"file://{tmp_path / 'shared'}", on_notice=said.append)
        result = shared_sides.compare(SPEC, b, c, pool)
        assert converted == ["0.4.3"]
        assert _sides_of(result)["old"] == {
            "side": sides.side_dir(SPEC, b).name,
            "converted": False,
        }
        assert (tmp_path / "second" / "sides" / sides.side_dir(SPEC, b).name).is_dir()
        assert result.old.ok and result.new.ok and said == []
    finally:
        store_location.reset()
