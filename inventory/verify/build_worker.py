"""Build one bundle module whole, with values, and save what both converters will read.

Run as `python -m inventory.verify.build_worker FOLDER` by the project's python (torch and the
targets' upstream packages), outside every converter environment, under the trace's process rules
(`inventory.trace.service.supervised`: the builder's processes supervised, ended past
INVENTORY_TRACE_TIMEOUT; options and result in FOLDER). FOLDER/options.json:
`target` (module:function), `build` (its keyword arguments; device is the CPU), `seed`,
`export` (the recipe's steps around torch.export: grad, autocast), `weights` (a safetensors
checkpoint or null), `reference` (also run the torch fp32 reference), `out`, `allow_code`.
A recipe-traced bundle built by its own builder (`verify --recipe-root`) has `recipe` instead
of a target (`root`, `builder` with the form's kwargs, `dtype`, `inputs`: the form's inputs,
which replace the builder's) and `site` (a converter's site-packages, appended to sys.path as
the trace does, for a recipe that imports the converter), and runs with the python a trace of
the recipe runs with (`[bundles.X.recipe.environment]`): the trace's process and trust rules.
A module the builder makes on the meta device gets its values from each submodule's
`reset_parameters()` (`inventory.trace.recipes.materialise`) before the values below.

Values: the target is built under the seed, then given trained-looking values: linear and conv
weights of a scale that keeps activations O(1), and in every norm layer a batch norm's
running_var log-normal around 0.5 and its running_mean spread, gammas around 1, betas around 0,
because freshly initialised statistics (mean 0, var 1) hide what a lowering does to them.
With `weights`, every checkpoint tensor whose name and shape match a state entry replaces it.
Inputs: seeded normal values for floating inputs, except an input whose example is all ones
(a validity mask), which is kept; integer and boolean inputs keep their examples.

Writes to `out`: program.pt2 (`torch.export.save`, before any decomposition: each converter
decomposes with its own table), main.inputs.safetensors (in the asset worker's stored-inputs
layout: `main/input:<name>` with [dtype, shape] metadata), with `reference`:
reference.safetensors (`out<i>`, fp32, in output order). Writes one JSON document to
FOLDER/result.json; a checkpoint that matches nothing exits 2, any other failure 1, its line
last on stderr.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from oracle.workers import peak_mb


def _trained_looking(module: Any, generator: Any) -> int:
    """Values as training leaves them; returns how many layers were set. Linear and conv
    weights keep their activations' scale (std 1/sqrt(fan-in)): the default initialisation
    shrinks them layer by layer, down to fp16 subnormals in a deep fp16 stack, which no trained
    model has. Norm layers get spread statistics and affine values."""
    import math

    import torch
    from torch import nn

    norms = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)
    weighted = (nn.Linear, nn.modules.conv._ConvNd)
    done = 0
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, weighted) and getattr(layer, "weight", None) is not None:
                w = layer.weight
                transposed = isinstance(layer, nn.modules.conv._ConvTransposeNd)
                fan_in = (
                    w.shape[1] * math.prod(w.shape[2:]) if transposed else math.prod(w.shape[1:])
                )
                w.copy_(
                    (torch.randn(w.shape, generator=generator) / math.sqrt(max(fan_in, 1))).to(
                        w.dtype
                    )
                )
                b = layer.bias
                if b is not None:
                    b.copy_((0.02 * torch.randn(b.shape, generator=generator)).to(b.dtype))
                done += 1
                continue
            if not isinstance(layer, norms):
                continue
            running_var = getattr(layer, "running_var", None)  # batch norms only
            running_mean = getattr(layer, "running_mean", None)
            if running_var is not None and running_mean is not None:
                n = running_var.numel()
                var = torch.exp(torch.randn(n, generator=generator) - 0.7).clamp(1e-3, 50.0)
                running_var.copy_(var.to(running_var.dtype))
                running_mean.copy_(
                    (torch.randn(n, generator=generator) * 0.5).to(running_mean.dtype)
                )
            for name, scale, centre in (("weight", 0.2, 1.0), ("bias", 0.1, 0.0)):
                tensor = getattr(layer, name, None)
                if tensor is not None:
                    tensor.copy_(
                        (centre + scale * torch.randn(tensor.shape, generator=generator)).to(
                            tensor.dtype
                        )
                    )
            done += 1
    return done


class WeightsMismatch(InventoryError):
    """The checkpoint cannot be read or holds nothing the module takes (exit 2: bad input)."""


def _load_weights(module: Any, path: str) -> dict[str, Any]:
    from safetensors import safe_open

    state = module.state_dict()
    loaded, skipped = 0, 0
    try:
        handle_cm = safe_open(path, framework="pt")
    except Exception as exc:  # noqa: BLE001 - safetensors raises several kinds
        raise WeightsMismatch(f"{path}: not a readable safetensors file ({exc})") from None
    with handle_cm as handle:
        for name in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
            if name not in state:
                skipped += 1
                continue
            tensor = handle.get_tensor(name)
            if tuple(tensor.shape) != tuple(state[name].shape):
                skipped += 1
                continue
            _refuse_untrained(path, name, tensor)
            state[name].copy_(tensor.to(state[name].dtype))
            loaded += 1
    if not loaded:
        raise WeightsMismatch(
            f"{path}: no tensor matches the module's state by name and shape "
            f"({len(state)} entries, e.g. {next(iter(state), '?')})"
        )
    return {"file": path, "loaded": loaded, "state_entries": len(state), "skipped": skipped}


def _refuse_untrained(path: str, name: str, tensor: Any) -> None:
    """No checkpoint a model was trained into holds NaN or inf, or a negative variance: such a
    file would give NaN outputs on every side and in the reference, which compare as
    "bit-identical". Refused in one line (as `affected --weights` refuses them)."""
    import torch

    if tensor.is_floating_point():
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            raise WeightsMismatch(
                f"{path}: {name} holds {bad} NaN/inf value(s): not a trained "
                "checkpoint, nothing to measure"
            )
        if name.endswith("running_var") and bool((tensor < 0).any()):
            raise WeightsMismatch(
                f"{path}: {name} holds a negative variance: not a trained checkpoint"
            )


def _seeded_inputs(values: list[Any], generator: Any) -> tuple[list[Any], list[str]]:
    import torch

    out, how = [], []
    for value in values:
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            out.append(value)
            how.append("example")
        elif value.numel() and bool((value == 1).all()):
            out.append(value)
            how.append("example (all ones: a mask)")
        else:
            out.append(torch.randn(value.shape, generator=generator).to(value.dtype))
            how.append("seeded normal")
    return out, how


def _save_inputs(names: list[str], values: list[Any], path: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    data, meta = {}, {}
    for name, value in zip(names, values, strict=True):
        array = np.ascontiguousarray(value.detach().cpu().numpy())
        key = f"main/input:{name}"
        data[key] = array
        meta[key] = json.dumps([str(array.dtype), list(array.shape)])
    save_file(data, str(path), metadata=meta)


def _reference(module: Any, args: list[Any], kwargs: dict[str, Any], path: Path) -> int:
    import numpy as np
    import torch
    from safetensors.numpy import save_file

    def fp32(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.clone().float() if v.is_floating_point() else v.clone()
        return v

    ref = copy.deepcopy(module).float()
    with torch.no_grad():
        result = ref(*[fp32(a) for a in args], **{k: fp32(v) for k, v in kwargs.items()})
    outs = result if isinstance(result, tuple | list) else (result,)
    # contiguous first: safetensors.numpy writes a strided array's raw buffer, so a transposed
    # output (a view) was stored in the wrong element order
    save_file(
        {
            f"out{i}": np.ascontiguousarray(
                o.detach().float().numpy() if o.is_floating_point() else o.detach().numpy()
            )
            for i, o in enumerate(outs)
        },
        str(path),
    )
    return len(outs)


def _built(options: dict[str, Any], allow_code: bool) -> Any:
    """The target the options name, built on the CPU: a project target with `build` keyword
    arguments, or the recipe's own module by its builder (`recipe`), the form's inputs in
    place of the builder's."""
    recipe = options.get("recipe")
    if not recipe:
        mod_name, _, fn_name = options["target"].partition(":")
        return getattr(importlib.import_module(mod_name), fn_name or "build")(
            **options.get("build", {}), device="cpu"
        )
    from inventory.trace import recipes

    if options.get("site"):
        sys.path.append(options["site"])
    with recipes.with_values():
        target = recipes.target(recipe, allow_code)
    stated = recipes.example_inputs(recipes.Builder(call="-", inputs=recipe.get("inputs", {})))
    target.kwargs = {**target.kwargs, **stated}
    return target


