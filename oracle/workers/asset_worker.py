"""The in-environment asset script: load and run an `.aimodel` on this environment's coreai-core,
and rewrite an asset's debug locations (the in-place repair of a coreai-torch 0.4.0 asset).

Run by a converter environment's python as a long-lived subprocess, with the protocol of
`probe_worker.py` (one JSON request per stdin line, one JSON answer per protocol line; everything
else,
native writes included, goes to a per-request log). It imports coreai-core only, never torch nor
the converter, so it starts quickly: a runtime that aborts natively on an asset (coreai-core
1.0.0b2 and b3 on a 0.4.0 asset) kills this process, and the caller reports that as the outcome
and starts another for the next request.

Requests:
  {"op": "hello"}                                       -> versions of what is installed here
  {"op": "run", "asset": DIR, "out": DIR, "seed": N, "execute": bool, "inputs": DIR|null}
      load the asset as a runnable model, load every function and (with execute) run each on
      seeded inputs (or on the inputs an earlier run stored in its DIR); inputs and outputs
      are stored as safetensors in `out`, with their exact dtypes
  {"op": "strip", "asset": DIR, "out": DIR, "name": NAME}
      -> the asset re-saved as out/NAME with every location replaced by a debuginfo location
      (the versioned form coreai-core 1.0.0b2+ reads); its log is out/NAME.strip.log
  {"op": "restamp", "asset": DIR, "out": DIR, "name": NAME, "custom": {key: value}}
      -> the asset re-saved as out/NAME by this core (its `producer` stamp), metadata carried
      over, `custom` added to its creator-defined metadata; its log is out/NAME.restamp.log
  Both write only under `out`, so a caller elsewhere gets back all they wrote.
Version differences of coreai-core's Python API are handled here and nowhere else.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import json
import os
import sys
import traceback
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# The shared helpers sit beside this file; import them without the rest of the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from oracle.workers.worker_io import logged, mlir_module, one_line, serve  # noqa: E402

# Integer inputs are drawn below this bound, so token ids and indices stay in range for any
# vocabulary or table a real model holds.
INT_HIGH = 8


class CannotRun(Exception):
    """The asset loaded but this script cannot make inputs for it (e.g. a dynamic axis)."""


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for dist in ("coreai-core", "coreai-torch", "numpy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    return out


# ---- arrays: seeded inputs, stored with their exact dtypes ----------------------------------


def _numpy_dtype(name: str) -> np.dtype:
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"bool": "bool"}.get(name, name))


def _seeded(name: str, descriptor: Any, rng: np.random.Generator) -> np.ndarray:
    """An array for one input or state: normal floats, small non-negative integers, booleans."""
    import numpy as np

    shape = list(descriptor.shape)
    if any(d is None or int(d) < 0 for d in shape):
        raise CannotRun(f"{name} has a dynamic axis ({shape}); no input size to choose")
    dtype = _numpy_dtype(str(descriptor.dtype))
    if dtype.kind == "f" or str(descriptor.dtype) == "bfloat16":
        return rng.standard_normal(shape).astype(np.float32).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, INT_HIGH, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise CannotRun(f"{name} has dtype {descriptor.dtype}, for which no input is made")


def _save_arrays(arrays: dict, path: Path) -> None:
    """safetensors with each array's exact bytes: dtypes safetensors lacks (bfloat16 as numpy
    sees it) are stored as raw bytes with their dtype in the metadata."""
    import numpy as np
    from safetensors.numpy import save_file

    data, meta = {}, {}
    for key, array in arrays.items():
        array = np.ascontiguousarray(array)
        meta[key] = json.dumps([str(array.dtype), list(array.shape)])
        if array.dtype.kind in "fiub" and array.dtype.name != "bfloat16":
            data[key] = array
        else:
            data[key] = array.reshape(-1).view(np.uint8)
    save_file(data, str(path), metadata=meta)


def _load_arrays(path: Path) -> dict:
    from safetensors import safe_open

    out = {}
    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        for key in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
            array = handle.get_tensor(key)
            dtype, shape = json.loads(meta[key])
            if str(array.dtype) != dtype:
                array = array.view(_numpy_dtype(dtype)).reshape(shape)
            out[key] = array
    return out


# ---- run -------------------------------------------------------------------------------------


async def _run(asset_path: Path, out: Path, seed: int, execute: bool, stored: dict | None) -> dict:
    import numpy as np
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    stage = "load"
    try:
        asset = AIModelAsset.load(asset_path)
        async with asset.executable() as model:
            names = model.function_names  # a property in every release seen so far
            names = list(names() if callable(names) else names)
            functions = []
            for name in names:
                stage = "function"
                function = model.load_function(name)
                desc = function.desc
                entry: dict = {
                    "name": name,
                    "inputs": list(desc.input_names),
                    "states": list(desc.state_names),
                    "outputs": list(desc.output_names),
                }
                functions.append(entry)
                if not execute:
                    continue
                stage = "inputs"
                rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
                arrays = {}
                for kind, keys, get in (
                    ("input", desc.input_names, desc.input_descriptor),
                    ("state", desc.state_names, desc.state_descriptor),
                ):
                    for key in keys:
                        label = f"{kind}:{key}"
                        if stored is not None:
                            if f"{name}/{label}" not in stored:
                                raise CannotRun(f"no stored value for {name} {label}")
                            arrays[label] = stored[f"{name}/{label}"]
                        else:
                            arrays[label] = _seeded(f"{name} {kind} {key}", get(key), rng)
                feed = {
                    k.split(":", 1)[1]: NDArray(v.copy())
                    for k, v in arrays.items()
                    if k.startswith("input:")
                }
                state = {
                    k.split(":", 1)[1]: NDArray(v.copy())
                    for k, v in arrays.items()
                    if k.startswith("state:")
                }
                stage = "run"
                result = await function(feed, state) if state else await function(feed)
                outputs = {
                    f"output:{k}": np.array(result[k].numpy(), copy=True) for k in desc.output_names
                }
                # The states as the run left them are outputs too.
                outputs |= {f"state:{k}": np.array(v.numpy(), copy=True) for k, v in state.items()}
                stage = "store"
                safe = name.replace("/", "_")
                _save_arrays(
                    {f"{name}/{k}": v for k, v in arrays.items()},
                    out / f"{safe}.inputs.safetensors",
                )
                _save_arrays(
                    {f"{name}/{k}": v for k, v in outputs.items()},
                    out / f"{safe}.outputs.safetensors",
                )
                entry["inputs_file"] = str(out / f"{safe}.inputs.safetensors")
                entry["outputs_file"] = str(out / f"{safe}.outputs.safetensors")
    except CannotRun as exc:
        return {"ok": False, "stage": "inputs", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - reported as the outcome, not raised
        (out / f"{stage}.traceback.txt").write_text(traceback.format_exc())
        return {"ok": False, "stage": stage, "error": one_line(exc)}
    return {"ok": True, "functions": functions, "executed": execute}


def run(asset: Path, out: Path, seed: int, execute: bool, inputs: str | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    with logged(out / "run.log"):
        stored: dict | None = None
        if inputs:  # an earlier run's folder: feed exactly the inputs it fed
            stored = {}
            for path in sorted(Path(inputs).glob("*.inputs.safetensors")):
                stored |= _load_arrays(path)
        answer = asyncio.run(_run(asset, out, seed, execute, stored))
    answer["log"] = str(out / "run.log")
    answer["versions"] = _versions()
    return answer


# ---- strip: every location becomes a debuginfo location -------------------------------------


def _kind(location: Any) -> str:
    text = str(location)
    for prefix, kind in (
        ("#debuginfo.location", "debuginfo"),
        ("loc(fused", "fused"),
        ("loc(unknown", "unknown"),
        ("loc(callsite", "callsite"),
    ):
        if text.startswith(prefix):
            return kind
    if location.is_a_name():
        return "name"
    if location.is_a_file():
        return "file"
    return "other"


def _coreai_op_id(location: Any) -> int | None:
    """The `"coreai"("op_id":N:0)` a 0.4.0 location carries (inside a fused one or alone), so a
    repaired op keeps the id the converter's debugging tools know it by."""
    pending = [location]
    while pending:
        loc = pending.pop()
        if loc.is_a_name():
            child = loc.child_loc
            if loc.name_str == "coreai" and child.is_a_file() and child.filename == "op_id":
                return int(child.start_line)
            pending.append(child)
        elif loc.is_a_fused():
            pending.extend(reversed(loc.locations))
    return None


