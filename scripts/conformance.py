"""The converter's own tests as a conformance suite (`scripts/conformance`).

For each fix record with re-typed upstream cases (`oracle/catalog/conformance.toml`), every case is
converted under the release before the fix and the release with it, twice:

* as the upstream test converts it: the case's regime module under torch's default table minus
  the ops the test keeps (`keep`, its remove_decomps), with optimize() for an IR test only (the
  test helpers' setup: get_ir optimizes, validate_numerical_output does not) -- the upstream
  outcome: does the old release fail, compute wrong, or give the same
  program; is the new release right;
* as the library probes it: each regime the case names, through the same comparison
  `release-notes` runs -- the library's answer (its verdict for that regime).

The case conforms when the new release is right (it converts; a numerical case's outputs are
within the policy's tolerance of torch fp32, measured on the new asset alone; an IR case's
program holds what the test reads) and the library's verdict for each regime reproduces the
upstream outcome of the old release: fails <-> old-cannot-convert, wrong <-> values-move or
shape-change (required), same program <-> same-program.

A "locations" case (an asset record's debug-location test) reads the location of every op the
asset probe's converted program carries (`oracle/workers/location_worker.py`, TorchConverter() as it
comes, before optimize()) under both releases: the fixed release is right when every op carries
a debuginfo location; the old one is wrong when some op does not. The library answers an asset
record by load checks, so it reproduces the case when the old release's asset does not load on
the runtime the fixed release pins and the fixed release's asset does (an old release that is
already right must load there too).

A record's `unrelated` test functions (in its commits, not testing its change) are listed with
their reason. Results and their evidence folders are written to
evidence/conformance-<old>-<new>.json; the table is printed (docs/bisection.md shows it).

    scripts/conformance [--fix ID ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inventory.attribution import said  # noqa: E402
from inventory.policy import Policy, load_policy  # noqa: E402
from inventory.release_notes import asset_regimes  # noqa: E402
from inventory.verdict import (  # noqa: E402
    AloneCheck,
    ProbeVerdict,
    Reexport,
    Verdict,
    alone_check,
    judge,
)
from oracle.catalog.conformance import Case, Record, load_records  # noqa: E402
from oracle.catalog.fixes import Fix, load_fixes  # noqa: E402
from oracle.catalog.regimes import Regime, load_regimes  # noqa: E402
from oracle.catalog.releases import Catalog, load_catalog, version_key  # noqa: E402
from oracle.catalog.runtimes import cores  # noqa: E402
from oracle.compare.results import Alone, Identity, ProbeResult, Side  # noqa: E402
from oracle.compare.spec import Pipeline, ProbeSpec  # noqa: E402
from oracle.compare.stats import side_stats  # noqa: E402
from oracle.infra.paths import cache_root, safe_name  # noqa: E402
from oracle.infra.portable_paths import portable  # noqa: E402
from oracle.load_check import LoadCheck, load_check  # noqa: E402
from oracle.session import Session  # noqa: E402

# the library's verdicts that reproduce each upstream outcome of the old release ("changes,
# right": the old program differs and is right, so any answer but a failure or a required
# re-export agrees with it)
REPRODUCES = {
    "fails": {Verdict.OLD_CANNOT_CONVERT},
    "wrong": {Verdict.VALUES_MOVE, Verdict.SHAPE_CHANGE},
    "same program": {Verdict.SAME_PROGRAM},
    "changes, right": {
        Verdict.SAME_PROGRAM,
        Verdict.VALUES_IDENTICAL,
        Verdict.VALUES_MOVE,
        Verdict.SHAPE_CHANGE,
    },
}


def reproduces(outcome: str, verdict: ProbeVerdict) -> bool:
    if verdict.verdict not in REPRODUCES.get(outcome, set()):
        return False
    required = verdict.reexport == Reexport.REQUIRED
    if outcome == "wrong":
        return required
    return not (outcome == "changes, right" and required)


def before(catalog: Catalog, release: str) -> str:
    ordered = sorted(catalog.releases, key=version_key)
    return ordered[ordered.index(release) - 1]


def upstream_spec(regime: Regime, case: Case) -> ProbeSpec:
    """The regime's module as the upstream test converts it: the test helpers' table, and
    optimize() only for an IR test (get_ir optimizes, validate_numerical_output does not)."""
    pipe = regime.spec.pipeline
    optimized = case.checks == "ir" and case.program == "shipped"
    return replace(regime.spec, pipeline=Pipeline(case.table, optimized, pipe.shapes, case.keep))


def failure(side: Side) -> str:
    """A failed side's error as the converter said it, every line (very long: its start and
    end)."""
    return cut(said(side))


def cut(text: str, width: int = 1500) -> str:
    """A very long error kept readable: its start and its end."""
    return text if len(text) <= width else f"{text[:700]} ... {text[-(width - 705) :]}"


def old_outcome(result: ProbeResult, policy: Policy) -> tuple[str, str]:
    """What the old release does to the case: fails, wrong, same program, or changes, right."""
    if not result.old.ok:
        return "fails", f"{result.old.stage}: {failure(result.old)}"
    if not result.new.ok:
        return "new fails", f"{result.new.stage}: {failure(result.new)}"
    if result.shipped == Identity.IDENTICAL:
        return "same program", ""
    verdict = judge(result, policy)
    if (
        verdict.verdict in (Verdict.VALUES_MOVE, Verdict.SHAPE_CHANGE)
        and verdict.reexport == "required"
    ):
        return "wrong", verdict.reason
    return "changes, right", verdict.reason


def new_right(
    session: Session, result: ProbeResult, case: Case, policy: Policy, out: Path
) -> tuple[bool, str]:
    """Is the fixed release right on the case, as the upstream test checks it?"""
    new = result.new
    if not new.ok:
        return False, f"does not convert ({new.stage}: {new.error})"
    if case.checks == "ir":
        # the upstream IR tests read the program after optimize() (get_ir)
        ir = Path(new.files[case.program]).read_text()
        aten = Path(new.files["aten"]).read_text()
        missing = [s for s in case.ir_has if s not in ir]
        present = [s for s in case.ir_lacks if s in ir]
        # an aten graph names an overload by its packet (`aten.reflection_pad1d.default`)
        lost = [op for op in case.aten_has if op not in aten]
        if missing or present or lost:
            return False, (f"program lacks {missing}" if missing else "") + (
                f" holds {present}" if present else ""
            ) + (f" decomposes {lost}" if lost else "")
        return True, "the program holds what the test reads"
    if result.alone is None or result.alone.side != "new":
        # both sides converted: the fixed release's program is run alone, as when only it does
        env = session.env(new.converter)
        target = out / f"measure-new-{new.converter}"
        answer = session.worker(env).call(
            {
                "op": "measure",
                "spec": result.spec.to_json(),
                "assets": {"new": new.files["asset"]},
                "out": str(target),
            }
        )
        side = answer.get("sides", {}).get("new", {})
        if not answer.get("ok") or not side.get("ok"):
            return False, f"does not run: {answer.get('error') or side.get('error')}"
        stats = side_stats(Path(side["outputs"]), Path(answer["reference"]))
        result = replace(result, alone=Alone("new", env.runtime, True, stats=stats))
    # the library's own rule for a program run alone (inventory/verdict.py)
    check, how = alone_check(result, policy)
    return check == AloneCheck.RIGHT, how


LOCATION_WORKER = ROOT / "oracle" / "workers" / "location_worker.py"


_LOCATIONS: dict[tuple[str, str], dict] = {}


def locations(session: Session, spec: ProbeSpec, release: str, work: Path) -> dict:
    """Every op's location in the program `release` converts the asset probe to (its own
    process, in the release's environment; once per run: several tests read the same probe)."""
    key = (release, spec.key())
    if key not in _LOCATIONS:
        _LOCATIONS[key] = _read_locations(session, spec, release, work)
    return _LOCATIONS[key]


