"""`inventory repair BUNDLE -o OUT`: make a coreai-torch 0.4.0 asset load on newer runtimes
without re-exporting it, and prove that nothing else changed.

A 0.4.0 asset is healthy except for its debug locations: MLIR `fused` locations holding each
op's PyTorch call stack, which coreai-core 1.0.0b2 and later refuse ("expected AICode versioned
location") and abort on. Only the oldest core of the catalog (1.0.0b1) can still parse it, so:

1. that core parses the asset and every op's location (and every block argument's) is replaced
   by a debuginfo location with no source, in the unit scope, keeping the op's `coreai` op id;
   the program is saved again (`oracle/workers/asset_worker.py`, op `strip`);
2. the next core (1.0.0b2) parses that and saves it once more, so the asset carries its
   `producer` stamp, and records `inventory.repair` in the creator-defined metadata;
3. then it is verified, and OUT is written only if everything holds: the repaired asset loads and
   runs on every runtime in the catalog; its weights are byte-identical to the original's (the
   per-tensor sha256 fingerprint `scan` computes, read by the same core); and on the original's
   runtime it computes bit-identical outputs from the same seeded inputs.

Anything that cannot be verified is refused (RepairError: one line, exit 2). The input is never
written to; OUT must not exist. Every step's files are kept as evidence in the result store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.scan.bundle_loads import REPAIR_KEY
from inventory.scan.bundles import check_program, read_metadata
from inventory.scan.model import BundleError
from oracle.catalog import Catalog, EnvError, cores
from oracle.envs import Env
from oracle.executors import BundleRead, Call, Resaved, Ship, WeightsRead
from oracle.infra import Progress
from oracle.load_check import Run, runs_on
from oracle.session import Session
from oracle.store import RESULT_FILE, RuntimeOutcome, building, manifest, results_root

SEED = 0


class RepairError(InventoryError):
    """The repair is refused; the message is one line naming what could not be verified."""


class RepairInconclusive(RepairError):
    """A runtime gave no lasting answer (a flaky abort): nothing is repaired or refused on a
    one-off; run again."""


def _no_flaky(outcomes: list[RuntimeOutcome], what: str) -> None:
    flaky = [o for o in outcomes if o.outcome == "flaky"]
    if flaky:
        raise RepairInconclusive(
            f"{what}: "
            + "; ".join(f"coreai-core {o.core} {o.describe()}" for o in flaky)
            + " (inconclusive: nothing repaired on a one-off abort; run repair again)"
        )


@dataclass(frozen=True)
class Locations:
    """What the reader's core rewrote: op and block-argument locations, counted by kind before
    and after, and the coreai op ids kept."""

    locations_before: dict[str, int]
    locations_after: dict[str, int]
    ops: int
    block_args: int
    op_ids_kept: int


# one asset's weights as a core reads them (the fingerprint `scan` computes)
Weights = WeightsRead


@dataclass(frozen=True)
class WeightsCheck:
    identical: bool
    original: Weights
    repaired: Weights
    read_with: str


@dataclass(frozen=True)
class OutputsCheck:
    """Every output array of every function, byte for byte, on one runtime from one seed."""

    identical: bool
    arrays: int
    differ: int
    functions: tuple[str, ...]
    why: str
    runtime: str = ""
    seed: int = SEED


@dataclass(frozen=True)
class RepairReport:
    """The answer of a repair that held: what was rewritten, and what shows nothing else
    changed (the document every format renders)."""

    source: str
    out: str
    evidence: str
    reader: str  # the core that parsed the original and rewrote its locations
    stamper: str  # the core that re-saved it (its producer stamp)
    locations: Locations
    original: tuple[RuntimeOutcome, ...]
    repaired: tuple[RuntimeOutcome, ...]
    weights: WeightsCheck
    outputs: OutputsCheck
    producer: str | None


@dataclass
class _Found:
    """What a run has found so far: kept as evidence when the repair is refused half-way (the
    store's record of a refusal), frozen into a `RepairReport` only when every check held."""

    source: str
    out: str
    evidence: str
    reader: str
    stamper: str
    locations: Locations | None = None
    original: list[RuntimeOutcome] = field(default_factory=list)
    repaired: list[RuntimeOutcome] = field(default_factory=list)
    weights: WeightsCheck | None = None
    outputs: OutputsCheck | None = None
    producer: str | None = None

    def report(self) -> RepairReport:
        # reached only after every check held, so every part is there
        assert self.locations and self.weights and self.outputs
        return RepairReport(
            self.source,
            self.out,
            self.evidence,
            self.reader,
            self.stamper,
            self.locations,
            tuple(self.original),
            tuple(self.repaired),
            self.weights,
            self.outputs,
            self.producer,
        )


# What a repair writes: the program, its hash and the metadata, as coreai-core re-saves them. A
# bundle holding anything else would lose it in the repaired copy, so it is refused, by name.
CARRIED = ("main.hash", "main.mlirb", "metadata.json")


def _dropped(source: Path) -> tuple[list[str], list[str]]:
    """The bundle's entries a repair would not carry over, and its symlinks that leave it
    (never followed)."""
    extra, outside = [], []
    top = source.resolve()
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source).as_posix()
        if path.is_symlink():
            try:
                target = path.resolve()
            except (RuntimeError, OSError):  # a loop: no target inside the bundle
                target = None
            if target is None or not target.is_relative_to(top):
                outside.append(f"{rel} -> {os.readlink(path)}")
                continue
        folder = path.is_dir() and not path.is_symlink()
        if folder and not any(path.iterdir()):
            extra.append(f"{rel}/ (an empty folder)")  # its files name a folder that has some
        elif rel not in CARRIED and not folder:
            extra.append(rel)
    return extra, outside


