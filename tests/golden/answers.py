"""Golden answers: the deterministic fields of the CLI's `--json`, extracted one way for both the
snapshot and the test that checks it.

Each entry is one command run through the CLI as a user runs it (`inventory ... --json -q` in
the repository root: the typer app in this process, `run_cli`), on a result store of the
suite's own (`stores()`: the environments are shared, the results are not the user's):

- `affected/<fix>`: `affected --fix <fix>` for every fix record in `oracle/catalog/fixes.toml`;
- `plan/<release>`: `plan --to <release>` for every release in `oracle/catalog/converters.toml`
after the
  oldest;
- `release-notes/<a>-<b>`: `release-notes --from <a> --to <b>` for each consecutive pair;
- `plan/0.4.2-draft-no54`: `plan --to 0.4.2 --fixes tests/golden/drafts/no54.toml`, release day
  with a draft database that lacks #54's record (its change still counts);
- `checked/...`: the plans and the pipeline records again, on a store that also holds every
  bundle's whole-program check (`plan --to V --verify` for every V, run first): what a stored
  check changes in the answer (it joins the plan, and answers a pipeline record on the
  bundle's own program), pinned beside the answers without one;
- `unswept/affected/<fix>`: `affected --fix <fix>` again, on a store that holds what the
  bare store holds but the comparisons of every traced kind the record does not probe: the
  registry sweep of its step is not stored there, so the answer says its unrecorded changes
  were not looked for, and converts nothing new (`affected/<fix>` reads the stored sweep).

The test suite also computes, with these, `sweep --registry` per step and one library sweep
(`lanes()`, `compute()`): not pinned here, read by other tests from the same runs.

The entry list is read from those two TOML files, never written out here, so a fix record added
to the database shows up as a new entry without a snapshot (and the test says to run
`scripts/golden --update`). Nothing here reads the project's modules: it runs the CLI's app and
keeps the workers of a store's runs warm between them (`compute`), and the CLI's JSON is the
interface, so a refactor of the modules behind it leaves this file alone.

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
import sys
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
FIXES = ROOT / "oracle" / "catalog" / "fixes.toml"
CONVERTERS = ROOT / "oracle" / "catalog" / "converters.toml"
UPDATE_HINT = (
    "if this change of answer is intended, run `scripts/golden --update` and commit "
    "the reviewed snapshot"
)


# ---- which entries exist --------------------------------------------------------------------


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def fix_ids() -> list[str]:
    """The fix records' ids, in the database's order."""
    return [str(f["id"]) for f in tomllib.loads(FIXES.read_text()).get("fix", [])]


def releases() -> list[str]:
    return sorted(tomllib.loads(CONVERTERS.read_text()).get("converters", {}), key=_version_key)


BARE, CHECKED = "bare", "checked"  # the suite's two result stores (see `stores`)
UNSWEPT = "unswept"  # per fix record, the bare store without its step's sweep (`unswept_store`)
REGISTRY = ROOT / "recipes.toml"


@dataclass(frozen=True)
class Entry:
    key: str  # "affected/40", "plan/0.4.2", "checked/plan/0.4.1": also the file's path
    args: tuple[str, ...]  # the CLI arguments (without --json -q)
    store: str = BARE  # which of the suite's stores it runs on

    @property
    def section(self) -> str:
        """The command whose answer it is (its extraction)."""
        return self.args[0]

    @property
    def file(self) -> Path:
        return GOLDEN / f"{self.key}.json"


def entries() -> list[Entry]:
    """Every entry the sources call for. Plans come first: they convert every probe the
    `affected` entries of the same target need, so those then come from the result store."""
    rel = releases()
    out = [Entry(f"plan/{v}", ("plan", "--to", v)) for v in rel[1:]]
    # release day: a draft database without #54's record; its change still counts
    out.append(
        Entry(
            "plan/0.4.2-draft-no54",
            ("plan", "--to", "0.4.2", "--fixes", "tests/golden/drafts/no54.toml"),
        )
    )
    out += [
        Entry(f"release-notes/{a}-{b}", ("release-notes", "--from", a, "--to", b))
        for a, b in zip(rel, rel[1:], strict=False)
    ]
    out += [Entry(f"affected/{f}", ("affected", "--fix", f)) for f in fix_ids()]
    return out + checked_entries() + unswept_entries()


def unswept_entries() -> list[Entry]:
    """Every `affected` entry again, on a store without the sweep of its record's step: the
    other store state an answer reads (`unrecorded_state`: not looked for)."""
    return [
        Entry(f"{UNSWEPT}/affected/{f}", ("affected", "--fix", f), f"{UNSWEPT}/{f}")
        for f in fix_ids()
    ]


def pipeline_ids() -> list[str]:
    """The pipeline records' ids: the records a stored whole-program check answers."""
    return [
        str(f["id"])
        for f in tomllib.loads(FIXES.read_text()).get("fix", [])
        if f.get("kind") == "pipeline"
    ]


