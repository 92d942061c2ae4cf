"""`inventory scan`: read shipped `.aimodel` bundles and say what a bundle can and cannot tell.

A bundle is data. This process reads `metadata.json` as JSON and checks `main.mlirb` against
`main.hash`; the program itself is parsed by coreai-core's own bindings in a converter
environment (`oracle/scan_worker.py`), in a subprocess whose native abort is contained. Nothing
from a bundle is ever run, compiled or imported.

Which core reads a bundle: the one its `producer` names; a bundle without a producer is of the
1.0.0b1 era (coreai-torch 0.4.0 stamps none), and 1.0.0b2/b3 abort on such an asset, so it is read
with 1.0.0b1 first. When the first choice fails the other cores are tried, and the answer says
which core read it and what failed before.

The op histogram of an entry point resolves every `coreai.invoke`: a callee with a composite
declaration counts as one call site of that composite, however many call sites share one body
after the optimizer deduplicated identical bodies; a callee without one is inlined.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inventory.registry import UNKNOWN, Bundle
from oracle import constructs
from oracle.client import Worker, WorkerFailure
from oracle.envs import Catalog, Env, EnvError, ensure_env, ready_env, version_key
from oracle.paths import cache_root

SCAN_WORKER_SCRIPT = Path(__file__).resolve().parent.parent / "oracle" / "scan_worker.py"
BYTECODE_MAGIC = b"ML\xefR"
Progress = Callable[[str], None]

DTYPE_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
               "si8": "int8", "si32": "int32", "si64": "int64", "ui8": "uint8", "i1": "bool"}

# What a scan cannot establish, said in every registry comparison.
CANNOT_ESTABLISH = (
    "lowerings baked into plain ops: how a converter lowered a construct (0.4.1 pre-pads a conv "
    "transpose's input where 0.4.2 passes padding and output_padding; an fp16 batch norm "
    "computed in fp32 or with downcast parameters) leaves plain ops, not a name; "
    "`inventory affected` answers that by converting probes under both releases",
    "constructs without a composite: a layer norm without affine parameters written or "
    "decomposed as reduce_mean/sub/mul/add/rsqrt is plain ops and cannot be counted",
)


class ScanError(Exception):
    """The scan cannot start (a path is missing, nothing to scan); one line for the user."""


class BundleError(Exception):
    """One bundle cannot be read; the message is one line naming the file and the problem."""


# ---- results -----------------------------------------------------------------------------------


@dataclass
class Composite:
    """One composite kind as the entry point uses it."""

    kind: str
    call_sites: int  # invoke ops reaching it from the entry point
    nested: int  # invocations from inside other composites' bodies, per entry-point run
    bodies: list[dict[str, Any]]  # one per distinct body: name, call sites, input types
    declared_by: str  # "composite_decl", "template_op", or "name" (no declaration: a guess)


@dataclass
class Entry:
    """One public graph (an entry point) with its invokes resolved."""

    name: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    ops: dict[str, int]  # plain ops of the entry point (non-composite callees inlined)
    composites: list[Composite]
    inlined: dict[str, int]  # every op per run, composite bodies expanded per call site
    dynamic: list[str]  # inputs/outputs with a dynamic (`?`) axis
    dynamic_results: int  # ops of the entry point whose result has a dynamic axis
    unresolved: dict[str, int]  # invoke targets not in the bundle


@dataclass
class BundleScan:
    path: str
    name: str
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # metadata.json as stored
    producer: str | None = None
    producer_core: str | None = None
    asset_version: str | None = None
    created: str | None = None
    integrity: str = ""
    reader: dict[str, Any] = field(default_factory=dict)
    attempts: list[str] = field(default_factory=list)
    core_metadata: dict[str, Any] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    composite_bodies: int = 0
    weights: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def composite_uses(self, kind: str) -> int:
        return sum(c.call_sites + c.nested for e in self.entries for c in e.composites
                   if c.kind == kind)

    def op_count(self, fragment: str) -> int:
        return sum(n for e in self.entries for op, n in e.inlined.items()
                   if fragment in op.split(".")[-1])


@dataclass
class Finding:
    subject: str
    status: str  # agree | disagree | cannot-tell | not-traced | info
    traced: str
    scanned: str
    reason: str


@dataclass
class RegistryLink:
    bundle: str | None  # the registry entry, None when nothing matched
    scans: list[str]
    matched_by: dict[str, str]  # scan path -> "name", "fingerprint", "name and fingerprint"
    files_missing: list[str]
    findings: list[Finding]
    cannot_establish: list[str]


@dataclass
class ScanReport:
    scans: list[BundleScan]
    links: list[RegistryLink] | None
    registry: str | None
    warnings: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[BundleScan]:
        return [s for s in self.scans if not s.ok]

    @property
    def disagreements(self) -> int:
        return sum(1 for link in self.links or [] for f in link.findings
                   if f.status == "disagree")


# ---- finding bundles ---------------------------------------------------------------------------


def is_bundle(path: Path) -> bool:
    return path.is_dir() and (path.suffix == ".aimodel" or (path / "main.mlirb").exists()
                              or (path / "metadata.json").exists())


def find_bundles(paths: list[Path]) -> list[Path]:
    """Each path is a bundle folder or a folder holding bundles (at any depth)."""
    if not paths:
        raise ScanError("give a bundle folder or a folder of bundles")
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise ScanError(f"{path}: no such file or directory")
        if not path.is_dir():
            raise ScanError(f"{path}: not a folder (a bundle is a .aimodel folder)")
        if is_bundle(path):
            found.append(path)
            continue
        inner = []
        for root, dirs, _files in os.walk(path):
            here = Path(root)
            for d in sorted(dirs):
                if is_bundle(here / d):
                    inner.append(here / d)
            dirs[:] = sorted(d for d in dirs if not is_bundle(here / d))
        if not inner:
            raise ScanError(f"{path}: no .aimodel bundle in this folder")
        found += sorted(inner)
    seen: set[Path] = set()
    unique = []
    for p in found:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


# ---- reading what needs no core ----------------------------------------------------------------


def core_of_producer(producer: str | None) -> str | None:
    if not producer:
        return None
    found = re.search(r"coreai-core\s+(\S+)", producer)
    return found.group(1) if found else None


def _iso_date(raw: Any) -> str | None:
    if isinstance(raw, int | float):
        return datetime.fromtimestamp(raw, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not isinstance(raw, str) or not raw:
        return None
    for fmt in ("%Y%m%dT%H%M%SZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(raw, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return raw


def read_metadata(bundle: Path) -> dict[str, Any]:
    path = bundle / "metadata.json"
    if not path.exists() and not path.is_symlink():
        raise BundleError(f"{bundle}: not a bundle: no metadata.json")
    if not path.is_file():
        raise BundleError(f"{path}: not a regular file")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column "
                          f"{exc.colno}): truncated or corrupt") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a JSON object")
    return data


def check_program(bundle: Path) -> str:
    """`main.mlirb` is MLIR bytecode and matches `main.hash` when the bundle has one."""
    program = bundle / "main.mlirb"
    if not program.exists() and not program.is_symlink():
        raise BundleError(f"{bundle}: not a bundle: no main.mlirb")
    if not program.is_file():
        raise BundleError(f"{program}: not a regular file")
    digest = hashlib.sha256()
    size = 0
    with open(program, "rb") as handle:
        head = handle.read(4)
        digest.update(head)
        size += len(head)
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    if size == 0:
        raise BundleError(f"{program}: empty file")
    if head != BYTECODE_MAGIC:
        raise BundleError(f"{program}: not MLIR bytecode (starts {head!r})")
    stored = bundle / "main.hash"
    if not stored.is_file():
        return "no main.hash: program integrity not checked"
    expected = stored.read_bytes()
    if expected != digest.digest():
        raise BundleError(f"{program}: does not match main.hash ({size} bytes, sha256 "
                          f"{digest.hexdigest()[:16]}..., stored {expected.hex()[:16]}...): "
                          f"truncated or modified")
    return f"main.mlirb matches main.hash (sha256 {digest.hexdigest()[:16]}..., {size} bytes)"


# ---- the reader: a contained subprocess per environment ----------------------------------------


class ScanWorker(Worker):
    """A long-lived `scan_worker.py` in one environment; a native abort is a WorkerFailure."""

    script = SCAN_WORKER_SCRIPT


def core_order(catalog: Catalog) -> list[str]:
    """Distinct coreai-core releases of the catalog, oldest first."""
    cores: list[str] = []
    for version in sorted(catalog.releases, key=version_key):
        core = catalog.releases[version].core
        if core not in cores:
            cores.append(core)
    return cores


def reader_plan(producer_core: str | None, catalog: Catalog) -> list[tuple[str, str]]:
    """(core, why) in the order to try them."""
    cores = core_order(catalog)
    if producer_core is None:
        first = cores[0]
        return [(first, f"no producer: a coreai-core {first} era bundle")] + [
            (c, "fallback") for c in cores[1:]]
    if producer_core in cores:
        return [(producer_core, "the producer's own core")] + [
            (c, "fallback") for c in reversed(cores) if c != producer_core]
    return [(c, f"producer coreai-core {producer_core} has no environment; fallback")
            for c in reversed(cores)]


class Readers:
    """One scan worker per environment, started when first needed."""

    def __init__(self, catalog: Catalog, progress: Progress, reader: str | None = None) -> None:
        self.catalog = catalog
        self.progress = progress
        self.forced = reader
        self.run = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        self.log_dir = cache_root() / "logs" / "scan"
        self._workers: dict[str, ScanWorker] = {}
        self._envs: dict[str, Env] = {}

    def env_for_core(self, core: str) -> Env:
        if core not in self._envs:
            releases = sorted((v for v, r in self.catalog.releases.items() if r.core == core),
                              key=version_key, reverse=True)
            env = next((e for e in map(ready_env, releases) if e is not None), None)
            if env is None:
                env = ensure_env(releases[0], self.catalog, self.progress)
            self._envs[core] = env
        return self._envs[core]

    def plan(self, producer_core: str | None) -> Iterator[tuple[Env | None, str, str]]:
        """(environment, core, why) in the order to try; an environment is found or built only
        when its turn comes, and one that cannot be built is (None, core, the reason)."""
        if self.forced:
            env = ensure_env(self.forced, self.catalog, self.progress)
            yield env, env.packages.get("coreai-core", env.core), f"--reader {self.forced}"
            return
        for core, why in reader_plan(producer_core, self.catalog):
            try:
                env = self.env_for_core(core)
            except EnvError as exc:
                yield None, core, f"no environment: {exc}"
                continue
            yield env, env.packages.get("coreai-core", env.core), why

    def worker(self, env: Env) -> ScanWorker:
        if env.name not in self._workers:
            self._workers[env.name] = ScanWorker(
                env, self.log_dir / f"{env.name}.scan-worker.log")
        return self._workers[env.name]

    def read(self, bundle: Path, env: Env) -> dict[str, Any]:
        log = self.log_dir / f"{self.run}.{env.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        start = log.stat().st_size if log.exists() else 0
        try:
            answer = self.worker(env).call(
                {"op": "read", "bundle": str(bundle.resolve()), "log": str(log)})
        except WorkerFailure as exc:
            native = _native_error(log, start)
            died = str(exc).split(" (log:")[0].replace(f"{env.name} worker ", "")
            return {"ok": False, "stage": "native",
                    "error": f"{native} ({died})" if native else died, "log": str(log)}
        if not answer.get("ok"):
            native = _native_error(log, start)
            if native:
                answer["error"] = f"{answer.get('error')}; {native}"
        answer["log"] = str(log)
        return answer

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


def _native_error(log: Path, start: int) -> str:
    """The last `error:` line coreai-core printed while reading one bundle."""
    try:
        with open(log, "rb") as handle:
            handle.seek(start)
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:") or ": error:" in ln]
    pick = errors[-1] if errors else next(
        (ln for ln in reversed(lines) if ln.startswith(("what():", "terminate called"))), "")
    pick = pick.split(": error:", 1)[-1].removeprefix("error:").strip()
    return pick[:200]


# ---- analysis of what the worker read ----------------------------------------------------------


def _dtype(raw: str | None) -> str:
    return DTYPE_NAMES.get(raw or "", raw or "?")


_HANDLE = re.compile(r"handle<tensor<((?:[0-9?]+x)*)([a-z]+[0-9]*)>>")


def _tensor(t: dict[str, Any]) -> dict[str, Any]:
    """An entry point's input or output; a state handle shows the tensor it holds."""
    out = {"name": t.get("name"), "shape": t.get("shape"), "dtype": _dtype(t.get("dtype"))}
    if t.get("shape") is not None:
        return out
    text = str(t.get("type", ""))
    found = _HANDLE.search(text)
    if found:
        dims = [d for d in found.group(1).split("x") if d]
        return {**out, "kind": "state",
                "shape": [d if d == "?" else int(d) for d in dims],
                "dtype": _dtype(found.group(2))}
    return {**out, "kind": "token" if "token" in text else text, "dtype": None}


