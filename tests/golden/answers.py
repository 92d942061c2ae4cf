"""Golden answers: the deterministic fields of the CLI's `--json`, extracted one way for both the
snapshot and the test that checks it.

Each entry is one command run through the CLI exactly as a user runs it (a subprocess of
`python -m inventory.cli ... --json -q` in the repository root, on the default result store):

- `affected/<fix>`: `affected --fix <fix>` for every fix record in `oracle/fixes.toml`;
- `plan/<release>`: `plan --to <release>` for every release in `oracle/converters.toml` after the
  oldest;
- `release-notes/<a>-<b>`: `release-notes --from <a> --to <b>` for each consecutive pair;
- `plan/0.4.2-draft-no54`: `plan --to 0.4.2 --fixes tests/golden/drafts/no54.toml`, release day
  with a draft database that lacks #54's record (its change still counts).

The test suite also computes, with these, `sweep --registry` per step and one library sweep
(`lanes()`, `compute()`): not pinned here, read by other tests from the same runs.

The entry list is read from those two TOML files, never written out here, so a fix record added
to the database shows up as a new entry without a snapshot (and the test says to run
`scripts/golden --update`). Nothing here imports the project: the CLI's JSON is the interface, so a
refactor of the modules behind it leaves this file alone.

Kept: verdicts, re-export decisions, the stage identities (emitted/shipped/outputs), the check of
a program run alone when only its side converts (right or wrong, and where), output shapes
(integers), runtime names, exporter releases, condition verdicts, exit codes, deployment runtimes
and every load check's outcome per runtime (`loads`, `crashes`, ...). Left out: evidence
paths and `cached` (they depend on the store, not on the answer), reasons and chains (prose
holding the measured floats), timings, and every measured float (max |old-new|, errors vs torch,
ref magnitude). The floats are left out, not compared with a tolerance, because what they decide
is already pinned: each verdict is the policy applied to them (`values-move optional` vs
`required` is the tolerance comparison itself), and their last digits come from the runtime's CPU
kernels, so pinning them would fail on a change of machine without any change of answer.

Usage (from the repository root; `scripts/golden` wraps it):
    python tests/golden/answers.py            compare a fresh run with the snapshot
    python tests/golden/answers.py --update   rewrite the snapshot and print what changed
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
FIXES = ROOT / "oracle" / "fixes.toml"
CONVERTERS = ROOT / "oracle" / "converters.toml"
UPDATE_HINT = ("if this change of answer is intended, run `scripts/golden --update` and commit "
               "the reviewed snapshot")


# ---- which entries exist --------------------------------------------------------------------


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def fix_ids() -> list[str]:
    """The fix records' ids, in the database's order."""
    return [str(f["id"]) for f in tomllib.loads(FIXES.read_text()).get("fix", [])]


def releases() -> list[str]:
    return sorted(tomllib.loads(CONVERTERS.read_text()).get("converters", {}), key=_version_key)


@dataclass(frozen=True)
class Entry:
    key: str  # "affected/40", "plan/0.4.2", "release-notes/0.4.1-0.4.2": also the file's path
    args: tuple[str, ...]  # the CLI arguments (without --json -q)

    @property
    def section(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def file(self) -> Path:
        return GOLDEN / f"{self.key}.json"


def entries() -> list[Entry]:
    """Every entry the sources call for. Plans come first: they convert every probe the
    `affected` entries of the same target need, so those then come from the result store."""
    rel = releases()
    out = [Entry(f"plan/{v}", ("plan", "--to", v)) for v in rel[1:]]
    # release day: a draft database without #54's record; its change still counts
    out.append(Entry("plan/0.4.2-draft-no54", ("plan", "--to", "0.4.2", "--fixes",
                                                "tests/golden/drafts/no54.toml")))
    out += [Entry(f"release-notes/{a}-{b}", ("release-notes", "--from", a, "--to", b))
            for a, b in zip(rel, rel[1:], strict=False)]
    out += [Entry(f"affected/{f}", ("affected", "--fix", f)) for f in fix_ids()]
    return out


def sweep_entries() -> list[Entry]:
    """`sweep --registry` per consecutive release step: not pinned in the snapshot (the plans
    and release notes hold their answers), computed with the matrix because several tests read
    them and they share the plans' conversions."""
    rel = releases()
    return [Entry(f"sweep-registry/{a}-{b}", ("sweep", "--registry", "--from", a, "--to", b))
            for a, b in zip(rel, rel[1:], strict=False)]