def strip(asset_path: Path, out: Path, log: Path) -> dict:
    with logged(log):
        from coreai._compiler._mlir_libs._coreaiIR._bindings.mlir import (
            set_block_arg_location,
            set_op_location,
        )
        from coreai._compiler.dialects.debuginfo import create_op_id_metadata, location_attr
        from coreai._compiler.ir import Location, UnitAttr, WalkResult
        from coreai.authoring import AIModelAsset

        stage = "parse"
        try:
            asset = AIModelAsset.load(asset_path)
            metadata = asset.metadata
            program = asset.program
            module = mlir_module(program)
            before: dict[str, int] = {}
            after: dict[str, int] = {}
            counts = {"ops": 0, "block_args": 0, "op_ids_kept": 0}
            stage = "rewrite"
            with module.context:
                # One shared source for every op: no file, line 0, in no subprogram (the unit
                # scope). A debuginfo location is what the versioned reader of 1.0.0b2+ takes.
                nowhere = Location.file("", 0, 0)
                unit = UnitAttr.get()

                def visit(op: Any) -> Any:
                    kind = _kind(op.location)
                    before[kind] = before.get(kind, 0) + 1
                    op_id = _coreai_op_id(op.location)
                    metadata_attrs = []
                    if op_id is not None:
                        metadata_attrs.append(
                            create_op_id_metadata(dialect_type="coreai", value=op_id)
                        )
                        counts["op_ids_kept"] += 1
                    new = location_attr(src=nowhere, scope=unit, metadata=metadata_attrs)
                    set_op_location(op, new)
                    counts["ops"] += 1
                    for region in op.regions:
                        for block in region.blocks:
                            for arg in block.arguments:
                                set_block_arg_location(arg, new)
                                counts["block_args"] += 1
                    return WalkResult.ADVANCE

                module.operation.walk(visit)

                def check(op: Any) -> Any:
                    kind = _kind(op.location)
                    after[kind] = after.get(kind, 0) + 1
                    return WalkResult.ADVANCE

                module.operation.walk(check)
            stage = "save"
            program.save_asset(out, metadata=metadata)
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            (log.parent / f"{log.stem}.traceback.txt").write_text(traceback.format_exc())
            return {"ok": False, "stage": stage, "error": one_line(exc), "log": str(log)}
    return {
        "ok": True,
        "locations_before": before,
        "locations_after": after,
        **counts,
        "versions": _versions(),
        "log": str(log),
    }