_RANDOM_SUFFIX = re.compile(r"^([a-z][a-z0-9_]*?)_[a-z]{8}$")


def composite_kind(graph: dict[str, Any]) -> tuple[str | None, str]:
    """What a callee is: its composite declaration, else its template_op (not serialised by
    the releases seen so far), else a private no-inline graph named `<kind>_<8 letters>`."""
    if graph.get("composite"):
        return graph["composite"], "composite_decl"
    if graph.get("template_op"):
        return graph["template_op"], "template_op"
    found = _RANDOM_SUFFIX.match(graph.get("name", ""))
    if found and graph.get("noinline") and not graph.get("public"):
        return found.group(1), "name"
    return None, ""


def resolve_entry(entry: dict[str, Any], graphs: dict[str, dict[str, Any]]) -> Entry:
    ops: Counter[str] = Counter()
    inlined: Counter[str] = Counter()
    unresolved: Counter[str] = Counter()
    uses: dict[str, dict[str, Any]] = {}
    dynamic_results = 0

    def walk(graph: dict[str, Any], mult: int, in_composite: bool, stack: tuple[str, ...]):
        nonlocal dynamic_results
        for op, n in graph["ops"].items():
            if op.endswith(".invoke"):
                continue
            inlined[op] += n * mult
            if not in_composite:
                ops[op] += n * mult
        if not in_composite:
            dynamic_results += graph.get("dynamic_results", 0) * mult
        for callee, n in graph["invokes"].items():
            target = graphs.get(callee)
            if target is None or callee in stack:
                unresolved[callee] += n * mult
                continue
            kind, declared_by = composite_kind(target)
            if kind:
                use = uses.setdefault(kind, {"call_sites": 0, "nested": 0, "bodies": {},
                                             "declared_by": set()})
                use["declared_by"].add(declared_by)
                use["nested" if in_composite else "call_sites"] += n * mult
                body = use["bodies"].setdefault(callee, {
                    "name": callee,
                    "call_sites": 0,
                    "inputs": [_dtype(t.get("dtype")) for t in target["inputs"]],
                    "input_shapes": [t.get("shape") for t in target["inputs"]],
                    "computes": sorted(_dtype(d) for d in target.get("result_dtypes", {})),
                })
                body["call_sites"] += n * mult
                walk(target, n * mult, True, (*stack, callee))
            else:
                walk(target, n * mult, in_composite, (*stack, callee))

    walk(entry, 1, False, (entry["name"],))
    composites = [Composite(kind, u["call_sites"], u["nested"], list(u["bodies"].values()),
                            "+".join(sorted(u["declared_by"])))
                  for kind, u in sorted(uses.items())]
    dynamic = [f"{side} {t.get('name') or i}: [{', '.join(str(d) for d in t['shape'] or [])}]"
               for side, items in (("input", entry["inputs"]), ("output", entry["outputs"]))
               for i, t in enumerate(items) if t.get("dynamic")]
    return Entry(
        name=entry["name"],
        inputs=[_tensor(t) for t in entry["inputs"]],
        outputs=[_tensor(t) for t in entry["outputs"]],
        ops=dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        composites=composites,
        inlined=dict(sorted(inlined.items(), key=lambda kv: (-kv[1], kv[0]))),
        dynamic=dynamic,
        dynamic_results=dynamic_results,
        unresolved=dict(unresolved),
    )


