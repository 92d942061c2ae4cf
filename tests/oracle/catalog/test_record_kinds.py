"""A record kind is one class (`oracle/catalog/record_kinds.py`): the loader, release notes,
`affected`, attribution and verify's explanation ask the kind, so a kind they have never seen is
read and treated by what its class says, with no edit elsewhere."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import tomli_w

from inventory.affected import Analyzer
from inventory.attribution import explaining
from inventory.deployment import Deployment
from inventory.load_answers import LoadAnswer
from inventory.policy import load_policy
from inventory.registry import Bundle, load_registry
from inventory.release_notes import FixNotes, _Concerned, _HeldBy, _regimes_of, asset_regimes
from inventory.report.notes_report import _Concerned as ConcernLine
from inventory.verdict import Reexport, Verdict
from inventory.verify.explain import attributed
from oracle.catalog import record_kinds
from oracle.catalog.fixes import FIXES_FILE, Fix, FixError, load_fixes
from oracle.catalog.record_kinds import (
    KINDS,
    LOWERING,
    OPTIMIZER,
    AnswerContext,
    ConcernContext,
    ProbeContext,
    RecordKind,
)
from oracle.catalog.regimes import for_constructs, load_regimes
from oracle.catalog.releases import EnvError, load_catalog
from oracle.constructs import has_probe


class Container(RecordKind):
    """A made-up kind: a change of the asset's container, load-checked like an asset record."""

    name = "container"
    doc = "the asset's container format"
    changes_optimizer = True  # unlike an asset record, so that the property is what is read
    compares_programs = False

    def probed(self, context: ProbeContext, record):
        return context.load_checks(record)

    def concerned(self, context: ConcernContext, record):
        return context.exported_before(record)

    def answer(self, context: AnswerContext, question):
        return context.by_load_check(question)


class Fusion(RecordKind):
    """A made-up kind mixing what no shipped kind mixes: it names constructs (a lowering's
    records), is probed by the asset probe (a pipeline's), concerns the holders of its
    constructs (a lowering's) and is answered by load checks (an asset's). Code that decided
    by a property, or by what a shipped kind with one of these choices does, answers it
    otherwise."""

    name = "fusion"
    doc = "a made-up kind, for this test only"
    names_constructs = True

    def probed(self, context: ProbeContext, record):
        return context.asset_probe(record)

    def concerned(self, context: ConcernContext, record):
        return context.holders(record)

    def answer(self, context: AnswerContext, question):
        return context.by_load_check(question)


class Claimant(Container):
    """A made-up kind whose properties say it explains nothing (it names no construct and
    changes no optimizer), but whose class takes credit for a lowering's change of any program:
    code that read the properties instead of asking the class credits it with nothing."""

    name = "claimant"
    changes_optimizer = False

    def credited(self, stage: str, holds_its_construct: bool) -> bool:
        return stage != OPTIMIZER


def _database(tmp_path: Path, **record: object) -> Path:
    document = tomllib.loads(FIXES_FILE.read_text())
    document["fix"].append(
        {"id": "container-1", "title": "container v2", "ships_in": "0.4.2", **record}
    )
    path = tmp_path / "fixes.toml"
    path.write_text(tomli_w.dumps(document))
    return path


@pytest.fixture
def container(monkeypatch):
    monkeypatch.setitem(record_kinds.KINDS, "container", Container())


@pytest.fixture
def claimant(monkeypatch):
    monkeypatch.setitem(record_kinds.KINDS, "claimant", Claimant())


@pytest.fixture
def fusion(monkeypatch):
    monkeypatch.setitem(record_kinds.KINDS, "fusion", Fusion())


class _NoEnvironments:
    """A session that builds nothing: an answer that asked for a conversion is inconclusive."""

    def __init__(self) -> None:
        self.catalog = load_catalog()
        self.progress = lambda _: None

    def env(self, release: str):
        raise EnvError(f"no environment in this test ({release})")


