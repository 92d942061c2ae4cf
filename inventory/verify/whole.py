"""The whole-bundle check's measuring steps: build the bundle module, convert it whole under
one release, compare two releases' programs at both stages and locate what differs, run one
asset on one runtime. Where each result is kept (one build, one conversion per release, one
comparison per pair, one run per asset and runtime) is `inventory.verify.parts`; the chain
of releases they make is `inventory.verify.chain`. What is derived from the stored files (the
regions, `inventory.verify.regions`; their step, stage and record) is recomputed on every
read, so only the measuring code is in the keys (`inventory.verify.parts`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.registry import Bundle
from inventory.trace.service import PROJECT_ROOT, export_steps, supervised
from inventory.verify.compared_pair import DIFFERS, ComparedPair
from inventory.verify.converted_side import ConvertedSide
from inventory.verify.forms import Form
from inventory.verify.regions import Located, Region, Side, regions
from oracle.envs import Env
from oracle.executors import AnswerError, AssetRun, Call, ProgramAnswer, Ship
from oracle.infra import Progress, WeightsError, cache_root, in_store, safe_name, settings
from oracle.session import Session
from oracle.store import result_store as store

SEED = 20261201
# A whole sortformer converts in about a minute per side; a run on the emulated fp16 CPU runtime
# can take far longer: neither may hang the command (INVENTORY_VERIFY_*_TIMEOUT, seconds, read
# and validated by oracle.infra.settings when used, so the limit stated is the one applied).
CONVERT_TIMEOUT = "INVENTORY_VERIFY_CONVERT_TIMEOUT"
RUN_TIMEOUT = "INVENTORY_VERIFY_RUN_TIMEOUT"
RECORD = "result.json"


class VerifyError(InventoryError):
    """The whole bundle could not be built; one line for the user."""


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# What torch.export's archive holds that differs each time the same program is saved: a random
# `serialization_id`, and in each node's provenance (`from_node`) the `graph_id` of the graph
# it came from, a Python object's address in the process that cut it.
_SAVED_PER_PROCESS = re.compile(rb'(graph_id\\?": )\d+')


def program_digest(path: Path) -> str:
    """A saved program's digest without what saving it again would change (its serialization
    id, the graph ids of its nodes' provenance): the same cut, made by another process or
    machine, has the same digest, so its conversions are keyed alike."""
    h = hashlib.sha256()
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith("/serialization_id"):
                continue
            h.update(name.encode())
            h.update(_SAVED_PER_PROCESS.sub(rb"\g<1>0", archive.read(name)))
    return h.hexdigest()


def target_source(form: Form) -> str:
    """The target module's own source digest: a change to the module changes the program (a
    recipe's file is digested where the form is made, `inventory.verify.forms`)."""
    if form.recipe is not None:
        return str(form.recipe["source"])
    module = form.target.partition(":")[0]
    path = PROJECT_ROOT / (module.replace(".", "/") + ".py")
    return file_digest(path)[:16] if path.is_file() else module


# ---- build --------------------------------------------------------------------------------