def _absorb(scan: BundleScan, answer: dict[str, Any]) -> None:
    graphs = {g["name"]: g for g in answer["graphs"]}
    public = [g for g in answer["graphs"] if g.get("public")]
    scan.entries = [resolve_entry(g, graphs) for g in public]
    scan.composite_bodies = sum(1 for g in answer["graphs"] if composite_kind(g)[0])
    scan.weights = answer["weights"]
    scan.core_metadata = answer.get("metadata", {})
    if not public:
        scan.notes.append("no public graph: the bundle has no entry point")
    for e in scan.entries:
        for c in e.composites:
            if len(c.bodies) < c.call_sites + c.nested:
                scan.notes.append(
                    f"{e.name}: {c.kind} has {c.call_sites + c.nested} call site(s) sharing "
                    f"{len(c.bodies)} bod{'y' if len(c.bodies) == 1 else 'ies'} "
                    f"(identical composites deduplicated by the optimizer)")
            if "name" in c.declared_by:
                scan.notes.append(f"{e.name}: {c.kind} is named so but carries no composite "
                                  f"declaration: counted by its name only")
        if e.unresolved:
            names = ", ".join(sorted(e.unresolved))
            scan.notes.append(f"{e.name}: invoke of a graph the bundle does not hold: {names}")
    if scan.weights.get("unresolved_resources"):
        scan.notes.append(f"{scan.weights['unresolved_resources']} weight resource(s) could not "
                          f"be read; the fingerprint leaves them out")