def restamp(asset_path: Path, out: Path, log: Path, custom: dict[str, str]) -> dict:
    with logged(log):
        from coreai.authoring import AIModelAsset

        stage = "parse"
        try:
            asset = AIModelAsset.load(asset_path)
            metadata = asset.metadata
            for key, value in custom.items():
                metadata.set_custom(key, value)
            program = asset.program
            stage = "save"
            program.save_asset(out, metadata=metadata)
        except Exception as exc:  # noqa: BLE001
            (log.parent / f"{log.stem}.traceback.txt").write_text(traceback.format_exc())
            return {"ok": False, "stage": stage, "error": one_line(exc), "log": str(log)}
    return {"ok": True, "versions": _versions(), "log": str(log)}


def handle(request: dict) -> dict:
    op = request.get("op")
    if op == "hello":
        return {"ok": True, "versions": _versions(), "pid": os.getpid()}
    if op == "run":
        return run(
            Path(request["asset"]),
            Path(request["out"]),
            int(request.get("seed", 0)),
            bool(request.get("execute", True)),
            request.get("inputs"),
        )
    if op == "strip":
        saved = Path(request["out"]) / str(request["name"])
        return strip(Path(request["asset"]), saved, saved.with_name(f"{saved.name}.strip.log"))
    if op == "restamp":
        saved = Path(request["out"]) / str(request["name"])
        return restamp(
            Path(request["asset"]),
            saved,
            saved.with_name(f"{saved.name}.restamp.log"),
            dict(request.get("custom", {})),
        )
    return {"ok": False, "stage": "protocol", "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    serve(handle)