def build(
    bundle: Bundle,
    form: Form,
    out: Path,
    reference: bool,
    weights: Path | None,
    allow_code: bool,
    python: str = sys.executable,
    recipe_root: Path | None = None,
    site: str | None = None,
) -> dict[str, Any]:
    """Build the form's module in a subprocess (`build_worker`), with `python`: the interpreter
    with the `trace` extra (`inventory.trace.extra`) for a project target; for a recipe form,
    built from the checkout `recipe_root` by the recipe's builder, the interpreter and the
    converter site-packages (`site`) a trace of the recipe runs with
    (`inventory.trace.service.recipe_process`)."""
    options: dict[str, Any] = {
        "target": form.target,
        "build": form.build,
        "seed": SEED,
        "export": export_steps(bundle),
        "weights": str(weights) if weights else None,
        "reference": reference,
        "out": str(out),
        "allow_code": allow_code,
    }
    if form.recipe is not None:
        if recipe_root is None or site is None:
            raise VerifyError(
                f"{bundle.name}: the {form.name} module is the recipe's own: "
                "--recipe-root names the checkout it is built from"
            )
        options["recipe"] = {
            "root": str(recipe_root.resolve()),
            "builder": {**bundle.recipe["builder"], "kwargs": form.build},
            "dtype": bundle.dtype,
            "inputs": form.recipe["inputs"],
        }
        options["site"] = site
    start = time.perf_counter()
    # the trace's process rules: a supervisor ends every process the builder starts, at most
    # INVENTORY_TRACE_TIMEOUT seconds, options and result in a scratch folder of the store
    run = supervised(python, "inventory.verify.build_worker", [], options, allow_code)
    out.mkdir(parents=True, exist_ok=True)
    (out / "build.log").write_text(run.log)
    if run.result is None:
        detail = run.detail
        if run.code == 2 and weights is not None:
            raise WeightsError(f"{bundle.name}: --weights {detail}")
        if "ModuleNotFoundError" in detail and form.recipe is None:
            # the shipped bundles' upstream packages (pocket_tts, transformers) are the trace
            # extra, which `python` has: a module it lacks is one the extra does not bring
            where = "this interpreter" if python == sys.executable else python
            detail += (
                f" (the `trace` extra, installed in {where}, does not bring it: the "
                "bundle's target needs another package there)"
            )
        # the build folder is a temp folder, removed with the failure: the log is kept apart
        kept = _kept_log(bundle, out / "build.log")
        raise VerifyError(
            f"{bundle.name}: building the {form.name} module failed: {detail} (log: {kept})"
        )
    answer = run.result
    answer["wall_seconds"] = time.perf_counter() - start
    answer["form"] = form.to_json()
    return answer


def _kept_log(bundle: Bundle, log: Path) -> Path:
    logs = in_store(cache_root() / "logs")
    logs.mkdir(parents=True, exist_ok=True)
    kept = logs / f"verify-build-{safe_name(bundle.name)}-{time.strftime('%Y%m%dT%H%M%S')}.log"
    kept.write_text(log.read_text() if log.is_file() else "")
    return kept


# ---- convert ------------------------------------------------------------------------------


def pipeline_of(bundle: Bundle) -> dict[str, Any]:
    """What a whole-program or cut conversion takes of the bundle's pipeline: the table (with
    the ops the recipe keeps out of it, only when it keeps some, so every other stored part
    keeps its key) and whether optimize() runs."""
    out: dict[str, Any] = {
        "decompositions": bundle.pipeline.decompositions,
        "optimize": bundle.pipeline.optimize,
    }
    if bundle.pipeline.keep:
        out["keep"] = list(bundle.pipeline.keep)
    return out


def conversion(env: Env, program: str, bundle: Bundle, out: Path) -> Call:
    """The whole program (or a cut of it) converted under one release, in its own
    environment's worker: a call the run's executor answers (`Session.calls`)."""
    return Call(
        "program",
        env,
        {
            "op": "convert_program",
            "program": program,
            "pipeline": pipeline_of(bundle),
            "out": str(out),
        },
        ship=(Ship("program"),),
        timeout=settings.seconds(CONVERT_TIMEOUT),
    )


def side(env: Env, answer: ProgramAnswer) -> dict[str, Any]:
    """A conversion's answer as a side: which converter and packages made it, and what it cost.
    It keeps the worker's own form of the answer (`ProgramAnswer.wire`), as stored before."""
    return {
        **answer.wire,
        "converter": env.converter,
        "packages": store.env_identity(env),
        "wall_seconds": answer.envelope.wall_seconds or 0.0,
    }


# ---- compare ------------------------------------------------------------------------------


def _side(converted: ConvertedSide, normalised: str, located: str) -> Side:
    text = Path(converted.files[located]).read_text() if converted.files.get(located) else ""
    nodes = json.loads(Path(converted.files["nodes"]).read_text())
    return Side(Path(normalised).read_text().splitlines(), Located(text), nodes)