def scan_bundle(bundle: Path, readers: Readers) -> BundleScan:
    scan = BundleScan(path=str(bundle), name=bundle.name)
    try:
        scan.metadata = read_metadata(bundle)
        scan.integrity = check_program(bundle)
    except BundleError as exc:
        scan.error = str(exc)
        return scan
    producer = scan.metadata.get("producer")
    scan.producer = producer if isinstance(producer, str) and producer else None
    scan.producer_core = core_of_producer(scan.producer)
    scan.asset_version = (str(scan.metadata["assetVersion"])
                          if "assetVersion" in scan.metadata else None)
    scan.created = _iso_date(scan.metadata.get("creationDate"))
    if scan.producer is None:
        scan.notes.append("no producer in metadata.json: written by coreai-core 1.0.0b1 "
                          "(coreai-torch 0.4.0), which stamps none, or edited afterwards")
    own = scan.producer_core
    if scan.created is None:
        scan.notes.append("no creationDate in metadata.json")
    if "no main.hash" in scan.integrity:
        scan.notes.append(scan.integrity)
    failures: list[tuple[str, str]] = []
    for env, core, why in readers.plan(scan.producer_core):
        if env is None:
            failures.append((core, why))
            continue
        answer = readers.read(bundle, env)
        if answer.get("ok"):
            scan.reader = {"core": core, "env": env.name, "why": why,
                           "log": answer.get("log")}
            scan.attempts = [f"coreai-core {c}: {e}" for c, e in failures]
            if own and core != own and any(c == own for c, _e in failures):
                scan.notes.append(f"the producer names coreai-core {own}, which cannot read "
                                  f"it; metadata.json may have been edited")
            try:
                _absorb(scan, answer)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                scan.error = (f"{bundle}: coreai-core {core} gave an answer this scanner does "
                              f"not understand ({type(exc).__name__}: {exc})")
            return scan
        failures.append((core, str(answer.get("error", "failed"))))
    scan.attempts = [f"coreai-core {c}: {e}" for c, e in failures]
    scan.error = _read_failure(bundle, failures)
    return scan


