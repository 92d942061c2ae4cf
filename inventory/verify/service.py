"""`inventory verify BUNDLE --to V`: the whole bundle's program against the probe answers.

For each bundle: the whole module is built in its form (`inventory.verify.forms`), converted
whole under its exporter and V (`inventory.verify.whole`), and the probes of every traced
instance are compared under the same pair (`sweep` over the bundle's registry instances, the
answers `affected` and `plan` are made of). The two are then reconciled:

* identical whole programs => every probe is same-program (no fix between the two releases can
  change this bundle);
* a probe whose program changes => the whole program differs in a region of that construct
  (unless the built form holds no such construct: a stand-in's stated difference, reported as a
  limitation);
* a differing region that no changing probe explains => unexplained.

Any breach is an inconsistency: exit 3, with both sides' evidence.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inventory.errors import UsageError
from inventory.policy import Policy
from inventory.registry import Bundle, exporter_release
from inventory.release_notes import Sweep, registry_regimes, sweep
from inventory.trace import trust
from inventory.verify import forms, whole
from oracle import store
from oracle.envs import Catalog, version_key
from oracle.fixes import Fix
from oracle.session import Session

PLACEHOLDER = "$RESULT"
REGIONS_SPELLED = 3  # more regions than this are summarised by construct in the answer line
Progress = Callable[[str], None]


@dataclass(frozen=True)
class BundleVerify:
    bundle: str
    exporter: str
    exporter_assumed: bool
    to: str
    record: dict[str, Any]  # the stored whole-bundle measurement (paths absolute)
    cached: bool
    probes: dict[str, Any] = field(default_factory=dict)
    inconsistencies: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def inconclusive(self) -> bool:
        r = self.record
        return bool(r.get("error")) or r.get("shipped", {}).get("identity") == "cannot-convert" \
            or (r.get("run") is not None and not r["run"].get("measurement", {}).get("ok"))

    @property
    def consistent(self) -> bool:
        return not self.inconsistencies


@dataclass(frozen=True)
class Verify:
    to: str
    bundles: tuple[BundleVerify, ...]

    @property
    def inconsistent(self) -> bool:
        return any(not b.consistent for b in self.bundles)

    @property
    def inconclusive(self) -> bool:
        return any(b.inconclusive for b in self.bundles)


# ---- paths inside a stored record ---------------------------------------------------------


def _rewrite(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, str):
        return new + obj[len(old):] if obj.startswith(old) else obj
    if isinstance(obj, dict):
        return {k: _rewrite(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rewrite(v, old, new) for v in obj]
    return obj


def _load(folder: Path) -> dict[str, Any] | None:
    record = whole.read_record(folder)
    if record is None:
        return None
    try:
        return _derived({**_rewrite(record, PLACEHOLDER, str(folder)), "evidence": str(folder)})
    except (OSError, KeyError, ValueError):
        return None  # its files are gone or damaged: measured again


def _derived(record: dict[str, Any]) -> dict[str, Any]:
    """What is read off a record's files rather than stored: where its programs differ."""
    record["regions"] = whole.located_regions(record)
    return record


# ---- the measured part --------------------------------------------------------------------


def _measure(bundle: Bundle, session: Session, exporter: str, to: str, weights: Path | None,
             allow_code: bool, progress: Progress, work: Path) -> dict[str, Any]:
    form, run = forms.compared_form(bundle), forms.run_form(bundle)
    old, new = session.env(exporter), session.env(to)
    start = time.perf_counter()
    record: dict[str, Any] = {"code": whole.code_digest(), "bundle": bundle.name,
                              "exporter": exporter, "to": to, "form": form.to_json(),
                              "seed": whole.SEED}
    same_form = run == form
    progress(f"{bundle.name}: building the whole module, {form.described()}")
    record["build"] = whole.build(bundle, form, work / "build", same_form, weights, allow_code)
    progress(f"{bundle.name}: converting it whole under coreai-torch {exporter} and {to}")
    sides = whole.convert_both(session, old, new, record["build"]["files"]["program"], bundle,
                               work)
    record["sides"] = {"old": sides[0], "new": sides[1]}
    record.update(whole.compared(*sides, work))
    record["run"] = None
    if record["shipped"]["identity"] == "differs":
        record["run"] = _run(bundle, session, old, new, run, same_form, sides, record, weights,
                             allow_code, progress, work)
    record["seconds"] = time.perf_counter() - start
    peaks = [record["build"].get("peak_mb")] + [s.get("peak_mb") for s in sides]
    if record["run"]:
        peaks += [record["run"].get("build", {}).get("peak_mb")]
        peaks += [s.get("peak_mb") for s in record["run"].get("sides", {}).values()]
    record["peak_mb"] = max((p for p in peaks if p), default=None)
    return record