def checked_entries() -> list[Entry]:
    """The answers a stored check changes, on the store that holds every bundle's: each plan
    (the check joins it) and each pipeline record's `affected` (answered on the bundle's own
    program)."""
    rel = releases()
    out = [Entry(f"checked/plan/{v}", ("plan", "--to", v), CHECKED) for v in rel[1:]]
    out.append(
        Entry(
            "checked/plan/0.4.2-draft-no54",
            ("plan", "--to", "0.4.2", "--fixes", "tests/golden/drafts/no54.toml"),
            CHECKED,
        )
    )
    out += [
        Entry(f"checked/affected/{f}", ("affected", "--fix", f), CHECKED) for f in pipeline_ids()
    ]
    return out


def check_runs() -> list[Entry]:
    """What puts every bundle's whole-program check in the checked store: `plan --to V
    --verify` for every V, the newest first (its chains hold most sides the others read).
    Not pinned: the stored answers after them are."""
    return [
        Entry(f"verify/{v}", ("plan", "--to", v, "--verify"), CHECKED)
        for v in reversed(releases()[1:])
    ]


def sweep_entries() -> list[Entry]:
    """`sweep --registry` per consecutive release step: not pinned in the snapshot (the plans
    and release notes hold their answers), computed with the matrix because several tests read
    them and they share the plans' conversions."""
    rel = releases()
    return [
        Entry(f"sweep-registry/{a}-{b}", ("sweep", "--registry", "--from", a, "--to", b))
        for a, b in zip(rel, rel[1:], strict=False)
    ]


def lanes() -> list[list[Entry]]:
    """The matrix in the order in which each entry finds stored what an earlier one converted:
    1. `sweep --registry` per step: every shipped instance under each consecutive pair (plans,
       `affected` and release notes all read these); the steps are different
       release pairs, so different conversions;
    2. the release notes (then a library sweep), which probe the library's regimes, and the
       plans, which probe the bundles' own instances;
    3. the `affected` entries, answered from the store."""
    by_section: dict[str, list[Entry]] = {}
    for entry in entries():
        if entry.store == BARE:
            by_section.setdefault(entry.section, []).append(entry)
    # The library sweep of the step most fixes ship in: most of its regimes are converted by
    # that step's release notes just before it, in the same lane.
    library = [Entry("sweep/0.4.1-0.4.2", ("sweep", "--from", "0.4.1", "--to", "0.4.2"))]
    return [
        sweep_entries(),
        by_section.get("release-notes", []) + library,
        by_section.get("plan", []),
        by_section.get("affected", []),
    ]


def compute() -> None:
    """Run every entry of the matrix once (each `run_cli` is cached for the process), in the
    order of `lanes()`, on the bare store; then the checked store is given the bare one's
    results, every bundle's check (`check_runs`), and its entries run.

    The runs are in this process, one after another, each as the command line runs it
    (`run_cli`), and a store's runs share their workers (`shared_workers`): a worker is
    started once per environment and kind for the store, not once per run (each start imports
    torch and the converter, about 7 CPU-s), and each run still converts on the real
    converters with as many comparisons at once as the machine has cores (`--jobs`)."""
    from oracle.clients.worker_pool import shared_workers

    steps, notes, plans, rest = lanes()
    with shared_workers():
        for entry in steps + notes + plans + rest:
            run_entry(entry)
    # made from the bare store's results once its `affected` entries ran: nothing to convert
    for entry in unswept_entries():
        unswept_store(entry.store)
        run_entry(entry)
    share_results(stores()[BARE], stores()[CHECKED])
    with shared_workers():
        for entry in check_runs() + checked_entries():
            run_entry(entry)