def _read_locations(session: Session, spec: ProbeSpec, release: str, work: Path) -> dict:
    env = session.env(release)
    out = work / f"locations-{release}-{safe_name(spec.key())}"
    done = subprocess.run(
        [str(env.python), str(LOCATION_WORKER), json.dumps(spec.to_json()), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "error": f"exit {done.returncode}: {tail}"}
    return json.loads(lines[-1])


def all_debuginfo(answer: dict) -> bool:
    return (
        answer.get("ok", False)
        and answer["counts"]["debuginfo"] == answer["ops"]
        and answer["module"] == "debuginfo"
    )


def describe_locations(answer: dict) -> str:
    if not answer.get("ok"):
        return f"does not convert: {answer.get('error')}"
    counts = ", ".join(f"{n} {kind}" for kind, n in answer["counts"].items() if n)
    return f"{answer['ops']} ops: {counts}; the module's own location: {answer['module']}"


def loads_reproduce(outcome: str, old_loads: bool, new_loads: bool) -> bool:
    """The library's load checks agree with a debug-location test when the fixed release's asset
    loads on the runtime it pins, and the old release's loads there exactly when its program is
    already right (every op a debuginfo location)."""
    if outcome == "fails":
        return False  # the old release does not convert the probe: the checks say nothing of it
    return new_loads and old_loads == (outcome == "same program")


def load_answer(check: LoadCheck, core: str) -> tuple[bool, str]:
    outcome = check.on(core)
    if not check.converted or outcome is None:
        return False, f"not checked: {check.convert_error or 'no outcome on ' + core}"
    return outcome.loads, f"{outcome.describe()} (on coreai-core {core})"


def run_locations_case(
    session: Session,
    case: Case,
    regimes: dict[str, Regime],
    old: str,
    new: str,
    work: Path,
    row: dict,
) -> dict:
    """A debug-location test: what location each op carries under both releases (the upstream
    outcome), and the asset probe's load checks on the fixed release's runtime (the library's
    answer for an asset record)."""
    core = session.env(new).core
    held = []
    for rid in case.regimes:
        spec = regimes[rid].spec
        before_, after_ = (locations(session, spec, r, work) for r in (old, new))
        if not before_.get("ok"):
            outcome = "fails"
        else:
            outcome = "same program" if all_debuginfo(before_) else "wrong"
        checks = [
            load_check(spec, session.env(r), cores(session.catalog), session) for r in (old, new)
        ]
        (old_loads, old_how), (new_loads, new_how) = (load_answer(c, core) for c in checks)
        agree = loads_reproduce(outcome, old_loads, new_loads)
        held.append(
            {
                "regime": rid,
                "upstream": {
                    "pipeline": "torch default table, TorchConverter() as it comes, "
                    "emitted program (before optimize())",
                    "old": outcome,
                    "old_detail": describe_locations(before_),
                    "new_right": all_debuginfo(after_),
                    "new_detail": describe_locations(after_),
                    "evidence": [a.get("files", {}).get("located", "") for a in (before_, after_)],
                },
                "library": {
                    "answer": "load checks",
                    "runtime": f"coreai-core {core}",
                    "old_asset": old_how,
                    "new_asset": new_how,
                    "evidence": [c.evidence for c in checks],
                },
                "reproduces": agree,
            }
        )
    return concluded(row, held)


def concluded(row: dict, held: list[dict]) -> dict:
    """A case's row with its regimes: the case's own outcome is its first regime's (the one that
    re-types it); it conforms when the fixed release is right on all and the library reproduces
    each."""
    row["regimes"] = held
    row["old"] = held[0]["upstream"]["old"]
    row["new_right"] = all(h["upstream"]["new_right"] for h in held)
    row["status"] = (
        "conforms" if row["new_right"] and all(h["reproduces"] for h in held) else "differs"
    )
    return row


def run_case(
    session: Session,
    record: Record,
    case: Case,
    regimes: dict[str, Regime],
    old: str,
    new: str,
    policy: Policy,
    work: Path,
) -> dict:
    """Each regime of the case: its module under the upstream test's setup (the upstream
    outcome) and under its own pipeline (the library's answer)."""
    row: dict = {
        "fix": record.fix,
        "test": case.test,
        "params": case.params,
        "count": case.count,
        "checks": case.checks,
    }
    if case.unmapped:
        row.update(status="unmapped", why=case.unmapped)
        return row
    if case.checks == "locations":
        return run_locations_case(session, case, regimes, old, new, work, row)
    envs = session.env(old), session.env(new)
    held = []
    for rid in case.regimes:
        spec = upstream_spec(regimes[rid], case)
        up = session.compare(spec, *envs)
        outcome, detail = old_outcome(up, policy)
        right, how = new_right(session, up, case, policy, work / safe_name(spec.key()))
        result = session.compare(regimes[rid].spec, *envs)
        verdict = judge(result, policy)
        held.append(
            {
                "regime": rid,
                "upstream": {
                    "pipeline": spec.pipeline.to_json(),
                    "old": outcome,
                    "old_detail": detail,
                    "new_right": right,
                    "new_detail": how,
                    "evidence": up.evidence,
                },
                "library": {
                    "pipeline": regimes[rid].spec.pipeline.to_json(),
                    "verdict": verdict.verdict.value,
                    "reexport": verdict.reexport.value,
                    "old_error": failure(result.old) if not result.old.ok else "",
                    "evidence": result.evidence,
                },
                "reproduces": reproduces(outcome, verdict),
            }
        )
    return concluded(row, held)


def kept_rows(path: Path, rows: list[dict], order: list[str]) -> list[dict]:
    """A step's rows: those just run, and the stored rows of the step's other records (a run of
    some records, `--fix`, must not drop the others' evidence), in conformance.toml's order."""
    ran = {r["fix"] for r in rows}
    try:
        stored = json.loads(path.read_text()).get("cases", [])
    except (OSError, ValueError):
        stored = []
    merged = [r for r in stored if r.get("fix") not in ran and r.get("fix") in order] + rows
    return sorted(merged, key=lambda r: order.index(r["fix"]))  # stable within a record


def run(
    records: Iterable[Record], fixes: dict[str, Fix], out_dir: Path, order: list[str] | None = None
) -> int:
    """`order`: every record's fix id in conformance.toml's order (default: those run)."""
    records = list(records)
    order = order or [r.fix for r in records]
    catalog = load_catalog()
    policy = load_policy()
    # an asset or pipeline record's cases are held by the asset probe, as release-notes probes it
    regimes = {r.id: r for r in [*load_regimes(), *asset_regimes()]}
    by_step: dict[tuple[str, str], list[dict]] = {}
    work = cache_root() / "conformance"
    started = time.monotonic()
    with Session(catalog, lambda line: print(f"  {line}", file=sys.stderr)) as session:
        for record in records:
            fix = fixes[record.fix]
            step = before(catalog, fix.ships_in), fix.ships_in
            rows = by_step.setdefault(step, [])
            if record.pending:
                rows.append(
                    {
                        "fix": record.fix,
                        "status": "pending",
                        "why": record.pending,
                        "tests": list(record.tests),
                    }
                )
                continue
            for case in record.cases:
                print(f"#{record.fix} {case.test} [{case.params[:50]}]", file=sys.stderr)
                rows.append(run_case(session, record, case, regimes, *step, policy, work))
            unrelated = record.unrelated_tests()
            for group in dict.fromkeys(unrelated.values()):
                rows.append(
                    {
                        "fix": record.fix,
                        "status": "unrelated",
                        "why": group,
                        "tests": [t for t, why in unrelated.items() if why == group],
                    }
                )
    failed = 0
    for (old, new), rows in sorted(by_step.items(), key=lambda kv: version_key(kv[0][1])):
        path = out_dir / f"conformance-{old}-{new}.json"
        rows = kept_rows(path, rows, order)
        doc = {
            "from": old,
            "to": new,
            "seconds": round(time.monotonic() - started, 1),
            "cases": rows,
        }
        path.write_text(json.dumps(portable(doc), indent=1) + "\n")
        print(f"\n{old} -> {new} ({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
        print(table(rows))
        failed += sum(r["status"] == "differs" for r in rows)
    return 1 if failed else 0


def table(rows: list[dict]) -> str:
    """Per record: upstream cases, how many re-typed cases conform, what the old release does."""
    lines = [
        "| record | upstream cases | held by regimes | unmapped | unrelated tests | old fails "
        "| old wrong | same program | changes, right | new right | library reproduces |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fix in dict.fromkeys(r["fix"] for r in rows):
        mine = [r for r in rows if r["fix"] == fix]
        label = f"#{fix}" if fix.isdigit() else fix  # core-b2 is a pin, not a pull request
        if mine[0]["status"] == "pending":
            lines.append(
                f"| {label} | {len(mine[0]['tests'])} test functions listed | pending: "
                f"{mine[0]['why']} | | | | | | | | |"
            )
            continue
        unrelated = sum(len(r["tests"]) for r in mine if r["status"] == "unrelated")
        mine = [r for r in mine if r["status"] != "unrelated"]
        held = [r for r in mine if r["status"] != "unmapped"]
        old = [r["old"] for r in held]

        def n(flags: list[bool], rows: list[dict] = held) -> int:
            return sum(r["count"] for r, f in zip(rows, flags, strict=True) if f)

        everything = [True] * len(held)
        lines.append(
            f"| {label} | {sum(r['count'] for r in mine)} | {n(everything)} | "
            f"{sum(r['count'] for r in mine if r['status'] == 'unmapped')} | {unrelated} | "
            f"{n([o == 'fails' for o in old])} | {n([o == 'wrong' for o in old])} | "
            f"{n([o == 'same program' for o in old])} | "
            f"{n([o == 'changes, right' for o in old])} | "
            f"{n([r['new_right'] for r in held])} | "
            f"{n([r['status'] == 'conforms' for r in held])} of {n(everything)} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/conformance", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--fix",
        action="append",
        default=[],
        help="only this record (repeatable); default: every record",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "evidence",
        help="where conformance-<old>-<new>.json is written",
    )
    args = parser.parse_args(argv)
    fixes = {f.id: f for f in load_fixes()}
    records = load_records()
    unknown = [f for f in args.fix if f not in {r.fix for r in records}]
    if unknown:
        print(
            f"error: no conformance record for fix {unknown[0]!r} "
            "(oracle/catalog/conformance.toml)",
            file=sys.stderr,
        )
        return 2
    chosen = [r for r in records if not args.fix or r.fix in args.fix]
    args.out.mkdir(parents=True, exist_ok=True)
    return run(chosen, fixes, args.out, [r.fix for r in records])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
