"""The side store (`oracle/store/sides.py`): a converted side kept by what determines it, read
back only whole, and keyed by the code of its own kind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from oracle.catalog.releases import load_catalog
from oracle.compare.results import Side
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.envs.environment import Env, planned_env
from oracle.store import housekeeping, sides
from oracle.store import result_store as store

PAD = ProbeSpec("pad", {"pads": [1, 1], "mode": "constant", "input_shape": [1, 3, 8]})
CONV = ProbeSpec("conv_transpose", {"dim": 1, "in_channels": 4, "out_channels": 2})


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setenv("INVENTORY_STORE", str(tmp_path / "store"))
    return planned_env("0.4.2", load_catalog())


def _converted(spec: ProbeSpec, env: Env) -> tuple[Side, Path]:
    """A side as the worker leaves it, published: its files in a temp folder of the store."""
    final = sides.side_dir(spec, env)
    with store.building(final) as work:
        out = work / "new-0.4.2"
        out.mkdir()
        (out / "shipped.mlir").write_text("coreai.pad\n")
        (out / "convert.log").write_text("converted\n")
        made = Side(
            env.converter,
            {"coreai-torch": env.converter},
            True,
            files={"shipped": str(out / "shipped.mlir"), "log": str(out / "convert.log")},
            digest="abc",
        )
        return sides.publish_side(made, spec, work, final), final


def test_a_stored_side_reads_back_whole_and_a_damaged_one_is_refused(release):
    published, final = _converted(PAD, release)
    assert final.parent == store.store_root() / "sides" and final.name.startswith("side-pad-0.4.2-")
    read = sides.load_side(final)
    assert read == published and Path(read.files["shipped"]).read_text() == "coreai.pad\n"

    # a file edited (removed and written anew: a link elsewhere keeps the original) is damage
    shipped = Path(read.files["shipped"])
    shipped.unlink()
    shipped.write_text("coreai.pad {edited}\n")
    assert sides.load_side(final) is None
    pruned = housekeeping.prune()
    assert f"{final.name}: damaged or unreadable" in pruned.removed
    assert not final.exists()


def test_a_side_of_other_code_is_pruned_and_a_failure_with_failures(release, monkeypatch):
    _, final = _converted(PAD, release)
    assert housekeeping.prune().removed == ()
    assert housekeeping.prune(failures=True).removed == ()
    monkeypatch.setattr(sides, "side_code", lambda construct: "other")
    assert f"{final.name}: made by other oracle code" in housekeeping.prune().removed


def test_a_side_is_keyed_by_its_own_kinds_construct_module_not_every_one(release, tmp_path):
    oracle = tmp_path / "oracle"
    shutil.copytree(sides._ORACLE, oracle, ignore=shutil.ignore_patterns("__pycache__"))
    before = {spec.construct: sides.side_key(spec, release) for spec in (PAD, CONV)}
    sides.side_code.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sides, "_ORACLE", oracle)
            assert {s.construct: sides.side_key(s, release) for s in (PAD, CONV)} == before
            sides.side_code.cache_clear()
            (oracle / "constructs" / "pad.py").write_text("# edited\n", "utf-8")
            after = {s.construct: sides.side_key(s, release) for s in (PAD, CONV)}
            assert after["conv_transpose"] == before["conv_transpose"]
            assert after["pad"] != before["pad"]
            sides.side_code.cache_clear()
            (oracle / "workers" / "probe_worker.py").write_text("# edited\n", "utf-8")
            assert sides.side_key(CONV, release) != before["conv_transpose"]
    finally:
        sides.side_code.cache_clear()


def test_a_side_is_keyed_by_the_release_pins_and_the_probe_program(release):
    other = planned_env("0.4.1", load_catalog())
    assert sides.side_key(PAD, release) != sides.side_key(PAD, other)
    wider = ProbeSpec("pad", {**PAD.params, "pads": [2, 2]})
    assert sides.side_key(PAD, release) != sides.side_key(wider, release)
    no_opt = ProbeSpec("pad", PAD.params, pipeline=Pipeline(optimize=False))
    assert sides.side_key(PAD, release) != sides.side_key(no_opt, release)
    table = ProbeSpec("pad", PAD.params, pipeline=Pipeline(decompositions="default"))
    assert sides.side_key(PAD, release) != sides.side_key(table, release)

    # weights read from a checkpoint: their digests are the program, the file's path is not
    def weights(sha: str, path: str) -> ProbeSpec:
        tensors = {"weight": {"name": "pad.weight", "sha256": sha}}
        return ProbeSpec("pad", PAD.params, values="checkpoint", tensors=tensors, checkpoint=path)

    assert sides.side_key(weights("1", "a"), release) == sides.side_key(weights("1", "b"), release)
    assert sides.side_key(weights("1", "a"), release) != sides.side_key(weights("2", "a"), release)