def _holder() -> tuple[Bundle, str]:
    """A registry bundle exported with 0.4.1, and a construct it holds that the probe library
    probes and some other bundle exported before 0.4.2 does not hold (so that its holders and
    the bundles exported before it differ)."""
    bundles = load_registry()
    for bundle in bundles:
        if bundle.exporter.converter != "0.4.1":
            continue
        for kind in sorted({i.kind for i in bundle.instances if has_probe(i.kind)}):
            if any(all(i.kind != kind for i in b.instances) for b in bundles):
                return bundle, kind
    raise AssertionError("no 0.4.1 bundle holds a probed construct another bundle lacks")


def test_a_new_kind_is_read_and_answered_by_its_class_alone(tmp_path, container):
    fixes = load_fixes(_database(tmp_path, kind="container"))
    record = next(f for f in fixes if f.id == "container-1")
    assert record.record_kind.name == "container"
    assert _regimes_of(record, load_regimes()) == []  # load-checked: no program compared
    # no construct is credited to it; an optimizer-stage region is, as its class says
    assert "container-1" not in explaining(fixes, "conv_transpose", "0.4.1", "0.4.2")
    region = {"constructs": [], "stage": OPTIMIZER, "ops": [], "coreai_ops": []}
    assert attributed(region, [record]) == {"container-1": "container record, optimizer stage"}


def test_what_a_kind_is_credited_with_is_its_class_s_to_say(tmp_path, claimant):
    """Attribution (a probe's change in a step) and verify's explanation (a whole program's
    region) credit a record by asking its kind, whatever its properties say."""
    fixes = load_fixes(_database(tmp_path, kind="claimant"))
    record = next(f for f in fixes if f.id == "container-1")
    assert not record.record_kind.names_constructs and not record.record_kind.changes_optimizer
    assert "container-1" in explaining(fixes, "conv_transpose", "0.4.1", "0.4.2")
    lowering = {"constructs": ["conv_transpose"], "stage": LOWERING, "ops": [], "coreai_ops": []}
    assert attributed(lowering, [record]) == {"container-1": "claimant record, lowering stage"}
    optimizer = {**lowering, "stage": OPTIMIZER}
    assert attributed(optimizer, [record]) == {}
    # a shipped lowering record is credited only with a lowering's change of its construct
    fix54 = next(f for f in fixes if f.id == "54")
    assert fix54.record_kind.credited(LOWERING, True)
    assert not fix54.record_kind.credited(LOWERING, False)
    assert not fix54.record_kind.credited(OPTIMIZER, True)


def test_a_made_up_kind_is_answered_end_to_end_by_its_class_alone(tmp_path, fusion, monkeypatch):
    bundle, construct = _holder()
    fixes = load_fixes(_database(tmp_path, kind="fusion", constructs=[construct]))
    record = next(f for f in fixes if f.id == "container-1")
    regimes, bundles = load_regimes(), load_registry()
    # release notes: probed by the asset probe, though it names a construct that has regimes
    assert for_constructs(regimes, record.constructs)
    assert _regimes_of(record, regimes) == asset_regimes()
    # the bundles it concerns: the holders of its construct, each with its traced instances
    concerned = record.record_kind.concerned(_Concerned(bundles), record)
    assert concerned == tuple(
        b.name for b in bundles if any(i.kind == construct for i in b.instances)
    )
    assert bundle.name in concerned and len(concerned) < len(bundles)
    held = record.record_kind.concerned(_HeldBy(bundles), record)
    assert {b for b, _, _ in held} == set(concerned)
    line = record.record_kind.concerned(ConcernLine(_notes(record, concerned)), record)
    assert line.startswith(f"Shipped bundles holding {construct}")
    # affected: load checks, no conversion (a lowering's answer would ask for environments)
    analyzer = Analyzer(_NoEnvironments(), load_policy(), fixes=fixes)  # type: ignore[arg-type]
    shipped = Deployment(("1.0.0b2",), "this test")
    loads = LoadAnswer(Verdict.LOADS, Reexport.NO, "loads on coreai-core 1.0.0b2", shipped, ())
    monkeypatch.setattr(analyzer, "load_answer", lambda bundle, target: loads)
    answer = analyzer.answer(bundle, record, "0.4.2")
    assert answer.load is loads and answer.verdict == Verdict.LOADS, answer.chain
    assert answer.chain[-1].startswith("load checks:") and not answer.probes