# ---- the suite's own result stores ----------------------------------------------------------
# A stored whole-program check changes answers by design (it joins `plan` and answers a
# pipeline record), so answers computed on the user's store would depend on what else it holds.
# The suite keeps two of its own under the user's cache, beside the shared environments:
# `bare`, which never holds a check (any found there is removed before a run: the suite
# controls it), and `checked`, which holds every bundle's check. Both persist, so a second
# session reads what the first measured.
SUITE = "suite"
SUITE_ROOT = "INVENTORY_SUITE_ROOT"  # the user's cache the suite's stores live in
CHECK_PARTS = "verify-"  # the stored parts of a whole-program check (inventory.verify.parts)


def stores_a_check(args: tuple[str, ...] | list[str]) -> bool:
    """Whether a CLI run stores a whole-program check (`verify`, or `--verify` on a plan or an
    affected): a test runs it on the checked store, never on the bare one, whose plans a stored
    check would change while other tests read them."""
    return bool(args) and (
        args[0] == "verify" or any(a == "--verify" or a.startswith("--verify=") for a in args)
    )


def bare_checks() -> list[str]:
    """The parts of a whole-program check the bare store holds (none, when every test keeps to
    its store)."""
    results = stores()[BARE] / "results"
    return sorted(p.name for p in results.glob(f"{CHECK_PARTS}*")) if results.is_dir() else []


def _user_cache() -> Path:
    given = os.environ.get(SUITE_ROOT) or os.environ.get("INVENTORY_CACHE")
    if given:
        return Path(given).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return ((Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "inventory").resolve()


@functools.cache
def stores() -> dict[str, Path]:
    """The suite's two stores (each a cache whose `envs` is the user's), made once per process;
    checks left in the bare one are removed."""
    root = _user_cache()
    os.environ.setdefault(SUITE_ROOT, str(root))
    (root / "envs").mkdir(parents=True, exist_ok=True)
    out = {}
    for name in (BARE, CHECKED):
        cache = root / SUITE / name
        cache.mkdir(parents=True, exist_ok=True)
        if not (cache / "envs").is_symlink():
            (cache / "envs").symlink_to(root / "envs")
        out[name] = cache
    import shutil

    results = out[BARE] / "results"
    for part in results.glob(f"{CHECK_PARTS}*") if results.is_dir() else []:
        shutil.rmtree(part, ignore_errors=True)
    return out


def on_store(store: str) -> dict[str, str | None]:
    """What a CLI run in this process (`cli.invoke`) on one of the suite's stores is given: its
    cache, no other results store. In this process, never a process of its own, where a test
    reads back what the session's runs stored: a process would start its own workers and
    build and read again what this one holds already (`docs/measurements.md`)."""
    return {"INVENTORY_CACHE": str(store_path(store)), "INVENTORY_STORE": None}


def store_path(store: str) -> Path:
    """The cache of one of the suite's stores: `bare`, `checked` or `unswept/<fix>`."""
    if store in (BARE, CHECKED):
        return stores()[store]
    cache = stores()[BARE].parent / store
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "envs").is_symlink():
        (cache / "envs").symlink_to(stores()[BARE].parents[1] / "envs")
    return cache


def _traced_kinds() -> set[str]:
    raw = tomllib.loads(REGISTRY.read_text()).get("bundles", {})
    return {str(i["kind"]) for b in raw.values() for i in b.get("instances", [])}


