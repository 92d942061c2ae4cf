"""The in-environment worker: the only code that imports coreai-torch and coreai-core.

Run by a converter environment's python as a long-lived subprocess. It reads one JSON request
per line on stdin and answers one JSON line on the protocol stream (the original stdout). Every
other write, including what the converter and the runtime print from native code, goes to a
per-request log file, so nothing can corrupt the protocol.

Requests:
  {"op": "hello"}                                   -> versions of what is installed here
  {"op": "convert", "spec": {...}, "out": DIR}      -> aten.txt, emitted.mlir, shipped.mlir,
                                                       model.aimodel, convert.log in DIR
  {"op": "measure", "spec": {...}, "assets": {side: path}, "out": DIR}
                                                    -> inputs/reference/<side>.safetensors
  {"op": "pipeline", "spec": {...}, "steps": {...}, "out": DIR}
                                                    -> the probe exported and converted as
                                                       convert does and as a recipe's export
                                                       steps do; which stages are identical
Version differences of the converter API are handled here and nowhere else.
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch.export import ExportedProgram

    from oracle.workers.probes import Probe

# The probe library sits beside this file; import it without the rest of the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle.workers.worker_io import logged, one_line, serve  # noqa: E402


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for dist in ("coreai-torch", "coreai-core", "torch", "numpy", "safetensors"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    return out


def _fail(stage: str, exc: BaseException, out: Path) -> dict:
    (out / f"{stage}.traceback.txt").write_text(traceback.format_exc())
    return {
        "ok": False,
        "stage": stage,
        "error": one_line(exc),
        "traceback": str(out / f"{stage}.traceback.txt"),
    }


def _build(spec: dict) -> Probe:
    """A probe from the library, or the asset probe (nested modules, for load checks)."""
    from oracle.workers import asset_probe, probes

    if spec["construct"] == asset_probe.CONSTRUCT:
        return asset_probe.build(spec)
    return probes.build(spec)


def convert(spec: dict, out: Path) -> dict:
    import torch

    from oracle.workers import probes

    out.mkdir(parents=True, exist_ok=True)
    with logged(out / "convert.log"):
        from coreai_torch import TorchConverter

        probe = _build(spec)
        digest = probes.digest(probe.module, probe.inputs)
        pipeline = spec.get("pipeline", {})
        try:
            args = tuple(probe.inputs.values())
            ep = torch.export.export(probe.module, args, dynamic_shapes=probe.dynamic_shapes())
            ep = _decomposed(ep, pipeline)
            (out / "aten.txt").write_text(str(ep.graph))
        except Exception as exc:  # noqa: BLE001 - reported as a result, not raised
            return _fail("export", exc, out)
        try:
            prog = TorchConverter().add_exported_program(ep).to_coreai()
            emitted = str(prog)
        except Exception as exc:  # noqa: BLE001
            return _fail("convert", exc, out)
        (out / "emitted.mlir").write_text(emitted)
        # 0.4.3's to_coreai() returns the already-optimized program and has no optimize().
        prebuilt_optimized = not hasattr(prog, "optimize")
        try:
            if pipeline.get("optimize", True) and not prebuilt_optimized:
                result = prog.optimize()
                prog = result if result is not None else prog
            shipped = str(prog)
        except Exception as exc:  # noqa: BLE001
            return _fail("optimize", exc, out)
        (out / "shipped.mlir").write_text(shipped)
        asset = out / "model.aimodel"
        shutil.rmtree(asset, ignore_errors=True)
        try:
            prog.save_asset(asset)
        except Exception as exc:  # noqa: BLE001
            return _fail("save", exc, out)
    return {
        "ok": True,
        "digest": digest,
        "emitted_is_optimized": prebuilt_optimized,
        "files": {
            "aten": str(out / "aten.txt"),
            "emitted": str(out / "emitted.mlir"),
            "shipped": str(out / "shipped.mlir"),
            "asset": str(asset),
            "log": str(out / "convert.log"),
        },
    }


async def _run_asset(path: str, inputs: dict) -> dict:
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    asset = AIModelAsset.load(Path(path))
    async with asset.executable() as model:
        function = model.load_function("main")
        names = list(function.desc.input_names)
        feed = {
            name: NDArray(inputs[key].contiguous()) for name, key in zip(names, inputs, strict=True)
        }
        result = await function(feed)
        # The runtime's result dict is not in graph order; the function's descriptor is.
        order = list(function.desc.output_names)
        return {name: result[name].numpy().copy() for name in order}


def _storable(array: np.ndarray) -> np.ndarray:
    """safetensors stores numpy's own dtypes; bfloat16 (ml_dtypes) is widened losslessly."""
    import numpy as np

    if array.dtype.name == "bfloat16":
        return np.ascontiguousarray(array.astype(np.float32))
    return np.ascontiguousarray(array)