def _check_files(source: Path) -> None:
    extra, outside = _dropped(source)
    if outside:
        raise RepairError(
            f"{source}: {', '.join(outside)}: a symlink out of the bundle; repair follows none"
        )
    if extra:
        raise RepairError(
            f"{source}: repair writes {', '.join(CARRIED)} only and would drop "
            f"{', '.join(extra)}; move them out of the bundle (and back into "
            "the repaired one if they belong there)"
        )


def _check_paths(source: Path, out: Path) -> None:
    try:
        read_metadata(source)
        check_program(source)
    except BundleError as exc:
        raise RepairError(str(exc)) from None
    _check_files(source)
    try:
        src, dst = source.resolve(), out.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop
        raise RepairError(f"{out}: a symlink loop in the bundle's or the output's path") from None
    if dst == src or dst.is_relative_to(src) or src.is_relative_to(dst):
        raise RepairError(
            f"{out}: the output must be outside the bundle; repair never writes over its input"
        )
    if out.exists() or out.is_symlink():
        raise RepairError(
            f"{out}: already exists; repair writes a new bundle and never overwrites one"
        )
    if not out.parent.is_dir():
        raise RepairError(f"{out.parent}: no such folder for the output")
    try:  # found now, not after the whole repair has run: can the output be written there?
        Path(tempfile.mkdtemp(prefix=".inventory-write-check-", dir=out.parent)).rmdir()
    except OSError as exc:
        raise RepairError(
            f"{out.parent}: cannot write the output there ({exc.strerror or exc})"
        ) from None


def _digest(bundle: Path) -> str:
    h = hashlib.sha256()
    for name in ("metadata.json", "main.mlirb"):
        with open(bundle / name, "rb") as handle:
            while chunk := handle.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:20]


