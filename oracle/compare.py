"""Compare one probe under two converters: convert both, normalise, and measure when they differ.

Everything a result says comes from files this module keeps: each side's aten graph, emitted and
shipped IR and `.aimodel`; the normalised texts and their unified diff; and, when the shipped
programs differ, the inputs, the torch fp32 reference and both sides' outputs as safetensors,
all measured on one runtime.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oracle.client import Pool, WorkerFailure
from oracle.envs import Env
from oracle.normalise import compare_texts, normalise
from oracle.paths import cache_root
from oracle.spec import ProbeSpec
from oracle.stats import OutputStats, output_stats

_CODE_FILES = ("worker.py", "worker_io.py", "probes.py", "normalise.py", "stats.py", "compare.py")


@functools.cache
def _code_digest() -> str:
    """Results depend on the oracle's own code as much as on the converter: key on it too."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    # The probe builders live in the construct modules: a change to one changes what is probed.
    for path in [here / name for name in _CODE_FILES] + sorted((here / "constructs").glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _env_identity(env: Env) -> dict[str, str]:
    keep = ("coreai-torch", "coreai-core", "torch", "numpy")
    return {k: env.packages.get(k, "?") for k in keep}


@dataclass(frozen=True)
class Side:
    converter: str
    packages: dict[str, str]
    ok: bool
    stage: str = ""  # where it failed: export, convert, optimize, save, worker
    error: str = ""
    files: dict[str, str] = field(default_factory=dict)
    digest: str = ""
    emitted_is_optimized: bool = False


@dataclass(frozen=True)
class Measurement:
    runtime: str
    attempts: list[str]  # runtimes tried before this one, and why they were left
    ok: bool
    error: str = ""
    stats: OutputStats | None = None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeResult:
    spec: ProbeSpec
    old: Side
    new: Side
    # identical | differs | not-comparable (emitted only) | old-cannot-convert |
    # new-cannot-convert | both-cannot-convert
    emitted: str
    shipped: str
    measurement: Measurement | None
    evidence: str
    cached: bool = False

    @property
    def outputs(self) -> str:
        m = self.measurement
        if m is None or not m.ok or m.stats is None:
            return "not-run"
        return "bit-identical" if m.stats.bit_identical else "differ"


def _convert(pool: Pool, env: Env, spec: ProbeSpec, out: Path) -> Side:
    try:
        answer = pool.worker(env).call({"op": "convert", "spec": spec.to_json(), "out": str(out)})
    except WorkerFailure as exc:
        return Side(env.converter, _env_identity(env), False, "worker", str(exc))
    if not answer.get("ok"):
        return Side(env.converter, _env_identity(env), False, answer.get("stage", "?"),
                    answer.get("error", "?"),
                    {"traceback": answer.get("traceback", "")})
    return Side(env.converter, _env_identity(env), True, files=answer["files"],
                digest=answer["digest"], emitted_is_optimized=answer["emitted_is_optimized"])


def _identity(old: Side, new: Side, stage: str, out: Path) -> str:
    if not old.ok or not new.ok:
        if not old.ok and not new.ok:
            return "both-cannot-convert"
        return "old-cannot-convert" if not old.ok else "new-cannot-convert"
    if stage == "emitted" and old.emitted_is_optimized != new.emitted_is_optimized:
        # 0.4.3's to_coreai() already returns the optimized program: its emitted stage has no
        # counterpart on an older side, and comparing them would only report that contract.
        return "not-comparable"
    a = Path(old.files[stage]).read_text()
    b = Path(new.files[stage]).read_text()
    (out / f"{stage}.old.normalised.mlir").write_text(normalise(a))
    (out / f"{stage}.new.normalised.mlir").write_text(normalise(b))
    result = compare_texts(a, b, f"{stage} coreai-torch {old.converter}",
                           f"{stage} coreai-torch {new.converter}")
    if result.identical:
        return "identical"
    (out / f"{stage}.diff").write_text(result.diff)
    return "differs"


def _measure(pool: Pool, old_env: Env, new_env: Env, spec: ProbeSpec, old: Side, new: Side,
             out: Path) -> Measurement:
    """Run both assets on one runtime: the new side's, else the old side's if it cannot."""
    candidates = [new_env] if new_env.core == old_env.core else [new_env, old_env]
    attempts: list[str] = []
    assets = {"old": old.files["asset"], "new": new.files["asset"]}
    cores = {old_env.core, new_env.core}
    for env in candidates:
        # A runtime that already aborted on this pair of asset versions in this run is not
        # asked again (each abort costs a worker restart); the attempt is still reported.
        known = pool.failures.get((env.core, frozenset(cores)))
        if known:
            attempts.append(f"{env.runtime}: not retried ({known})")
            continue
        target = out / f"measure-{env.packages.get('coreai-core', env.core)}"
        try:
            answer = pool.worker(env).call(
                {"op": "measure", "spec": spec.to_json(), "assets": assets, "out": str(target)}
            )
        except WorkerFailure as exc:
            attempts.append(f"{env.runtime}: {exc}")
            if len(cores) > 1:
                pool.failures[(env.core, frozenset(cores))] = f"earlier in this run: {exc}"
            continue
        failed = {s: v for s, v in answer.get("sides", {}).items() if not v.get("ok")}
        if not answer.get("ok") or failed:
            why = answer.get("error") or "; ".join(f"{s}: {v['error']}" for s, v in failed.items())
            attempts.append(f"{env.runtime}: {why}")
            continue
        files = {"inputs": answer["inputs"], "reference": answer["reference"],
                 "old": answer["sides"]["old"]["outputs"],
                 "new": answer["sides"]["new"]["outputs"], "log": answer["log"]}
        stats = output_stats(Path(files["old"]), Path(files["new"]), Path(files["reference"]))
        return Measurement(env.runtime, attempts, True, stats=stats, files=files)
    return Measurement("none", attempts, False, error="no runtime could run both assets")


def _cache_key(spec: ProbeSpec, old_env: Env, new_env: Env) -> str:
    payload = {"spec": spec.to_json(), "old": _env_identity(old_env),
               "new": _env_identity(new_env), "code": _code_digest()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def result_dir(spec: ProbeSpec, old_env: Env, new_env: Env) -> Path:
    return (cache_root() / "results" /
            f"{spec.construct}-{old_env.converter}-{new_env.converter}-"
            f"{_cache_key(spec, old_env, new_env)}")


def compare(spec: ProbeSpec, old_env: Env, new_env: Env, pool: Pool,
            use_cache: bool = True) -> ProbeResult:
    final = result_dir(spec, old_env, new_env)
    if use_cache:
        cached = load_result(final)
        if cached is not None:
            return cached
    final.parent.mkdir(parents=True, exist_ok=True)
    # Built in a temp folder and renamed into place: a reader never sees half a result.
    work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}."))
    try:
        with ThreadPoolExecutor(max_workers=2) as ex:  # the two sides convert in parallel
            f_old = ex.submit(_convert, pool, old_env, spec, work / f"old-{old_env.converter}")
            f_new = ex.submit(_convert, pool, new_env, spec, work / f"new-{new_env.converter}")
            old, new = f_old.result(), f_new.result()
        if old.ok and new.ok and old.digest != new.digest:
            raise RuntimeError("the two sides built different probe modules; refusing to compare")
        emitted = _identity(old, new, "emitted", work)
        shipped = _identity(old, new, "shipped", work)
        measurement = None
        if shipped == "differs":
            measurement = _measure(pool, old_env, new_env, spec, old, new, work)
        result = ProbeResult(spec, old, new, emitted, shipped, measurement, str(final))
        result = _relocate(result, work, final)
        record = {**to_json(result), "key": final.name, "code": _code_digest(),
                  "files_sha256": _manifest(work)}
        (work / "result.json").write_text(json.dumps(record, indent=2))
        return _publish(work, final, result)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _publish(work: Path, final: Path, result: ProbeResult) -> ProbeResult:
    """Move a finished result into place; if another process got there first, keep theirs."""
    try:
        work.rename(final)
        return result
    except OSError:
        pass
    theirs = load_result(final)
    if theirs is not None:
        shutil.rmtree(work, ignore_errors=True)
        return ProbeResult(**{**theirs.__dict__, "cached": False})
    # A damaged entry is in the way: set it aside, then take its place.
    graveyard = final.with_name(f".{final.name}.damaged.{os.getpid()}")
    final.rename(graveyard)
    shutil.rmtree(graveyard, ignore_errors=True)
    work.rename(final)
    return result


def _relocate(result: ProbeResult, work: Path, final: Path) -> ProbeResult:
    """Rewrite evidence paths from the temp folder to where the result will live."""
    text = json.dumps(to_json(result)).replace(str(work), str(final))
    return from_json(json.loads(text))


def to_json(result: ProbeResult) -> dict[str, Any]:
    data = asdict(result)
    data["spec"] = result.spec.to_json()
    data["outputs"] = result.outputs
    return data


def from_json(data: dict[str, Any]) -> ProbeResult:
    from oracle.spec import Pipeline

    s = data["spec"]
    spec = ProbeSpec(s["construct"], s["params"], s["dtype"], Pipeline(**s["pipeline"]),
                     s["values"], s["seed"])
    m = data.get("measurement")
    measurement = None
    if m is not None:
        stats = OutputStats(**m["stats"]) if m.get("stats") else None
        measurement = Measurement(m["runtime"], m["attempts"], m["ok"], m.get("error", ""),
                                  stats, m.get("files", {}))
    return ProbeResult(spec, Side(**data["old"]), Side(**data["new"]), data["emitted"],
                       data["shipped"], measurement, data["evidence"], data.get("cached", False))


def _manifest(folder: Path) -> dict[str, str]:
    """sha256 of every evidence file, so a damaged stored result is detected, not trusted."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "result.json":
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def load_result(path: Path) -> ProbeResult | None:
    """A stored result, or None if absent, unreadable or damaged (then it is recomputed)."""
    try:
        data = json.loads((path / "result.json").read_text())
        result = from_json(data)
        if _manifest(path) != data["files_sha256"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return ProbeResult(**{**result.__dict__, "cached": True})