def measure(spec: dict, assets: dict[str, str], out: Path) -> dict:
    import torch
    from safetensors.numpy import save_file
    from safetensors.torch import save_file as save_torch

    from oracle.workers import probes

    out.mkdir(parents=True, exist_ok=True)
    with logged(out / "measure.log"):
        probe = _build(spec)
        save_torch(
            {k: v.contiguous() for k, v in probe.inputs.items()}, str(out / "inputs.safetensors")
        )
        try:
            with torch.no_grad():
                ref = probe.reference_module(*probe.reference_inputs.values())
        except Exception as exc:  # noqa: BLE001
            # torch itself refuses the module (e.g. a transposed conv's output_padding not
            # below its stride, which torch.export still exports): no program can be checked
            failed = _fail("reference", exc, out)
            failed["error"] = f"torch cannot run the probe in fp32: {failed['error']}"
            return failed
        refs = ref if isinstance(ref, tuple | list) else (ref,)
        reference = {
            f"out{i}": _storable(
                r.detach().float().numpy() if r.is_floating_point() else r.detach().numpy()
            )
            for i, r in enumerate(refs)
        }
        save_file(reference, str(out / "reference.safetensors"))
        sides: dict[str, dict] = {}
        for side, path in assets.items():
            try:
                result = asyncio.run(_run_asset(path, probe.inputs))
            except Exception as exc:  # noqa: BLE001
                sides[side] = _fail(f"run-{side}", exc, out)
                continue
            # In graph order (the descriptor's): name them positionally so sides line up with
            # the reference, whose outputs are the module's in the same order.
            arrays = {f"out{i}": _storable(v) for i, v in enumerate(result.values())}
            save_file(arrays, str(out / f"{side}.safetensors"))
            sides[side] = {
                "ok": True,
                "outputs": str(out / f"{side}.safetensors"),
                "names": list(result),
            }
    return {
        "ok": True,
        "digest": probes.digest(probe.module, probe.inputs),
        "inputs": str(out / "inputs.safetensors"),
        "reference": str(out / "reference.safetensors"),
        "sides": sides,
        "log": str(out / "measure.log"),
    }


def _decomposed(ep: ExportedProgram, pipeline: dict) -> ExportedProgram:
    """The exported program decomposed with the pipeline's table: coreai-torch's own or torch's
    default, minus the overloads the pipeline keeps whole (`keep`), as a user's export or the
    converter's own tests (their `remove_decomps`) do."""
    import coreai_torch
    import torch

    decomp = pipeline.get("decompositions", "coreai")
    if decomp == "none":
        return ep
    table = (
        coreai_torch.get_decomp_table()
        if decomp == "coreai"
        else torch.export.default_decompositions()
    )
    # iterated only when something is kept: the table is otherwise passed on untouched
    keep = set(pipeline.get("keep", ()))
    if keep:
        for op in [op for op in table if str(op) in keep]:
            table.pop(op)
    return ep.run_decompositions(table)


def _programs(prog: Any) -> tuple[str, str]:
    emitted = str(prog)
    if hasattr(prog, "optimize"):
        result = prog.optimize()
        prog = result if result is not None else prog
    return emitted, str(prog)


def _takes_names(module: torch.nn.Module) -> bool:
    """Whether the module's forward can take its inputs by name (the recipe's keyword
    passing); one that takes `*inputs` cannot."""
    import inspect

    return not any(
        p.kind is inspect.Parameter.VAR_POSITIONAL
        for p in inspect.signature(module.forward).parameters.values()
    )