def unswept_store(store: str) -> None:
    """`unswept/<fix>` made anew: the bare store's results (hard links) but the comparisons of
    every traced kind the record does not probe (a result folder is named by its construct),
    so the registry sweep of its step is not stored whole, while its own probes, load checks
    and asset probes are, and its answer converts nothing new."""
    import re
    import shutil

    fix = store.split("/", 1)[1]
    record = next(f for f in tomllib.loads(FIXES.read_text())["fix"] if str(f["id"]) == fix)
    others = sorted(_traced_kinds() - set(record.get("constructs", [])))
    left_out = re.compile(rf"^({'|'.join(map(re.escape, others))})-\d") if others else None
    target = store_path(store) / "results"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    source = stores()[BARE] / "results"
    for folder in source.iterdir() if source.is_dir() else []:
        if folder.name.startswith((CHECK_PARTS, ".")) or (
            left_out is not None and left_out.match(folder.name)
        ):
            continue
        try:
            shutil.copytree(folder, target / folder.name, copy_function=os.link)
        except OSError:
            shutil.rmtree(target / folder.name, ignore_errors=True)  # measured there again


def share_results(bare: Path, checked: Path) -> None:
    """The bare store's results (probe comparisons, load checks: nothing of a check) in the
    checked one too, as hard links (a stored result is never edited in place), so the checked
    answers differ from the bare ones by the checks alone."""
    source, target = bare / "results", checked / "results"
    target.mkdir(parents=True, exist_ok=True)
    for folder in source.iterdir() if source.is_dir() else []:
        if folder.name.startswith((CHECK_PARTS, ".")) or (target / folder.name).exists():
            continue
        import shutil

        try:
            shutil.copytree(folder, target / folder.name, copy_function=os.link)
        except OSError:
            shutil.rmtree(target / folder.name, ignore_errors=True)  # measured there again


def stored_keys() -> list[str]:
    """The entries the snapshot holds (whatever the sources say today)."""
    return sorted(
        str(p.relative_to(GOLDEN).with_suffix(""))
        for p in GOLDEN.glob("**/*.json")
        if p.parent != GOLDEN
    )


# ---- running the CLI ------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    exit: int
    data: dict[str, Any]  # the full --json document
    stderr: str


def run_entry(entry: Entry) -> Run:
    return run_cli(entry.args, entry.store)


_one_at_a_time = threading.Lock()


@functools.cache
def run_cli(args: tuple[str, ...], store: str = BARE) -> Run:
    """One CLI run with --json on one of the suite's stores, once per process (the tests and the
    schema checks share it): the typer app in this process, as `python -m inventory.cli` runs it
    (parsing, the command, the renderer, the exit code; `tests/helpers/cli.py` `invoke`), with
    the store's cache as its only result store. One at a time: a run sets the process's
    environment, working directory and standard streams."""
    from cli import invoke

    with _one_at_a_time:
        ran = invoke(*args, "--json", "-q", **on_store(store))
    if "Traceback" in ran.stderr or not ran.stdout.strip():
        raise RuntimeError(
            f"inventory {' '.join(args)} --json failed (exit {ran.returncode}):"
            f"\n{ran.stderr[-3000:]}"
        )
    return Run(ran.returncode, json.loads(ran.stdout, parse_constant=_not_json), ran.stderr)


def _not_json(token: str) -> None:
    raise ValueError(f"the CLI printed {token}, which strict JSON (RFC 8259) does not have")


# ---- extraction: the one function that decides what the snapshot holds ----------------------