def lanes() -> list[list[Entry]]:
    """The matrix in the order that repeats no conversion when entries run side by side:
    1. `sweep --registry` per step: every shipped instance under each consecutive pair (plans,
       `affected` and release notes all read these); the steps are different
       release pairs, so different conversions;
    2. two lanes that convert different probes: the release notes (then a library sweep) probe
       the library's regimes, the plans the bundles' own instances;
    3. the `affected` entries, answered from the store."""
    by_section: dict[str, list[Entry]] = {}
    for entry in entries():
        by_section.setdefault(entry.section, []).append(entry)
    # The library sweep of the step most fixes ship in: most of its regimes are converted by
    # that step's release notes just before it, in the same lane.
    library = [Entry("sweep/0.4.1-0.4.2", ("sweep", "--from", "0.4.1", "--to", "0.4.2"))]
    return [sweep_entries(), by_section.get("release-notes", []) + library,
            by_section.get("plan", []), by_section.get("affected", [])]


def compute(workers: int = 2) -> None:
    """Run every entry of the matrix once (each `run_cli` is cached for the process), in the
    order of `lanes()`, `workers` runs at a time."""
    from concurrent.futures import ThreadPoolExecutor

    def lane(todo: list[Entry]) -> None:
        for entry in todo:
            run_cli(entry.args)

    steps, notes, plans, rest = lanes()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for phase in ([[e] for e in steps], [notes, plans], [[e] for e in rest]):
            for done in [pool.submit(lane, todo) for todo in phase]:
                done.result()


def stored_keys() -> list[str]:
    """The entries the snapshot holds (whatever the sources say today)."""
    return sorted(str(p.relative_to(GOLDEN).with_suffix(""))
                  for p in GOLDEN.glob("*/*.json"))


# ---- running the CLI ------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    exit: int
    data: dict[str, Any]  # the full --json document
    stderr: str


@functools.cache
def run_cli(args: tuple[str, ...]) -> Run:
    """One CLI run with --json, once per process (the tests and the schema checks share it)."""
    proc = subprocess.run([sys.executable, "-m", "inventory.cli", *args, "--json", "-q"],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ))
    if "Traceback" in proc.stderr or not proc.stdout.strip():
        raise RuntimeError(f"inventory {' '.join(args)} --json failed (exit {proc.returncode}):"
                           f"\n{proc.stderr[-3000:]}")
    return Run(proc.returncode, json.loads(proc.stdout, parse_constant=_not_json), proc.stderr)


def _not_json(token: str) -> None:
    raise ValueError(f"the CLI printed {token}, which strict JSON (RFC 8259) does not have")


# ---- extraction: the one function that decides what the snapshot holds ----------------------


def _probe(p: dict[str, Any]) -> dict[str, Any]:
    return {"probe": p["probe"], "emitted": p["emitted"], "shipped": p["shipped"],
            "outputs": p["outputs"], "shapes_old": p.get("shapes_old", []),
            "shapes_new": p.get("shapes_new", []), "shapes_ref": p.get("shapes_ref", []),
            "runtime": p.get("runtime"), "verdict": p["verdict"], "reexport": p["reexport"],
            "changed_in": _changed_in(p.get("steps", [])), **alone_entry(p)}


def alone_entry(p: dict[str, Any]) -> dict[str, str]:
    """When one side converts: that side's program against torch fp32, `new: wrong (runtime)`
    (kept only where it was run alone, so the other probes' entries stay as they were)."""
    a = p.get("alone")
    if not a:
        return {}
    return {"alone": f"{a['side']}: {a.get('check')} ({a['runtime']})"}


def _changed_in(steps: list[dict[str, Any]]) -> list[str]:
    """The release steps a probe's program changes in, each with the records it is credited to
    (by release step): `0.4.1->0.4.2: 56`, or `0.4.1->0.4.2: unexplained`."""
    return [_credit(f"{s['from']}->{s['to']}", s["explained_by"]) for s in steps if s["changed"]]


