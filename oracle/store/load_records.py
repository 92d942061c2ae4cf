"""A load check's stored record (`oracle/load_check.py` makes them): its types, its key, its
JSON form and its code digest. The store reads these records itself (`cache prune` keeps or drops
them by their digest), so they live with the store and the check that runs them depends on them,
not the other way round.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from oracle.catalog.runtimes import runtime_label
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.envs.environment import Env
from oracle.infra.paths import in_store, safe_name
from oracle.store import result_store as store
from oracle.store.result_store import results_root

_ORACLE = Path(__file__).resolve().parents[1]
# The code a check depends on (relative to the oracle package): the scripts that write and load
# its asset, and the check itself.
_CODE_FILES = (
    "workers/asset_worker.py",
    "workers/asset_probe.py",
    "workers/probe_worker.py",
    "workers/worker_io.py",
    "workers/probes.py",
    "load_check.py",
    "executors/asset_checks.py",
    "store/load_records.py",
)
OUTCOMES = ("loads", "fails-to-load", "crashes", "flaky", "not-run")


@functools.cache
def code_digest() -> str:
    """Checks depend on this code as much as on the converter and the runtimes: key on it."""
    h = hashlib.sha256()
    for name in _CODE_FILES:
        h.update((_ORACLE / name).read_bytes())
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class RuntimeOutcome:
    core: str
    outcome: str  # loads | fails-to-load | crashes | flaky | not-run
    stage: str = ""  # where it stopped: load, function, run, inputs, worker, environment
    error: str = ""  # the first error line the runtime printed, or the exception
    signal: str = ""  # crashes: the signal that killed the process
    files: dict[str, str] = field(default_factory=dict)  # log, inputs, outputs

    @property
    def runtime(self) -> str:
        return runtime_label(self.core)

    @property
    def loads(self) -> bool:
        return self.outcome == "loads"

    @property
    def died(self) -> bool:
        """The runtime's process died or did not answer: a claim to confirm (`run_on`)."""
        return self.outcome == "crashes" or (
            self.outcome == "fails-to-load" and self.stage == "worker"
        )

    def describe(self) -> str:
        """One line: `crashes (SIGABRT): error: expected AICode versioned location, ...`."""
        if self.outcome == "loads":
            return "loads"
        head = f"{self.outcome} ({self.signal})" if self.signal else self.outcome
        return f"{head}: {self.error}" if self.error else head


@dataclass(frozen=True)
class LoadCheck:
    spec: ProbeSpec
    exporter: str  # the coreai-torch release that wrote the asset
    exporter_packages: dict[str, str]
    converted: bool
    convert_error: str
    outcomes: tuple[RuntimeOutcome, ...]
    evidence: str
    cached: bool = False

    def on(self, core: str) -> RuntimeOutcome | None:
        return next((o for o in self.outcomes if o.core == core), None)


def identity(env: Env, keep: tuple[str, ...]) -> dict[str, str]:
    return {k: env.packages.get(k, "?") for k in keep}


def runtime_key(runtime: Env) -> dict[str, str]:
    """What a check is keyed by of a runtime's environment: the coreai-core it pins (known
    without building it)."""
    return {"coreai-core": runtime.core}


def legacy_runtime_key(runtime: Env) -> dict[str, str]:
    """The runtime's part of the key checks were stored under before: its installed packages."""
    return identity(runtime, ("coreai-core", "numpy"))


def check_key(
    spec: ProbeSpec, exporter: Env, runtime_ids: dict[str, dict[str, str]], legacy: bool = False
) -> str:
    payload = {
        "spec": spec.to_json(),
        "exporter": identity(exporter, ("coreai-torch", "coreai-core", "torch", "numpy"))
        if legacy
        else store.key_identity(exporter),
        "runtimes": runtime_ids,
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def to_json(check: LoadCheck, root: Path) -> dict[str, Any]:
    def rel(path: str) -> str:
        p = Path(path)
        return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else path

    data = asdict(check)
    data["spec"] = check.spec.to_json()
    data["outcomes"] = [
        {**asdict(o), "files": {k: rel(v) for k, v in o.files.items()}} for o in check.outcomes
    ]
    data["evidence"] = "."
    return data


def relocated(check: LoadCheck, work: Path, final: Path) -> LoadCheck:
    """The check with its evidence files under `final` where they were under `work` (a check
    made on a cluster node travels with its paths under an anchor)."""

    def moved(value: str) -> str:
        path = Path(value)
        return str(final / path.relative_to(work)) if path.is_relative_to(work) else value

    outcomes = tuple(
        replace(o, files={k: moved(v) for k, v in o.files.items()}) for o in check.outcomes
    )
    return replace(check, outcomes=outcomes, evidence=moved(check.evidence))


def from_json(data: dict[str, Any], root: Path, cached: bool) -> LoadCheck:
    s = data["spec"]
    spec = ProbeSpec(
        s["construct"], s["params"], s["dtype"], Pipeline(**s["pipeline"]), s["values"], s["seed"]
    )
    outcomes = tuple(
        RuntimeOutcome(
            o["core"],
            o["outcome"],
            o["stage"],
            o["error"],
            o["signal"],
            {k: str(root / v) for k, v in o["files"].items()},
        )
        for o in data["outcomes"]
    )
    return LoadCheck(
        spec,
        data["exporter"],
        data["exporter_packages"],
        data["converted"],
        data["convert_error"],
        outcomes,
        str(root),
        cached,
    )


def load_stored(folder: Path) -> LoadCheck | None:
    """A stored check, or None if absent, unreadable or damaged (then it is made again)."""
    data = store.read_record(folder)
    if data is None:
        return None
    try:
        return from_json(data, folder, cached=True)
    except store.SHAPE_ERRORS:
        return None


def failed(check: LoadCheck) -> bool:
    """The check could not get as far as an outcome on every runtime (the exporter could not
    write the asset, a runtime could not be tried): recorded, so `cache prune --failures` can
    drop it."""
    return not check.converted or any(o.outcome == "not-run" for o in check.outcomes)


def check_dir(
    spec: ProbeSpec,
    exporter: Env,
    runtime_ids: dict[str, dict[str, str]],
    legacy_ids: dict[str, dict[str, str]] | None = None,
) -> Path:
    """The check's folder, named by its key; one stored under the earlier key (the installed
    packages', `legacy_ids`: known once the runtimes' environments are built) is read where it
    is while none is stored under the new one."""
    stem = f"load-{safe_name(exporter.converter)}-{safe_name(spec.dtype)}-"
    final = in_store(results_root() / f"{stem}{check_key(spec, exporter, runtime_ids)}")
    if legacy_ids is None:
        return final
    return store.legacy_or(
        final, (exporter,), lambda: stem + check_key(spec, exporter, legacy_ids, legacy=True)
    )