def _probe(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "probe": p["probe"],
        "emitted": p["emitted"],
        "shipped": p["shipped"],
        "outputs": p["outputs"],
        "shapes_old": p.get("shapes_old", []),
        "shapes_new": p.get("shapes_new", []),
        "shapes_ref": p.get("shapes_ref", []),
        "runtime": p.get("runtime"),
        "verdict": p["verdict"],
        "reexport": p["reexport"],
        "changed_in": _changed_in(p.get("steps", [])),
        **alone_entry(p),
    }


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
    d = run.data["result"]
    return {
        "exit": run.exit,
        "to": d["to"],
        "reexport": d["reexport"],
        "runtime": d["runtime"],
        "bundles": {
            b["bundle"]: {
                "exporter": b["exporter"],
                "verdict": b["verdict"],
                "reexport": b["reexport"],
                "runtime": b["runtime"],
                "deployment": _cores(b["deployment"]),
                "load": _load(b["load"]),
                "unrecorded_state": b["unrecorded_state"],
                "unrecorded": [
                    f"{u['probe']} @ {u['step']}: {u['verdict']}, {u['reexport']}"
                    for u in b["unrecorded"]
                ],
                "probes": [_probe(p) for p in b["probes"]],
                "coverage": _coverage(b["coverage"]),
                "conditions": [
                    {
                        "construct": c["construct"],
                        "condition": c["condition"],
                        "trained": {k: c["trained"][k] for k in ("verdict", "reexport")},
                        "if_met": {k: c["if_met"][k] for k in ("verdict", "reexport")},
                    }
                    for c in b["conditions"]
                ],
                **(
                    {
                        "whole_program": {
                            k: b["whole_program"][k]
                            for k in ("step", "to", "shipped", "drift_source")
                        }
                    }
                    if b["whole_program"] is not None
                    else {}
                ),
            }
            for b in d["bundles"]
        },
    }