def _arrays(path: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    from safetensors import safe_open

    out = {}
    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        for key in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
            array = handle.get_tensor(key)
            out[key] = (meta.get(key, str(array.dtype)), tuple(array.shape), array.tobytes())
    return out


def compare_outputs(before: RuntimeOutcome, after: RuntimeOutcome) -> OutputsCheck:
    """Every output array of every function, byte for byte (dtype and shape included)."""
    keys = sorted(k for k in before.files if k.endswith(".outputs"))
    if not keys or keys != sorted(k for k in after.files if k.endswith(".outputs")):
        return OutputsCheck(
            False, 0, 0, tuple(keys), "the two runs did not store the same functions"
        )
    arrays = differ = 0
    for key in keys:
        a, b = _arrays(Path(before.files[key])), _arrays(Path(after.files[key]))
        if sorted(a) != sorted(b):
            return OutputsCheck(
                False, arrays, differ, tuple(keys), f"{key}: different output names"
            )
        arrays += len(a)
        differ += sum(1 for name in a if a[name] != b[name])
    return OutputsCheck(
        differ == 0 and arrays > 0,
        arrays,
        differ,
        tuple(k.removesuffix(".outputs") for k in keys),
        "" if arrays else "no output array to compare",
    )


def _weights(session: Session, env: Env, bundle: Path, out: Path) -> Weights:
    """The weights fingerprint `scan` computes, read by `env`'s coreai-core (its log in
    `out`)."""
    request = {"op": "read", "bundle": str(bundle), "out": str(out)}
    [answer] = session.calls(
        [Call("scan", env, request, ship=(Ship("bundle"),))], BundleRead.decode
    )
    if answer.weights is None:
        raise RuntimeError(
            f"coreai-core {env.core} cannot read {bundle.name}: {answer.envelope.error}"
        )
    return answer.weights


def _rewritten(
    session: Session, env: Env, op: str, asset: Path, saved: Path, **extra: Any
) -> Resaved:
    """`env`'s asset worker re-saves `asset` as `saved` (op `strip` or `restamp`), through the
    run's executor: on a cluster the asset travels to a node, and what it wrote comes back."""
    request = {"op": op, "asset": str(asset), "out": str(saved.parent), "name": saved.name}
    call = Call("asset", env, {**request, **extra}, ship=(Ship("asset"),))
    [answer] = session.calls([call], Resaved.decode)
    return answer


def repair(
    source: Path, out: Path, catalog: Catalog, progress: Progress = lambda _: None
) -> RepairReport:
    _check_paths(source, out)
    order = cores(catalog)
    if len(order) < 2:
        raise RepairError(
            "the catalog has a single coreai-core: nothing reads a 0.4.0 asset "
            "and writes a versioned one"
        )
    reader, stamper = order[0], order[1]
    root = results_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"repair-{_digest(source)}"
    report = _Found(str(source), str(out), str(final), reader, stamper)
    # The store's own temp folder: locked while this run holds it (so `cache prune` leaves a
    # live repair alone) and removed if the run dies.
    with building(final) as work:
        try:
            with Session(catalog, progress, work / "workers") as session:
                try:
                    reader_env = session.env_for_core(reader)
                    stamper_env = session.env_for_core(stamper)
                except EnvError as exc:
                    raise RepairError(str(exc)) from None
                _run(source, out, report, session, reader_env, stamper_env, order, work)
        except RepairError as exc:
            _publish(work, final, report, refused=str(exc))
            raise type(exc)(f"{exc} (evidence: {final})") from None  # inconclusive stays so
        _publish(work, final, report, refused=None)
    return report.report()


def _run(
    source: Path,
    out: Path,
    report: _Found,
    session: Session,
    reader_env: Env,
    stamper_env: Env,
    order: list[str],
    work: Path,
) -> None:
    progress = session.progress
    src = source.resolve()
    # The original, as it is: where it loads, and what it computes on the reader's runtime.
    progress(f"original on coreai-core {', '.join(order)}")
    report.original.extend(
        runs_on(
            [Run(src, c, work / f"original-{c}", c == order[0], SEED) for c in order],
            session,
            session.runs_at_once,
        )
    )
    _no_flaky(report.original, f"{source}: the original on its runtimes")
    base = report.original[0]
    if base.outcome == "not-run":
        raise RepairError(f"{source}: cannot verify a repair: {base.describe()}")
    if not base.loads:
        raise RepairError(
            f"{source}: coreai-core {base.core} cannot run it either "
            f"({base.describe()}); nothing to verify a repair against"
        )
    if all(o.loads for o in report.original):
        raise RepairError(
            f"{source}: already loads on every runtime in the catalog "
            f"(coreai-core {', '.join(order)}); nothing to repair"
        )
    progress(f"rewriting locations with coreai-core {report.reader}")
    stripped, repaired = work / "stripped.aimodel", work / "repaired.aimodel"
    answer = _rewritten(session, reader_env, "strip", src, stripped)
    if answer.stripped is None:
        raise RepairError(
            f"coreai-core {report.reader} could not rewrite the locations "
            f"({answer.envelope.stage}: {answer.envelope.error})"
        )
    counts = answer.stripped
    report.locations = Locations(
        counts.locations_before,
        counts.locations_after,
        counts.ops,
        counts.block_args,
        counts.op_ids_kept,
    )
    left = {k: v for k, v in counts.locations_after.items() if k != "debuginfo"}
    if left:
        raise RepairError(f"locations left that are not debuginfo locations: {left}")
    progress(f"re-saving with coreai-core {report.stamper}")
    note = {
        REPAIR_KEY: f"debug locations of a coreai-core {report.reader} asset "
        f"rewritten by inventory repair (from {source.name})"
    }
    answer = _rewritten(session, stamper_env, "restamp", stripped, repaired, custom=note)
    if not answer.envelope.ok:
        raise RepairError(
            f"coreai-core {report.stamper} could not read the rewritten asset "
            f"({answer.envelope.stage}: {answer.envelope.error})"
        )
    report.producer = json.loads((repaired / "metadata.json").read_text()).get("producer")
    progress(f"repaired asset on coreai-core {', '.join(order)}")
    seeded = work / f"original-{order[0]}"  # the original's inputs, on every runtime
    report.repaired.extend(
        runs_on(
            [Run(repaired, c, work / f"repaired-{c}", inputs=seeded) for c in order],
            session,
            session.runs_at_once,
        )
    )
    _no_flaky(report.repaired, "the repaired asset")
    refused = [o for o in report.repaired if not o.loads]
    if refused:
        raise RepairError(
            "the repaired asset does not run everywhere: "
            + "; ".join(f"coreai-core {o.core}: {o.describe()}" for o in refused)
        )
    progress("comparing weights and outputs")
    try:
        before = _weights(session, reader_env, src, work / "weights" / "original")
        after = _weights(session, reader_env, repaired, work / "weights" / "repaired")
    except RuntimeError as exc:
        raise RepairError(f"weights cannot be compared: {exc}") from None
    same = (before.fingerprint, before.constants, before.bytes) == (
        after.fingerprint,
        after.constants,
        after.bytes,
    )
    report.weights = WeightsCheck(same, before, after, f"coreai-core {report.reader}")
    if not same or before.unresolved_resources:
        raise RepairError(
            f"weights differ or cannot all be read: original "
            f"{before.fingerprint} ({before.constants} tensors), repaired "
            f"{after.fingerprint} ({after.constants} tensors)"
        )
    outputs = replace(
        compare_outputs(base, report.repaired[0]), runtime=f"coreai-core {base.core}", seed=SEED
    )
    report.outputs = outputs
    if not outputs.identical:
        raise RepairError(
            f"outputs on coreai-core {base.core} are not bit-identical: "
            f"{outputs.why or f'{outputs.differ} of {outputs.arrays} arrays differ'}"
        )
    # Nothing the original holds is lost (checked before the repair; what it wrote, now).
    lost = sorted(
        {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
        - {p.relative_to(repaired).as_posix() for p in repaired.rglob("*")}
    )
    if lost:
        raise RepairError(f"the repaired asset lacks {', '.join(lost)} of the original")
    # Verified: OUT appears whole or not at all.
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        shutil.copytree(repaired, staging / "bundle")
        os.rename(staging / "bundle", out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(work: Path, final: Path, report: _Found, refused: str | None) -> None:
    """Keep this run's evidence (verified or refused) under its content address."""
    shutil.rmtree(work / "workers", ignore_errors=True)
    data = json.loads(json.dumps(asdict(report), default=str).replace(str(work), str(final)))
    data["refused"] = refused
    data["files_sha256"] = manifest(work)
    (work / RESULT_FILE).write_text(json.dumps(data, indent=2))
    if final.exists():
        old = final.with_name(f".{final.name}.old.{os.getpid()}")
        final.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    work.rename(final)
    for outcome in report.original + report.repaired:
        for key, path in outcome.files.items():
            outcome.files[key] = path.replace(str(work), str(final))
