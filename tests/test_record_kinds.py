"""A record kind is one class (`oracle/catalog/record_kinds.py`): the loader, release notes,
attribution
and verify's explanation ask the kind's properties, so a kind they have never seen is read and
treated by what its class says, with no edit elsewhere."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w

from inventory.attribution import explaining
from inventory.release_notes import _regimes_of
from inventory.verify.explain import OPTIMIZER, attributed
from oracle.catalog import record_kinds
from oracle.catalog.fixes import FIXES_FILE, FixError, load_fixes
from oracle.catalog.record_kinds import EXPORTED_BEFORE, KINDS, LOAD_CHECKS, RecordKind
from oracle.catalog.regimes import load_regimes


class Container(RecordKind):
    """A made-up kind: a change of the asset's container, load-checked like an asset record."""

    name = "container"
    doc = "the asset's container format"
    probe = LOAD_CHECKS
    concerns = EXPORTED_BEFORE
    changes_optimizer = True  # unlike an asset record, so that the property is what is read


def _database(tmp_path: Path, **record: object) -> Path:
    document = tomllib.loads(FIXES_FILE.read_text())
    document["fix"].append({"id": "container-1", "title": "container v2",
                            "ships_in": "0.4.2", **record})
    path = tmp_path / "fixes.toml"
    path.write_text(tomli_w.dumps(document))
    return path


@pytest.fixture
def container(monkeypatch):
    monkeypatch.setitem(record_kinds.KINDS, "container", Container())


def test_a_new_kind_is_read_and_answered_by_its_class_alone(tmp_path, container):
    fixes = load_fixes(_database(tmp_path, kind="container"))
    record = next(f for f in fixes if f.id == "container-1")
    assert record.record_kind.name == "container"
    assert _regimes_of(record, load_regimes()) == []  # load-checked: no program compared
    # no construct is credited to it; an optimizer-stage region is, as its class says
    assert "container-1" not in explaining(fixes, "conv_transpose", "0.4.1", "0.4.2")
    region = {"constructs": [], "stage": OPTIMIZER, "ops": [], "coreai_ops": []}
    assert attributed(region, [record]) == {"container-1": "container record, optimizer stage"}


def test_a_kind_without_its_class_is_one_line(tmp_path):
    with pytest.raises(FixError) as raised:
        load_fixes(_database(tmp_path, kind="container"))
    assert "container" in str(raised.value) and "\n" not in str(raised.value)


def test_a_kind_that_names_no_constructs_refuses_them(tmp_path, container):
    with pytest.raises(FixError, match="answered without constructs"):
        load_fixes(_database(tmp_path, kind="container", constructs=["pad"]))


def test_the_shipped_kinds_have_records_and_probe_them_as_they_say():
    fixes = load_fixes()
    by_kind = {kind: [f for f in fixes if f.kind == kind] for kind in KINDS}
    assert sorted(by_kind) == ["asset", "lowering", "pipeline"] and all(by_kind.values())
    # a pipeline record is probed with the asset probe, whatever construct regimes there are
    assert all(_regimes_of(f, []) for f in by_kind["pipeline"])
    assert all(_regimes_of(f, load_regimes()) == [] for f in by_kind["asset"])
    assert all(f.constructs for f in by_kind["lowering"])