def _run(bundle: Bundle, session: Session, old: Any, new: Any, run: forms.Form, same_form: bool,
         sides: tuple[dict[str, Any], dict[str, Any]], record: dict[str, Any],
         weights: Path | None, allow_code: bool, progress: Progress, work: Path
         ) -> dict[str, Any]:
    out: dict[str, Any] = {"form": run.to_json(), "same_as_compared": same_form}
    if same_form:
        build_dir = work / "build"
        assets = {"old": sides[0]["files"]["asset"], "new": sides[1]["files"]["asset"]}
    else:
        progress(f"{bundle.name}: building the run form, {run.described()}")
        build_dir = work / "run" / "build"
        out["build"] = whole.build(bundle, run, build_dir, True, weights, allow_code)
        run_sides = whole.convert_both(session, old, new, out["build"]["files"]["program"],
                                       bundle, work / "run")
        out["sides"] = {"old": run_sides[0], "new": run_sides[1]}
        out.update(whole.compared(*run_sides, work / "run", prefix=""))
        if out["shipped"]["identity"] != "differs":
            out["measurement"] = {"ok": False, "error": f"the run form's shipped programs are "
                                  f"{out['shipped']['identity']}: nothing to measure there"}
            return out
        assets = {"old": run_sides[0]["files"]["asset"], "new": run_sides[1]["files"]["asset"]}
    labels = list(bundle.export.get("names", {}).get("outputs", []))
    out["measurement"] = whole.run_both(session, old, new, assets, build_dir,
                                        build_dir / "reference.safetensors", work / "run",
                                        labels, progress)
    return out


def measured(bundle: Bundle, session: Session, exporter: str, to: str, weights: Path | None,
             use_cache: bool, allow_code: bool, progress: Progress
             ) -> tuple[dict[str, Any], bool]:
    """The stored whole-bundle record (measured now if absent), and whether it was stored."""
    form, run = forms.compared_form(bundle), forms.run_form(bundle)
    old, new = session.env(exporter), session.env(to)
    final = whole.result_dir(bundle, form, run, old, new, weights)
    if use_cache:
        cached = _load(final)
        if cached is not None:
            return cached, True
    with store.building(final) as work:
        (work / "run").mkdir()
        try:
            record = _measure(bundle, session, exporter, to, weights, allow_code, progress,
                              work)
        except whole.VerifyError as exc:
            # never stored: a failed build is told, and measured again next time
            return {"error": str(exc), "form": form.to_json()}, False
        run = record.get("run") or {}
        worker_died = any(s.get("stage") == "worker" for part in (record, run)
                          for s in part.get("sides", {}).values())
        if (run and not run.get("measurement", {}).get("ok")) or worker_died:
            # A run or a conversion that timed out or died says nothing about the programs:
            # told, never stored, measured again next time.
            _derived(record)
            shutil.rmtree(work, ignore_errors=True)
            return {**record, "evidence": None}, False
        (work / whole.RECORD).write_text(json.dumps(_rewrite(record, str(work), PLACEHOLDER),
                                                    indent=1))
        theirs = store.install(work, final, _load, replace_stored=not use_cache)
    return (theirs if theirs is not None else _load(final) or record), False


# ---- reconciliation -----------------------------------------------------------------------


def _present(record: dict[str, Any]) -> set[str]:
    """The construct kinds a detector found in either side's whole program."""
    kinds: set[str] = set()
    for side in record.get("sides", {}).values():
        nodes = side.get("files", {}).get("nodes")
        if nodes and Path(nodes).is_file():
            kinds |= {n["kind"] for n in json.loads(Path(nodes).read_text()).values()
                      if n.get("kind")}
    return kinds