def _notes(record: Fix, bundles: tuple[str, ...]) -> FixNotes:
    return FixNotes(record, (), bundles)


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


# a kind's property compared, or a name of how a kind probes or concerns compared against it:
# the decision belongs to the kind's class (`probed`, `concerned`, `answer`)
_COMPARED = re.compile(
    r"record_kind(\.\w+)?\s*(==|!=|\bis\b|\bin\b)"
    r"|isinstance\([^)]*record_kind"
    r"|(==|!=|\bis\b)\s*\w*record_kind\b"
    r"|\b(LOAD_CHECKS|CONSTRUCT_REGIMES|ASSET_PROBE|HOLDERS|EXPORTED_BEFORE)\b"
    r"|record_kind\.(probe|concerns)\b"
)
ROOT = Path(__file__).resolve().parents[3]


def test_no_code_outside_the_kinds_compares_a_kind():
    sources = [
        p
        for d in ("inventory", "oracle", "scripts", "tests")
        for p in sorted((ROOT / d).rglob("*.py"))
    ]
    here = Path(__file__).resolve()
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sources
        if p != here and p != ROOT / "oracle" / "catalog" / "record_kinds.py"
        for n, line in enumerate(p.read_text().splitlines(), start=1)
        if _COMPARED.search(line)
    ]
    assert not found, "\n".join(found)
    # the check itself sees what it forbids
    assert _COMPARED.search("if fix.record_kind.probe == LOAD_CHECKS:")
    assert _COMPARED.search("if f.fix.record_kind.concerns == holders:")
    assert _COMPARED.search("x = fix.record_kind is Lowering()")
    assert _COMPARED.search("if isinstance(fix.record_kind, Asset):")
    assert not _COMPARED.search("return fix.record_kind.answer(self, question)")


def _kind_names_bound_or_compared(source: str) -> list[tuple[int, str]]:
    """Where `source` re-declares a kind's name: a name bound to one as a literal (`ASSET =
    "asset"`, `kind: str = "lowering"`, one of a tuple's), or a kind (a name or attribute
    called `kind`) compared with one as a literal (`f.kind == "pipeline"`)."""
    import ast

    def literal(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in KINDS

    def kindish(node: ast.AST) -> bool:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        return "kind" in name.lower()

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt | ast.expr):
            continue
        pairs: list[tuple[ast.AST, ast.AST | None]] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += list(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs.append((target, node.value))
        elif isinstance(node, ast.AnnAssign):
            pairs.append((node.target, node.value))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(literal(o) for o in operands) and any(kindish(o) for o in operands):
                found.append((node.lineno, ast.unparse(node)))
        found += [
            (node.lineno, ast.unparse(node))
            for target, value in pairs
            if isinstance(target, ast.Name | ast.Attribute) and literal(value)
        ]
    return found


def test_no_code_outside_the_kinds_redeclares_a_kind_name():
    """A kind's name is its class's (`record_kinds.py`): code that needs one (the draft's records,
    the loader's default) reads it there, never writes its own copy to compare against."""
    sources = [
        p for d in ("inventory", "oracle", "scripts") for p in sorted((ROOT / d).rglob("*.py"))
    ]
    found = [
        f"{p.relative_to(ROOT)}:{n}: {said}"
        for p in sources
        if p != ROOT / "oracle" / "catalog" / "record_kinds.py"
        for n, said in _kind_names_bound_or_compared(p.read_text())
    ]
    assert not found, "\n".join(found)
    # the check itself sees what it forbids, and lets pass what reads the kinds
    for forbidden in (
        'PIPELINE, ASSET, LOWERING_KIND = "pipeline", "asset", "lowering"',
        'class Fix:\n    kind: str = "lowering"',
        'if g.kind == "asset":\n    pass',
        'if "pipeline" != record.kind:\n    pass',
    ):
        assert _kind_names_bound_or_compared(forbidden), forbidden
    for allowed in (
        "if g.kind == Asset.name:\n    pass",
        'KEYS = ("files", "pipeline")',
        'if op == "pipeline":\n    pass',
        'SOURCE = "asset probe"',
    ):
        assert not _kind_names_bound_or_compared(allowed), allowed