def differing(
    pair: ComparedPair, old: ConvertedSide, new: ConvertedSide, stage: str
) -> list[Region]:
    """The regions in which a pair's programs of one stage differ, from its stored files."""
    compared_ = pair.stage(stage)
    if compared_.identity != DIFFERS:
        return []
    assert compared_.normalised is not None  # a stage compared keeps both texts (from_json)
    located = "located" if stage == "shipped" else "emitted_located"
    return regions(
        _side(old, compared_.normalised["old"], located),
        _side(new, compared_.normalised["new"], located),
    )


# ---- run ------------------------------------------------------------------------------------


def run(
    session: Session,
    env: Env,
    asset: str,
    build_dir: Path,
    out: Path,
    progress: Progress,
    label: str,
) -> dict[str, Any]:
    """One asset run on one runtime, on the build's seeded inputs. A run whose process dies or
    does not answer is tried again in a fresh process: a death that repeats is the runtime's
    answer (stored, as a refusal); one that does not, or an abort after the outputs were
    written, is `flaky` (stage), never stored, and the check inconclusive."""
    first = _run_once(session, env, asset, build_dir, out, progress, label)
    if first.get("ok") or first.get("stage") != "worker":
        return first
    progress(f"confirming in a fresh process: {label} on {env.runtime} ({first['error']})")
    second = _run_once(session, env, asset, build_dir, out / "confirm", progress, label)
    # a death after the runtime wrote its outputs: it ran, whatever ended it
    wrote = any(
        not a.get("ok") and any(o.glob("*.outputs.safetensors"))
        for o, a in ((out, first), (out / "confirm", second))
    )
    attempts = [first["error"], second.get("error") or "ran"]
    if (
        not second.get("ok")
        and second.get("stage") == "worker"
        and not wrote
        and _death(first) == _death(second)
    ):
        return {**first, "attempts": attempts}
    why = (
        "after writing its outputs"
        if wrote and not second.get("ok")
        else f"then {'ran' if second.get('ok') else second.get('error')} in a fresh process"
    )
    return {
        "ok": False,
        "runtime": env.runtime,
        "stage": "flaky",
        "error": f"{first['error']} on the first attempt, {why}: no lasting answer",
        "attempts": attempts,
        "seconds": first["seconds"] + second["seconds"],
    }


def _death(record: dict[str, Any]) -> str:
    """How a worker ended ("died of SIGABRT", "did not answer within"), without the details
    that differ between attempts (its log's path)."""
    error = str(record.get("error", ""))
    return error.split(" (log:")[0]


def _run_once(
    session: Session,
    env: Env,
    asset: str,
    build_dir: Path,
    out: Path,
    progress: Progress,
    label: str,
) -> dict[str, Any]:
    limit = settings.seconds(RUN_TIMEOUT)
    progress(f"running {label} on {env.runtime} (timeout {limit:g} s)")
    start = time.perf_counter()
    [answer] = session.calls(
        [
            Call(
                "asset",
                env,
                {
                    "op": "run",
                    "asset": asset,
                    "out": str(out),
                    "seed": SEED,
                    "execute": True,
                    "inputs": str(build_dir),
                },
                # the run reads the folder's seeded inputs, never its program
                ship=(Ship("asset"), Ship("inputs", "*.inputs.safetensors")),
                timeout=limit,
            )
        ],
        AssetRun.decode,
    )
    seconds = time.perf_counter() - start
    if not answer.envelope.ok:
        return {
            "ok": False,
            "runtime": env.runtime,
            "stage": answer.envelope.stage,
            "error": answer.envelope.error,
            "seconds": seconds,
        }
    if not answer.functions:
        raise AnswerError(f"{AssetRun.WHAT}: {asset} ran no function")
    function = answer.functions[0]
    return {
        "ok": True,
        "runtime": env.runtime,
        "outputs_file": function.outputs_file,
        "outputs": list(function.outputs),
        "seconds": seconds,
    }