def reconcile(record: dict[str, Any], probes: Sweep) -> tuple[dict[str, Any], list[str],
                                                               list[str]]:
    changed = [{"probe": f.outcome.regime.id, "construct": f.outcome.regime.construct,
                "verdict": f.outcome.verdict.verdict, "explained_by": list(f.explained_by)}
               for f in probes.changed]
    summary = {"probed": probes.probed, "changed": changed,
               "failing_both": [o.regime.id for o in probes.failing_both]}
    inconsistencies: list[str] = []
    limitations: list[str] = []
    identity = record.get("shipped", {}).get("identity")
    if identity == "identical":
        inconsistencies += [f"probe {c['probe']} says the shipped program changes "
                            f"({c['verdict']}), but the whole shipped programs are identical"
                            for c in changed]
        return summary, inconsistencies, limitations
    if identity != "differs":
        return summary, inconsistencies, limitations
    regions = record.get("regions", [])
    kinds_changed = {c["construct"] for c in changed}
    in_regions = {k for r in regions for k in r["constructs"]} | \
        {r["composite"] for r in regions if r.get("composite")}
    present = _present(record)
    for kind in sorted(kinds_changed - in_regions):
        probes_of = ", ".join(c["probe"] for c in changed if c["construct"] == kind)
        if kind in present:
            inconsistencies.append(f"the probes of {kind} change ({probes_of}), but no region "
                                   f"of the whole program that differs holds a {kind}")
        else:
            limitations.append(f"the probes of {kind} change ({probes_of}); the built form "
                               f"holds no {kind} (a stand-in difference), so the whole program "
                               "cannot confirm them")
    for r in regions:
        kinds = set(r["constructs"]) | ({r["composite"]} if r.get("composite") else set())
        explained = sorted(kinds & kinds_changed)
        r["explained_by"] = sorted({i for c in changed if c["construct"] in explained
                                    for i in c["explained_by"]})
        r["explained_by_probes"] = explained
        if not explained:
            where = ", ".join(r["modules"]) or "no located module"
            ops = ", ".join(r.get("coreai_ops", [])) or "no op"
            inconsistencies.append(
                f"unexplained: {r['changed_lines']} line(s) of @{r['graph']} differ "
                f"({ops}; constructs {', '.join(r['constructs']) or 'none detected'}; modules "
                f"{where}) and no probe of this bundle changes there")
    return summary, inconsistencies, limitations


def _notes(bundle: Bundle, record: dict[str, Any], deviations: list[str]) -> list[str]:
    notes = [f"environment deviation: {d}" for d in deviations]
    form = record.get("form", {})
    if form.get("standin"):
        notes.append(f"the module is the stand-in {form['target']}, not the recipe's own: its "
                     f"stated differences are in [bundles.{bundle.name}.standin]")
    build = record.get("build", {})
    if build.get("torch"):
        notes.append(f"built and exported on torch {build['torch']} (the recipe's own torch "
                     f"and its measured sensitivity: [bundles.{bundle.name}.exporter])")
    return notes


def verify(bundles: list[Bundle], to: str, fixes: list[Fix], catalog: Catalog, policy: Policy,
           weights: dict[str, Path] | None = None, use_cache: bool = True,
           allow_code: bool = False, progress: Progress = lambda _: None) -> Verify:
    catalog.release(to)
    out = []
    for bundle in bundles:
        exporter, assumed = exporter_release(bundle.exporter, catalog)
        if version_key(exporter) >= version_key(to):
            raise UsageError(f"{bundle.name} was exported with coreai-torch {exporter}: "
                             f"--to must be a later release")
        # a malformed form, or a target the registry may not run, is refused before anything runs
        form = forms.compared_form(bundle)
        forms.run_form(bundle)
        try:
            trust.check_target(form.target, f"[bundles.{bundle.name}] verify target", allow_code)
        except trust.UntrustedCode as exc:
            raise forms.FormError(f"{bundle.name}: {exc}") from None
    for bundle in bundles:
        exporter, assumed = exporter_release(bundle.exporter, catalog)
        with Session(catalog, progress) as session:
            record, cached = measured(bundle, session, exporter, to,
                                      (weights or {}).get(bundle.name), use_cache, allow_code,
                                      progress)
            deviations = [d for v in (exporter, to) for d in session.env(v).deviations]
        progress(f"{bundle.name}: probing every traced instance under {exporter} and {to}")
        probes = sweep(exporter, to, fixes, registry_regimes([bundle]), catalog, policy,
                       use_cache=use_cache, progress=progress, source="registry")
        summary, inconsistencies, limitations = reconcile(record, probes)
        out.append(BundleVerify(bundle.name, exporter, assumed, to, record, cached, summary,
                                tuple(inconsistencies), tuple(limitations),
                                tuple(_notes(bundle, record, deviations))))
    return Verify(to, tuple(out))