def _credit(step: str, explained_by: list[str]) -> str:
    return f"{step}: {', '.join(explained_by) or 'unexplained'}"


def _affected(run: Run) -> dict[str, Any]:
    d = run.data
    return {
        "exit": run.exit, "to": d["to"], "reexport": d["reexport"], "runtime": d["runtime"],
        "bundles": {b["bundle"]: {
            "exporter": b["exporter"],
            "verdict": b["verdict"],
            "reexport": b["reexport"],
            "runtime": b["runtime"],
            "deployment": _cores(b["deployment"]),
            "load": _load(b["load"]),
            "probes": [_probe(p) for p in b["probes"]],
            "conditions": [{
                "construct": c["construct"], "condition": c["condition"],
                "trained": {k: c["trained"][k] for k in ("verdict", "reexport")},
                "if_met": {k: c["if_met"][k] for k in ("verdict", "reexport")},
            } for c in b["conditions"]],
        } for b in d["bundles"]},
    }


def _load(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """A load answer: its verdict and, per release whose asset was checked, the outcome on each
    runtime (errors are prose, left out; the outcome and signal are the answer)."""
    if answer is None:
        return None
    return {"verdict": answer["verdict"], "reexport": answer["reexport"],
            "checks": {c["exporter"]: {o["core"]: o["outcome"] for o in c["outcomes"]}
                       for c in answer["checks"]}}


def _cores(deployment: dict[str, Any] | None) -> list[str] | None:
    return deployment["cores"] if deployment else None


_PLAN_LEVELS = ("required", "inconclusive", "optional", "not_affected", "ignored")


def _plan(run: Run) -> dict[str, Any]:
    d = run.data
    return {
        "exit": run.exit, "to": d["to"], "reexport": d["reexport"],
        "bundles": {b["bundle"]: {
            "exporter": b["exporter"], "exporter_assumed": b["exporter_assumed"],
            "reexport": b["reexport"], "deployment": _cores(b["deployment"]),
            "load": _load(b["load"]),
            **{level: {i["fix"]: i["verdict"] for i in b[level]} for level in _PLAN_LEVELS},
            "changed_in": {i["fix"]: [_credit(c["step"], c["explained_by"])
                                      for c in i["changed_in"]]
                           for level in _PLAN_LEVELS for i in b[level] if i["changed_in"]},
            "unexplained": [f"{u['probe']} @ {u['step']}: {u['verdict']}, {u['reexport']}"
                            for u in b["unexplained"]],
        } for b in d["bundles"]},
    }


def _notes(run: Run) -> dict[str, Any]:
    d = run.data
    return {
        "exit": run.exit, "from": d["from"], "to": d["to"], "runtime": d["runtime"],
        "fixes": {f["fix"]: {
            "bundles": f["bundles"],
            "loads": [{side: {o["core"]: o["outcome"] for o in pair[side]["outcomes"]}
                       for side in ("old", "new")} for pair in f["loads"]],
            "probes": {p["probe"]: {**{k: p[k] for k in
                                       ("emitted", "shipped", "outputs", "verdict", "runtime")},
                                    **alone_entry(p)}
                       for p in f["probes"]},
            "held_by": [f"{h['bundle']}: {h['instance']} x{h['count']}" for h in f["held_by"]],
            "summary": {k: v for k, v in f["summary"].items() if k != "max_abs_move"}
            if f["summary"] else None,
        } for f in d["fixes"]},
        "unexplained": [f"{u['probe']} @ {u['step']}" for u in d["unexplained"]],
    }


_EXTRACT = {"affected": _affected, "plan": _plan, "release-notes": _notes}


def extract(entry: Entry, run: Run) -> dict[str, Any]:
    return _EXTRACT[entry.section](run)


def fresh(entry: Entry) -> dict[str, Any]:
    return extract(entry, run_cli(entry.args))


def stored(entry: Entry) -> dict[str, Any] | None:
    return json.loads(entry.file.read_text()) if entry.file.exists() else None


# ---- comparing ------------------------------------------------------------------------------


def _at(path: str, key: str) -> str:
    """A key holding a slash (a regime id) is bracketed, so the path still reads unambiguously."""
    return f"{path}[{key}]" if "/" in key else f"{path}/{key}"


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def diff(expected: Any, got: Any, path: str) -> list[str]:
    """Field by field: one line per difference, naming the field's path."""
    if isinstance(expected, dict) and isinstance(got, dict):
        out: list[str] = []
        for key in expected:
            where = _at(path, key)
            if key not in got:
                out.append(f"{where}: expected {_show(expected[key])}, missing")
            else:
                out += diff(expected[key], got[key], where)
        out += [f"{_at(path, key)}: not in the snapshot, got {_show(got[key])}"
                for key in got if key not in expected]
        return out
    if isinstance(expected, list) and isinstance(got, list) and not all(
            isinstance(v, int | str | None) for v in expected + got):
        out = []
        for i, (a, b) in enumerate(zip(expected, got, strict=False)):
            out += diff(a, b, f"{path}[{i}]")
        out += [f"{path}[{i}]: expected {_show(a)}, missing"
                for i, a in enumerate(expected[len(got):], start=len(got))]
        out += [f"{path}[{i}]: not in the snapshot, got {_show(b)}"
                for i, b in enumerate(got[len(expected):], start=len(expected))]
        return out
    if expected != got:
        return [f"{path}: expected {_show(expected)}, got {_show(got)}"]
    return []


def check(entry: Entry) -> list[str]:
    """What differs between a fresh run and the snapshot (empty: the answers hold)."""
    expected = stored(entry)
    if expected is None:
        what = "fix record" if entry.section == "affected" else "release"
        name = entry.key.split("/", 1)[1]
        return [f"{entry.key}: no golden entry ({os.path.relpath(entry.file, ROOT)} does not "
                f"exist) although the {what} {name} is in oracle/; run `scripts/golden --update` "
                "and review the new answers"]
    return diff(expected, fresh(entry), entry.key)


def orphan(key: str) -> str:
    return (f"{key}: golden entry for something oracle/fixes.toml or oracle/converters.toml no "
            "longer holds; run `scripts/golden --update` (it removes the entry)")


# ---- writing --------------------------------------------------------------------------------


def dump(value: Any, indent: int = 0) -> str:
    """Indented JSON; lists of scalars (shapes, bundle names) and short flat objects on one line."""
    pad = "  " * (indent + 1)
    inline = json.dumps(value)
    if isinstance(value, dict) and value and (
            len(inline) > 60 or any(isinstance(v, dict | list) for v in value.values())):
        items = [f"{pad}{json.dumps(k)}: {dump(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list) and value and any(isinstance(v, dict) for v in value):
        items = [f"{pad}{dump(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return inline


def update() -> list[str]:
    """Rewrite the snapshot from a fresh run; return what changed."""
    changes: list[str] = []
    wanted = entries()
    for entry in wanted:
        got = fresh(entry)
        before = stored(entry)
        if before is None:
            changes.append(f"{entry.key}: new entry")
        else:
            changes += diff(before, got, entry.key)
        entry.file.parent.mkdir(parents=True, exist_ok=True)
        entry.file.write_text(dump(got) + "\n")
    for key in sorted(set(stored_keys()) - {e.key for e in wanted}):
        (GOLDEN / f"{key}.json").unlink()
        changes.append(f"{key}: removed (no longer in oracle/)")
    return changes


def main(argv: list[str]) -> int:
    if argv not in ([], ["--update"]):
        print("usage: scripts/golden [--update]", file=sys.stderr)
        return 2
    if argv == ["--update"]:
        changes = update()
        print("\n".join(changes) if changes else "no answer changed")
        print(f"snapshot: {GOLDEN.relative_to(ROOT)}/ ({len(entries())} entries)")
        return 0
    problems = [line for entry in entries() for line in check(entry)]
    known = {e.key for e in entries()}
    problems += [orphan(k) for k in stored_keys() if k not in known]
    print("\n".join(problems) if problems else "every golden answer holds")
    if problems:
        print(UPDATE_HINT, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