def main(argv: list[str]) -> int:
    from inventory.trace.trace_worker import OPTIONS, RESULT, supervise

    folder = Path(argv[0])
    options = json.loads((folder / OPTIONS).read_text())
    return supervise(lambda: _job(options, folder / RESULT), options.get("timeout"))


def _job(options: dict[str, Any], result: Path) -> int:
    """The build, in the supervised child: 0 with its result written, else one line."""
    os.dup2(2, 1)  # whatever the models print goes to the log, never into the result
    try:
        return _build(options, result)
    except WeightsMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line for the caller, who reports it
        from inventory.trace.recipes import RecipeError
        from inventory.trace.trust import UntrustedCode

        lines = str(exc).strip().splitlines()
        # a recipe's own words (a builder that breaks the contract, code the registry may not
        # run) are the line; anything else is named by its type
        kind = "" if isinstance(exc, RecipeError | UntrustedCode) else f"{type(exc).__name__}: "
        print(f"error: {kind}{lines[0] if lines else ''}", file=sys.stderr)
        return 1


def _build(options: dict[str, Any], result: Path) -> int:
    import torch

    from inventory.trace import trust
    from inventory.trace.trace_worker import export_context

    allow_code = bool(options.get("allow_code"))
    if not options.get("recipe"):
        trust.check_target(options["target"], "verify target", allow_code)
    out = Path(options["out"])
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    torch.manual_seed(int(options["seed"]))
    generator = torch.Generator().manual_seed(int(options["seed"]))
    target = _built(options, allow_code)
    module = target.module.eval()
    norms = _trained_looking(module, generator)
    weights = _load_weights(module, options["weights"]) if options.get("weights") else None
    params = sum(p.numel() for p in module.parameters())
    nonfinite = sum(
        int((~torch.isfinite(t)).sum())
        for t in module.state_dict().values()
        if t.is_floating_point()
    )
    seconds["build"] = time.perf_counter() - start
    names_kw = list(target.kwargs)
    values, how = _seeded_inputs(list(target.args) + list(target.kwargs.values()), generator)
    args = values[: len(target.args)]
    kwargs = dict(zip(names_kw, values[len(target.args) :], strict=True))
    start = time.perf_counter()
    # Exported on copies: a module that writes its state inputs in place must not change the
    # inputs the runtime and the reference are fed.
    with export_context(options.get("export", {})):
        ep = torch.export.export(
            module,
            tuple(a.clone() for a in args),
            kwargs={k: v.clone() for k, v in kwargs.items()},
            strict=False,
        )
    torch.export.save(ep, str(out / "program.pt2"))
    names = [
        s.arg.name
        for s in ep.graph_signature.input_specs
        if s.kind == torch.export.graph_signature.InputKind.USER_INPUT
    ]
    seconds["export"] = time.perf_counter() - start
    # positional inputs by place, keyword inputs by name: in the exported program's order
    by_name = {**dict(zip(names, args, strict=False)), **kwargs}
    how_by_name = dict(zip(list(names[: len(args)]) + names_kw, how, strict=True))
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"the exported program's inputs {missing} match no example input")
    values = [by_name[n] for n in names]
    how = [how_by_name[n] for n in names]
    _save_inputs(names, values, out / "main.inputs.safetensors")
    outputs = None
    if options.get("reference"):
        start = time.perf_counter()
        outputs = _reference(module, args, kwargs, out / "reference.safetensors")
        seconds["reference"] = time.perf_counter() - start
    tmp = result.with_suffix(".tmp")
    with tmp.open("w") as protocol:
        json.dump(
            {
                "ok": True,
                "params": params,
                "norms_set": norms,
                "nonfinite_state": nonfinite,
                "dtype": target.dtype,
                "inputs": [
                    {
                        "name": n,
                        "values": h,
                        "shape": list(v.shape),
                        "dtype": str(v.dtype).removeprefix("torch."),
                    }
                    for n, h, v in zip(names, how, values, strict=True)
                ],
                "outputs": outputs,
                "weights": weights,
                "seconds": seconds,
                "peak_mb": peak_mb(),
                "torch": torch.__version__,
                "files": {
                    "program": str(out / "program.pt2"),
                    "inputs": str(out / "main.inputs.safetensors"),
                    **({"reference": str(out / "reference.safetensors")} if outputs else {}),
                },
            },
            protocol,
        )
    tmp.replace(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