# ---- what a bundle's check says --------------------------------------------------------------


def status(b: BundleVerify) -> str:
    if not b.consistent:
        return "inconsistent"
    return "inconclusive" if b.inconclusive else "consistent"


def answer(b: BundleVerify) -> str:
    """One sentence: what the whole program says."""
    r = b.record
    if r.get("error"):
        return f"inconclusive: {r['error']}"
    shipped = r["shipped"]
    form = r["form"]["form"]
    if shipped["identity"] == "cannot-convert":
        bad = [f"coreai-torch {s['converter']} ({s.get('stage')}: {s.get('error')})"
               for s in r["sides"].values() if not s.get("ok")]
        return f"inconclusive: the whole {form} module does not convert under {'; '.join(bad)}"
    if shipped["identity"] == "identical":
        text = (f"identical shipped programs: no fix between {b.exporter} and {b.to} can "
                f"change this {form} module")
        if r["emitted"]["identity"] == "differs":
            text += (f" (the emitted programs differ in {r['emitted']['changed_lines']} lines; "
                     "the optimizer makes them the same)")
        return text
    regions = r.get("regions", [])
    if len(regions) <= REGIONS_SPELLED:
        where = "; ".join(region_line(g) for g in regions)
    else:  # the regions by construct; each one is in the record and the table
        kinds: dict[str, int] = {}
        for g in regions:
            for k in g["constructs"] or ["no detected construct"]:
                kinds[k] = kinds.get(k, 0) + 1
        unexplained = sum(1 for g in regions if not g.get("explained_by_probes"))
        where = (", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
                 + f"; {unexplained} explained by no changing probe")
    return (f"shipped programs differ in {shipped['changed_lines']} lines, "
            f"{len(regions)} region(s): {where}")


def region_line(g: dict[str, Any]) -> str:
    kinds = ", ".join(g["constructs"]) or "no detected construct"
    calls = f", {g['calls']} call(s)" if g.get("calls") else ""
    more = f" and {g['module_count'] - len(g['modules'])} more" \
        if g["module_count"] > len(g["modules"]) else ""
    modules = ", ".join(g["modules"]) + more if g["modules"] else "no located module"
    fixes = ", ".join(f"#{i}" for i in g.get("explained_by", [])) or "none"
    ops = f"; {', '.join(g['coreai_ops'])}" if g.get("coreai_ops") and not g["composite"] else ""
    return (f"@{g['graph']} ({kinds}{calls}; {g['changed_lines']} lines{ops}; modules {modules}; "
            f"explained by {fixes})")


def summary(b: BundleVerify) -> dict[str, Any]:
    """What `plan --verify` shows of a bundle's check."""
    return {"status": status(b), "answer": answer(b), "form": b.record.get("form", {}).get("form"),
            "inconsistencies": list(b.inconsistencies), "limitations": list(b.limitations),
            "evidence": b.record.get("evidence")}


def verified(bundles: list[Bundle], to: str, fixes: list[Fix], catalog: Catalog,
             policy: Policy, use_cache: bool = True,
             progress: Progress = lambda _: None) -> dict[str, dict[str, Any]]:
    """`plan --verify`: each bundle's check summarised; a bundle exported with `to` itself has
    nothing to compare."""
    out: dict[str, dict[str, Any]] = {}
    later = []
    for bundle in bundles:
        exporter, _assumed = exporter_release(bundle.exporter, catalog)
        if version_key(exporter) >= version_key(to):
            out[bundle.name] = {"status": "not-needed", "form": None, "inconsistencies": [],
                                "limitations": [], "evidence": None,
                                "answer": f"exported with coreai-torch {exporter}: no later "
                                          "release to compare with"}
        else:
            later.append(bundle)
    for b in verify(later, to, fixes, catalog, policy, use_cache=use_cache,
                    progress=progress).bundles:
        out[b.bundle] = summary(b)
    return {b.name: out[b.name] for b in bundles}
