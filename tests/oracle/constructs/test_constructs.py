"""The construct registry is complete: every kind has its probe, detector, scan signature (or the
stated reason for lacking one) and regimes, in its one module (`oracle/constructs/<kind>.py`)."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from oracle import constructs
from oracle.catalog.fixes import load_fixes, load_unchanged
from oracle.catalog.regimes import load_regimes
from oracle.constructs._construct import DTYPE_SHORT, ScanSeen

ROOT = Path(__file__).resolve().parents[3]
KINDS = constructs.kinds()
REGIMES = load_regimes()
FIXES = load_fixes()
UNCHANGED = load_unchanged()


def test_registry_lists_every_construct_module():
    files = sorted(
        p.stem for p in (ROOT / "oracle" / "constructs").glob("*.py") if not p.stem.startswith("_")
    )
    assert files == KINDS
    assert len(KINDS) >= 17


def _written_keys(kind: str) -> set[str]:
    """The names a construct module writes as dict keys (`{"k": v}`, `params["k"] = v`,
    `params.update(k=v)`, `dict(k=v)`): the parameters its detector can record. Read from the
    module's source rather than listed here, so that a new construct whose `representative`
    names a parameter only its detector records needs no edit of this test."""
    tree = ast.parse(inspect.getsource(importlib.import_module(f"oracle.constructs.{kind}")))
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys |= {
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.add(node.slice.value)
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "dict")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "update")
        ):
            keys |= {k.arg for k in node.keywords if k.arg}
    return keys


@pytest.mark.parametrize("kind", KINDS)
def test_construct_is_complete(kind: str):
    c = constructs.get(kind)
    assert c.kind == kind, "CONSTRUCT.kind must be the module's name"
    if not (c.has_probe and c.detected):
        # A kind without a probe or a detector says why, and then it is there for the scan.
        assert c.why_incomplete, f"{kind}: no probe or no detector, and no reason given"
        assert c.scan.visible
        return
    assert c.params, f"{kind}: the probe takes no parameter"
    # a construct whose probe takes a checkpoint's tensors (--weights) also takes `tensors`
    takes = ["params", "gen", "values"] + (["tensors"] if c.checkpoint else [])
    assert c.build is not None
    assert list(inspect.signature(c.build).parameters) == takes
    for reader in c.readers:
        assert reader.ops and all(isinstance(op, str) and "." in op for op in reader.ops)
        assert list(inspect.signature(reader.detect).parameters) == ["node", "sizes"]
    assert c.scan.visible or c.scan.unseen, f"{kind}: no scan signature and no reason"
    assert set(c.representative) <= set(c.params) | _written_keys(kind), (
        f"{kind}: representative names a parameter neither its probe takes nor its module records"
    )
    mine = [r for r in REGIMES if r.construct == kind]
    assert any(not r.control for r in mine), f"{kind}: no regime in oracle/catalog/regimes.toml"
    for r in mine:
        assert set(r.spec.params) <= set(c.params), f"{r.id}: a parameter the probe does not take"
        name = constructs.label(kind, r.spec.params, r.spec.dtype)
        assert name and name.endswith(DTYPE_SHORT.get(r.spec.dtype, r.spec.dtype)), name
    # The fix-to-construct link is written once, in fixes.toml: a probed construct is there
    # because some lowering record names it, or because its lowering was read and found
    # unchanged ([[unchanged]]: its probe answers the registry sweep and coverage); else no one
    # knows which change it probes.
    assert [f.id for f in FIXES if kind in f.constructs] + [
        f"unchanged {u.since}..{u.through}" for u in UNCHANGED if u.construct == kind
    ], (
        f"{kind}: no record in oracle/catalog/fixes.toml names it and no [[unchanged]] note says "
        "its lowering was read; which change does it probe?"
    )


def test_every_fix_names_registered_constructs():
    for fix in FIXES:
        for kind in fix.constructs:
            assert kind in KINDS, f"fix #{fix.id} names {kind}, which has no construct module"


def _seen(
    optimized: bool = False, decompositions: str = "coreai", stamped: bool = False, **ops: int
) -> ScanSeen:
    return ScanSeen(optimized, decompositions, stamped, lambda fragment: ops.get(fragment, 0))


@pytest.mark.parametrize("kind", [c.kind for c in constructs.all_constructs() if c.scan.fewer])
def test_scan_reasoning_excuses_nothing_in_a_plain_pipeline(kind: str):
    """A construct's `fewer` explains instances a scan misses by what the pipeline or lowering
    did; with neither optimize() nor other decompositions nor a telltale op, a missing instance
    is a disagreement, never excused."""
    fewer = constructs.get(kind).scan.fewer
    assert fewer is not None
    assert fewer(_seen()) == []


def test_scan_reasoning_lives_with_the_norms():
    # the reasons `scan --against-registry` gave before they moved into the construct modules
    bn = constructs.get("batch_norm").scan.fewer
    assert bn is not None
    assert "folds a batch norm" in " ".join(bn(_seen(optimized=True, stamped=True, conv2d=1)))
    assert bn(_seen(optimized=True, stamped=False, conv2d=1)) == []  # 1.0.0b1 stamps none
    assert bn(_seen(optimized=True, stamped=True)) == []  # no convolution to fold into
    for kind in ("layer_norm", "group_norm", "instance_norm"):
        fewer = constructs.get(kind).scan.fewer
        assert fewer is not None
        assert fewer(_seen(decompositions="torch")) == [
            f"the pipeline decomposes with torch decompositions: a {kind} arrives as plain ops"
        ]
    ln = constructs.get("layer_norm").scan.fewer
    assert ln is not None
    assert ln(_seen(rsqrt=3)) == [
        "3 rsqrt op(s) outside composites could be layer norms "
        "without affine parameters lowered to plain ops"
    ]


def test_the_data_of_every_construct_imports_without_torch():
    """The main process plans probes (parameters, labels) and reads scan signatures without
    importing torch; only builders and detectors import it, when they run."""
    code = (
        "import sys\nfrom oracle import constructs\n"
        "for c in constructs.all_constructs():\n"
        "    constructs.label(c.kind, {}, 'float16'); c.params; c.scan\n"
        "import inventory.affected, inventory.plan, inventory.release_notes\n"
        "print('torch' in sys.modules, 'sympy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.split() == ["False", "False"]