def pipeline(spec: dict, steps: dict, out: Path) -> dict:
    """Does a recipe's export pipeline change what the converter sees of a probe? The probe is
    exported as `convert` does (positional inputs, grad on) and as the recipe's steps do
    (`steps`: keyword inputs; grad "no_grad"; autocast DTYPE; api "add_pytorch_module" without
    externalisation, or "add_exported_program"), then both are converted and optimized. Counts
    the auto-functionalized nodes coreai-models' remove_functionalization would rewrite."""
    import contextlib

    import torch
    from coreai_torch import TorchConverter
    from torch._higher_order_ops.auto_functionalize import (
        AutoFunctionalized,
        AutoFunctionalizedV2,
    )

    from oracle.compare.normalisation import compare_texts
    from oracle.workers import probes

    out.mkdir(parents=True, exist_ok=True)
    with logged(out / "pipeline.log"):
        probe = probes.build(spec)
        pipe = spec.get("pipeline", {})
        dyn = probe.dynamic_shapes()
        ep_a = _decomposed(
            torch.export.export(probe.module, tuple(probe.inputs.values()), dynamic_shapes=dyn),
            pipe,
        )

        def recipe_export(module: torch.nn.Module) -> ExportedProgram:
            with contextlib.ExitStack() as stack:
                if steps.get("grad") == "no_grad":
                    stack.enter_context(torch.no_grad())
                if steps.get("autocast"):
                    stack.enter_context(
                        torch.autocast("cpu", dtype=getattr(torch, steps["autocast"]))
                    )
                if _takes_names(module):
                    ep = torch.export.export(
                        module, args=(), kwargs=dict(probe.inputs), dynamic_shapes=dyn
                    )
                else:  # a forward of *inputs (a traced cat of its own N inputs) has no names
                    ep = torch.export.export(
                        module, tuple(probe.inputs.values()), dynamic_shapes=dyn
                    )
            return _decomposed(ep, pipe)

        ep_b = recipe_export(probe.module)
        functionalized = sum(
            isinstance(n.target, AutoFunctionalized | AutoFunctionalizedV2)
            for n in ep_b.graph.nodes
        )
        # read before converting: the converter rewrites an exported program it is given in
        # place (0.4.1 drops the `_assert_tensor_metadata` of mimi's int mask cast to bool), so
        # a graph read afterwards is the converter's, not the export's; only the side handed
        # over as a program is rewritten (`add_pytorch_module` exports its own)
        aten_a, aten_b = str(ep_a.graph), str(ep_b.graph)
        (out / "aten.worker.txt").write_text(aten_a)
        (out / "aten.recipe.txt").write_text(aten_b)
        emitted_a, shipped_a = _programs(TorchConverter().add_exported_program(ep_a).to_coreai())
        converter = TorchConverter()
        if steps.get("api") == "add_pytorch_module":
            converter.add_pytorch_module(
                probe.module, export_fn=recipe_export, externalize_modules=None
            )
        else:
            converter.add_exported_program(ep_b)
        emitted_b, shipped_b = _programs(converter.to_coreai())
        for name, text in (
            ("emitted.worker", emitted_a),
            ("emitted.recipe", emitted_b),
            ("shipped.worker", shipped_a),
            ("shipped.recipe", shipped_b),
        ):
            (out / f"{name}.mlir").write_text(text)
    return {
        "ok": True,
        "aten_identical": aten_a == aten_b,
        "emitted_identical": compare_texts(emitted_a, emitted_b, "worker", "recipe").identical,
        "shipped_identical": compare_texts(shipped_a, shipped_b, "worker", "recipe").identical,
        "auto_functionalized": functionalized,
        "out": str(out),
    }


def handle(request: dict) -> dict:
    op = request.get("op")
    if op == "hello":
        # where its temp files go now (`worker_io.place`): a kept worker moves with the store
        return {
            "ok": True,
            "versions": _versions(),
            "pid": os.getpid(),
            "tmp": tempfile.gettempdir(),
        }
    if op == "convert":
        return convert(request["spec"], Path(request["out"]))
    if op == "measure":
        return measure(request["spec"], request["assets"], Path(request["out"]))
    if op == "pipeline":
        out = Path(request["out"])
        try:
            return pipeline(request["spec"], request.get("steps", {}), out)
        except Exception as exc:  # noqa: BLE001 - reported as a result, not raised
            out.mkdir(parents=True, exist_ok=True)
            return _fail("pipeline", exc, out)
    return {"ok": False, "stage": "protocol", "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    serve(handle)