def _load(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """A load answer: its verdict and, per release whose asset was checked, the outcome on each
    runtime (errors are prose, left out; the outcome and signal are the answer)."""
    if answer is None:
        return None
    return {
        "verdict": answer["verdict"],
        "reexport": answer["reexport"],
        "checks": {
            c["exporter"]: {o["core"]: o["outcome"] for o in c["outcomes"]}
            for c in answer["checks"]
        },
    }


def _coverage(cover: dict[str, Any] | None) -> dict[str, Any] | None:
    """What an answer rests on: its steps, whether the ops were counted and are all covered, and
    which op kinds are not (the counts follow the census; the kinds are the answer)."""
    if cover is None:
        return None
    return {
        "steps": cover["steps"],
        "counted": cover["counted"],
        "complete": cover["complete"],
        "checked_whole": cover["checked_whole"],
        "not_covered": sorted(cover["classes"]["not covered"]),
    }


def _cores(deployment: dict[str, Any] | None) -> list[str] | None:
    return deployment["cores"] if deployment else None


_PLAN_LEVELS = ("required", "inconclusive", "unchecked", "optional", "not_affected", "ignored")


def _plan(run: Run) -> dict[str, Any]:
    d = run.data["result"]
    return {
        "exit": run.exit,
        "to": d["to"],
        "reexport": d["reexport"],
        "bundles": {
            b["bundle"]: {
                "exporter": b["exporter"],
                "exporter_assumed": b["exporter_assumed"],
                "reexport": b["reexport"],
                "deployment": _cores(b["deployment"]),
                "load": _load(b["load"]),
                **{level: {i["fix"]: i["verdict"] for i in b[level]} for level in _PLAN_LEVELS},
                "changed_in": {
                    i["fix"]: [_credit(c["step"], c["explained_by"]) for c in i["changed_in"]]
                    for level in _PLAN_LEVELS
                    for i in b[level]
                    if i["changed_in"]
                },
                "unexplained": [
                    f"{u['probe']} @ {u['step']}: {u['verdict']}, {u['reexport']}"
                    for u in b["unexplained"]
                ],
                "not_checked": b["not_checked"],
                "coverage": _coverage(b["coverage"]),
                **({"verify": _check(b["verify"])} if b["verify"] is not None else {}),
            }
            for b in d["bundles"]
        },
    }


def _check(v: dict[str, Any]) -> dict[str, Any]:
    """A whole-program check as plan embeds it: its status and level, and each step's level
    with the measurement it rests on (the drift's numbers are floats, left out)."""
    return {
        "status": v["status"],
        "verdict": v["verdict"],
        "reexport": v["reexport"],
        "steps": {
            s["step"]: f"{s['verdict']}, {s['reexport']} ({s['drift_source']})" for s in v["steps"]
        },
        "regions": sorted(
            {_credit(f"{r['step']} {r['stage']}", r["explained_by"]) for r in v["regions"]}
        ),
    }


def _notes(run: Run) -> dict[str, Any]:
    d = run.data["result"]
    return {
        "exit": run.exit,
        "from": d["from"],
        "to": d["to"],
        "runtime": d["runtime"],
        "fixes": {
            f["fix"]: {
                "bundles": f["bundles"],
                "loads": [
                    {
                        side: {o["core"]: o["outcome"] for o in pair[side]["outcomes"]}
                        for side in ("old", "new")
                    }
                    for pair in f["loads"]
                ],
                "probes": {
                    p["probe"]: {
                        **{
                            k: p[k] for k in ("emitted", "shipped", "outputs", "verdict", "runtime")
                        },
                        **alone_entry(p),
                    }
                    for p in f["probes"]
                },
                "held_by": [f"{h['bundle']}: {h['instance']} x{h['count']}" for h in f["held_by"]],
                "summary": {k: v for k, v in f["summary"].items() if k != "max_abs_move"}
                if f["summary"]
                else None,
            }
            for f in d["fixes"]
        },
        "unexplained": [f"{u['probe']} @ {u['step']}" for u in d["unexplained"]],
    }


_EXTRACT = {"affected": _affected, "plan": _plan, "release-notes": _notes}


def extract(entry: Entry, run: Run) -> dict[str, Any]:
    return _EXTRACT[entry.section](run)


def fresh(entry: Entry) -> dict[str, Any]:
    return extract(entry, run_entry(entry))


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
        out += [
            f"{_at(path, key)}: not in the snapshot, got {_show(got[key])}"
            for key in got
            if key not in expected
        ]
        return out
    if (
        isinstance(expected, list)
        and isinstance(got, list)
        and not all(isinstance(v, int | str | None) for v in expected + got)
    ):
        out = []
        for i, (a, b) in enumerate(zip(expected, got, strict=False)):
            out += diff(a, b, f"{path}[{i}]")
        out += [
            f"{path}[{i}]: expected {_show(a)}, missing"
            for i, a in enumerate(expected[len(got) :], start=len(got))
        ]
        out += [
            f"{path}[{i}]: not in the snapshot, got {_show(b)}"
            for i, b in enumerate(got[len(expected) :], start=len(expected))
        ]
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
        return [
            f"{entry.key}: no golden entry ({os.path.relpath(entry.file, ROOT)} does not "
            f"exist) although the {what} {name} is in oracle/; run `scripts/golden --update` "
            "and review the new answers"
        ]
    return diff(expected, fresh(entry), entry.key)


def orphan(key: str) -> str:
    return (
        f"{key}: golden entry for something oracle/catalog/fixes.toml or "
        "oracle/catalog/converters.toml no "
        "longer holds; run `scripts/golden --update` (it removes the entry)"
    )


# ---- writing --------------------------------------------------------------------------------


def dump(value: Any, indent: int = 0) -> str:
    """Indented JSON; lists of scalars (shapes, bundle names) and short flat objects on one line."""
    pad = "  " * (indent + 1)
    inline = json.dumps(value)
    if (
        isinstance(value, dict)
        and value
        and (len(inline) > 60 or any(isinstance(v, dict | list) for v in value.values()))
    ):
        items = [f"{pad}{json.dumps(k)}: {dump(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list) and value and any(isinstance(v, dict) for v in value):
        items = [f"{pad}{dump(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return inline


def update() -> list[str]:
    """Rewrite the snapshot from a fresh run; return what changed."""
    compute()  # in the matrix's order: the checked entries need every check stored first
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
    compute()
    problems = [line for entry in entries() for line in check(entry)]
    known = {e.key for e in entries()}
    problems += [orphan(k) for k in stored_keys() if k not in known]
    print("\n".join(problems) if problems else "every golden answer holds")
    if problems:
        print(UPDATE_HINT, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests" / "helpers"))  # `cli`, as pytest and mypy find it
    sys.exit(main(sys.argv[1:]))