def _read_failure(bundle: Path, failures: list[tuple[str, str]]) -> str:
    errors = {e for _c, e in failures}
    cores = ", ".join(c for c, _e in failures)
    if len(errors) == 1:
        detail = errors.pop()
        hint = ": truncated or corrupt" if "parse" in detail or "bytecode" in detail else ""
        return (f"{bundle / 'main.mlirb'}: coreai-core {cores} cannot read it: {detail}"
                f"{hint}")
    detail = "; ".join(f"{c}: {e}" for c, e in failures)
    return f"{bundle / 'main.mlirb'}: no coreai-core could read it ({detail})"


# ---- the registry ------------------------------------------------------------------------------


def _file_pattern(name: str) -> re.Pattern[str]:
    """A registry file name; `<L>`-style placeholders stand for any text."""
    parts = re.split(r"<[^<>]+>", Path(name).name)
    return re.compile("^" + ".+?".join(re.escape(p) for p in parts) + "$")


def registry_fingerprints(path: Path) -> dict[str, set[str]]:
    """Optional `fingerprint`/`fingerprints` of each registry entry (a string, a list, or a
    table file -> fingerprint), read from the TOML itself."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    out: dict[str, set[str]] = {}
    for name, raw in (data.get("bundles") or {}).items():
        if not isinstance(raw, dict):
            continue
        values: set[str] = set()
        for key in ("fingerprint", "fingerprints"):
            value = raw.get(key)
            if isinstance(value, str):
                values.add(value)
            elif isinstance(value, list):
                values |= {str(v) for v in value}
            elif isinstance(value, dict):
                values |= {str(v) for v in value.values()}
        if values:
            out[name] = values
    return out


def match(scan: BundleScan, bundles: list[Bundle],
          fingerprints: dict[str, set[str]]) -> tuple[Bundle | None, str, str]:
    """(registry entry, registry file, how matched); a conflict is reported as unmatched."""
    by_name = [(b, f) for b in bundles for f in b.files if _file_pattern(f).match(scan.name)]
    fp = scan.weights.get("fingerprint")
    by_fp = [b for b in bundles if fp and fp in fingerprints.get(b.name, set())]
    if by_name and by_fp:
        if by_name[0][0].name != by_fp[0].name:
            return None, "", (f"name matches {by_name[0][0].name}, fingerprint matches "
                              f"{by_fp[0].name}")
        return by_name[0][0], by_name[0][1], "name and fingerprint"
    if by_name:
        return by_name[0][0], by_name[0][1], "name"
    if by_fp:
        return by_fp[0], "", "fingerprint"
    return None, "", "no registry file name or fingerprint matches"


def _traced(bundle: Bundle) -> bool:
    return bool(bundle.instances) or "summary" in bundle.trace or "packages" in bundle.trace


def _exporter_finding(bundle: Bundle, scans: list[BundleScan],
                      catalog: Catalog) -> Finding:
    recorded = bundle.exporter.core
    traced = (f"coreai-torch {bundle.exporter.converter}, coreai-core {recorded}"
              if bundle.exporter.converter != UNKNOWN else "unknown")
    cores = core_order(catalog)
    seen = sorted({s.producer_core or "none" for s in scans})
    scanned = ", ".join(f"producer coreai-core {c}" if c != "none" else "no producer"
                        for c in seen)
    pins = {c: sorted((v for v, r in catalog.releases.items() if r.core == c), key=version_key)
            for c in cores}
    implied = set()
    for c in seen:
        core = cores[0] if c == "none" else c
        implied.add(core)
    if len(implied) > 1:
        return Finding("exporter", "disagree", traced, scanned,
                       "the registry's files were written by different cores")
    core = implied.pop()
    releases = ", ".join(pins.get(core, [])) or "no supported release"
    why_none = (f"a bundle without a producer points to coreai-core {cores[0]}, which stamps "
                f"none" if "none" in seen else f"coreai-core {core} is pinned by coreai-torch "
                f"{releases}")
    if recorded == UNKNOWN:
        return Finding("exporter", "info", traced, scanned,
                       f"the registry records no exporter; {why_none} (coreai-torch "
                       f"{releases})")
    if recorded == core:
        return Finding("exporter", "agree", traced, scanned, why_none)
    return Finding("exporter", "disagree", traced, scanned,
                   f"the registry records coreai-core {recorded}; {why_none}")


def _dtype_finding(bundle: Bundle, scans: list[BundleScan]) -> Finding:
    weights: Counter[str] = Counter()
    for s in scans:
        for dt, n in (s.weights.get("dtypes") or {}).items():
            weights[_dtype(dt)] += n
    floats = {k: v for k, v in weights.items() if k in ("float16", "bfloat16", "float32")}
    scanned = ", ".join(f"{k} {v}" for k, v in sorted(floats.items())) or "no float weights"
    if not floats:
        return Finding("dtype", "cannot-tell", bundle.dtype, scanned,
                       "no floating-point weight to compare")
    dominant = max(floats, key=lambda k: floats[k])
    if bundle.dtype in floats and floats[bundle.dtype] > 0:
        status = "agree" if dominant == bundle.dtype else "info"
        reason = ("the weights are mostly " + dominant
                  + ("" if status == "agree" else f"; {bundle.dtype} weights present too"))
        return Finding("dtype", status, bundle.dtype, scanned, reason)
    return Finding("dtype", "disagree", bundle.dtype, f"weights: {scanned}",
                   f"no {bundle.dtype} weight in the scanned file(s)")


def traced_kinds() -> set[str]:
    """The construct kinds `inventory trace` detects."""
    return {c.kind for c in constructs.detected()}


def _instance_findings(bundle: Bundle, scans: list[BundleScan],
                       files_missing: list[str]) -> list[Finding]:
    if not _traced(bundle):
        return [Finding("instances", "not-traced", "not traced", "-",
                        "the registry holds no trace of this bundle yet (inventory trace "
                        f"{bundle.name} --write); nothing to compare")]
    traced: Counter[str] = Counter()
    for inst in bundle.instances:
        traced[inst.kind] += inst.count
    findings = []
    # What a scan counts per kind: call sites of a composite declaration, or plain ops by name.
    composite_of = {c.kind: c.scan.composite for c in constructs.all_constructs()
                    if c.scan.composite}
    ops_of = {c.kind: c.scan.ops for c in constructs.all_constructs() if c.scan.ops}
    kinds = set(traced) | {k for k, comp in composite_of.items()
                           if any(s.composite_uses(comp) for s in scans)} | {
        k for k, frags in ops_of.items() if any(s.op_count(f) for s in scans for f in frags)}
    detected = traced_kinds()
    producers = {s.producer_core for s in scans}
    optimized = bundle.pipeline.optimize
    decomposed = bundle.pipeline.decompositions != "coreai"
    for kind in sorted(kinds):
        want = traced.get(kind, 0)
        if kind in composite_of:
            seen = sum(s.composite_uses(composite_of[kind]) for s in scans)
            what = f"{seen} {composite_of[kind]} composite call site(s)"
        elif kind in ops_of:
            seen = sum(s.op_count(f) for s in scans for f in ops_of[kind])
            what = f"{seen} {'/'.join(ops_of[kind])} op(s)"
        else:
            findings.append(Finding(kind, "cannot-tell", f"{want}x {kind}", "-",
                                    f"a scan has no signature for {kind}"))
            continue
        label = f"{want}x {kind}" if want else "none traced"
        if seen == want:
            findings.append(Finding(kind, "agree", label, what, "same count"))
            continue
        if seen > want:
            if want == 0 and kind not in detected:
                findings.append(Finding(kind, "info", label, what,
                                        f"present in the bundle; the tracer does not detect "
                                        f"{kind}, so the registry cannot say"))
                continue
            findings.append(Finding(kind, "disagree", label, what,
                                    "the bundle holds more than the trace recorded: a stale "
                                    "trace, or another export than the recipe traced"))
            continue
        reasons = []
        if files_missing:
            reasons.append(f"{len(files_missing)} file(s) of the bundle not scanned "
                           f"({', '.join(files_missing)})")
        if kind == "batch_norm" and optimized and (producers - {None}) and any(
                s.op_count("conv2d") for s in scans):
            reasons.append("optimize() in coreai-core 1.0.0b2 and later folds a batch norm "
                           "that directly follows a 2-D convolution into the convolution's "
                           "weights: a folded batch norm leaves no call site")
        if kind in ("layer_norm", "group_norm", "instance_norm") and decomposed:
            reasons.append(f"the pipeline decomposes with {bundle.pipeline.decompositions} "
                           f"decompositions: a {kind} arrives as plain ops")
        if kind == "layer_norm":
            rsqrt = sum(s.op_count("rsqrt") for s in scans)
            if rsqrt:
                reasons.append(f"{rsqrt} rsqrt op(s) outside composites could be layer norms "
                               f"without affine parameters lowered to plain ops")
        if reasons:
            findings.append(Finding(kind, "cannot-tell", label, what,
                                    f"{want - seen} not seen; " + "; ".join(reasons)))
        else:
            findings.append(Finding(kind, "disagree", label, what,
                                    f"{want - seen} traced instance(s) missing from the bundle"))
    return findings


def link_registry(scans: list[BundleScan], bundles: list[Bundle], registry: Path,
                  catalog: Catalog) -> list[RegistryLink]:
    fingerprints = registry_fingerprints(registry)
    groups: dict[str, list[tuple[BundleScan, str, str]]] = {}
    links: list[RegistryLink] = []
    known = {b.name: b for b in bundles}
    for s in scans:
        if not s.ok:
            continue
        entry, file, how = match(s, bundles, fingerprints)
        if entry is None:
            links.append(RegistryLink(None, [s.path], {s.path: how}, [], [Finding(
                "registry", "info", "-", s.name, how)], []))
            continue
        groups.setdefault(entry.name, []).append((s, file, how))
    for name, members in groups.items():
        bundle = known[name]
        group = [m[0] for m in members]
        scanned_files = {f for _s, f, _h in members if f}
        missing = [f for f in bundle.files if f not in scanned_files]
        if any(not f for _s, f, _h in members):
            missing = []  # matched by fingerprint: which file it is is not known
        findings = [_exporter_finding(bundle, group, catalog), _dtype_finding(bundle, group)]
        findings += _instance_findings(bundle, group, missing)
        cannot = []
        cores = {s.producer_core for s in group}
        for core in sorted(c for c in cores if c):
            pins = sorted((v for v, r in catalog.releases.items() if r.core == core),
                          key=version_key)
            if len(pins) > 1:
                cannot.append(f"which coreai-torch release exported it: coreai-core {core} is "
                              f"pinned by coreai-torch {' and '.join(pins)}")
        if not cannot:
            cannot.append("which coreai-torch release exported it: the producer names "
                          "coreai-core only (and a 1.0.0b1 bundle has none)")
        cannot += CANNOT_ESTABLISH
        links.append(RegistryLink(name, [s.path for s in group],
                                  {s.path: h for s, _f, h in members}, missing, findings,
                                  cannot))
    return links


# ---- the service -------------------------------------------------------------------------------


def scan(paths: list[Path], catalog: Catalog, *, reader: str | None = None,
         registry: tuple[Path, list[Bundle]] | None = None,
         progress: Progress = lambda _: None) -> ScanReport:
    """Scan every bundle under `paths`; with a registry, link each to its entry."""
    found = find_bundles(paths)
    if reader is not None:
        catalog.release(reader)  # an unknown release is a usage error (EnvError)
    readers = Readers(catalog, progress, reader)
    scans = []
    try:
        for bundle in found:
            progress(f"reading {bundle.name}")
            scans.append(scan_bundle(bundle, readers))
    finally:
        readers.close()
    links = None
    if registry is not None:
        links = link_registry(scans, registry[1], registry[0], catalog)
    warnings = [f"{s.name}: read with coreai-core {s.reader['core']} after: "
                f"{'; '.join(s.attempts)}" for s in scans if s.ok and s.attempts
                and s.reader.get("why") == "fallback"]
    return ScanReport(scans, links, str(registry[0]) if registry else None, warnings)


__all__ = [
    "BundleError",
    "BundleScan",
    "EnvError",
    "ScanError",
    "ScanReport",
    "find_bundles",
    "scan",
]
