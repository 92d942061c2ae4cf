"""The in-environment region-cut script: cut a differing region's aten nodes out of a whole
bundle's program as a small program of its own, with the activations that reach it.

Run by a converter environment's python as a long-lived subprocess (the protocol of
`probe_worker.py`). The whole program (`program.pt2`, saved once by `inventory verify`'s build) is
decomposed with this environment's table, as `program_worker.py` does before converting it, so
the node names a region was mapped to (its debug locations) name nodes of this graph.

A cut holds:
* the region's own nodes, and `hops` rings of their producers and consumers around them (an
  optimizer rewrite spans the ops it folds: a cut that does not reproduce the region's
  difference is cut again wider by the caller);
* every producer that depends on no user input (the parameters, buffers, lifted constants and
  whatever is computed from them only), so a constant the optimizer folds stays foldable;
* as its inputs, the activations that reach it from outside: captured from one run of the whole
  graph in fp32 (every half-precision dtype of the graph raised to fp32, the parameters too),
  then rounded to the dtype the program has there, so both releases' programs and the fp32
  reference see the very same values;
* as its outputs, every cut node whose value is used outside the cut (or the region's own
  nodes, if none is).

Requests:
  {"op": "hello"}
  {"op": "cut", "program": FILE.pt2, "pipeline": {...}, "inputs": FILE.safetensors,
   "cuts": [{"id": ID, "nodes": [aten node names]}], "hops": N, "out": DIR}
      -> per cut, DIR/<id>/: program.pt2, main.inputs.safetensors (`main/input:<name>` with
         [dtype, shape] metadata, the asset worker's layout), reference.safetensors (`out<i>`,
         fp32); and per cut what it holds and the whole program's outputs (indices) its region
         reaches. The decomposed program stays loaded for the next request on it.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram
    from torch.fx import Graph, GraphModule, Node

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle.workers.memory import peak_mb, reset_peak  # noqa: E402
from oracle.workers.probe_worker import _decomposed, _fail, _versions  # noqa: E402
from oracle.workers.worker_io import logged, one_line, serve  # noqa: E402

_HALF = ("float16", "bfloat16")


def _halves() -> tuple[torch.dtype, ...]:
    import torch

    return (torch.float16, torch.bfloat16)


def _raised(value: Any) -> Any:
    """A graph argument with every half-precision dtype raised to fp32 (the reference run)."""
    import torch

    if isinstance(value, torch.dtype):
        return torch.float32 if value in _halves() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_raised(v) for v in value)
    if isinstance(value, dict):
        return {k: _raised(v) for k, v in value.items()}
    return value


def _fp32_graph(gm: GraphModule) -> GraphModule:
    """A copy of a graph module computing in fp32 wherever it computed in half precision."""
    raised = copy.deepcopy(gm)
    for node in raised.graph.nodes:
        node.args = _raised(node.args)
        node.kwargs = _raised(node.kwargs)
    raised.recompile()
    return raised


def _up(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.dtype in _halves():
        return value.float()
    return value


def _user_inputs(ep: ExportedProgram, path: str) -> list:
    """The whole program's user inputs from the build's stored inputs, by name (in order where a
    name is missing: the decomposition keeps the placeholders' names)."""
    import numpy as np
    import torch
    from safetensors import safe_open

    stored: dict[str, object] = {}
    with safe_open(path, framework="numpy") as handle:
        meta = handle.metadata() or {}
        for key in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
            array = handle.get_tensor(key)
            dtype, shape = json.loads(meta[key])
            if str(array.dtype) != dtype:
                array = array.view(np.dtype(dtype)).reshape(shape)
            stored[key.split("/input:", 1)[1]] = torch.from_numpy(array.copy())
    names = list(ep.graph_signature.user_inputs)
    values = list(stored.values())
    return [stored.get(n, values[i] if i < len(values) else None) for i, n in enumerate(names)]


def _placeholder_values(ep: ExportedProgram, users: list) -> dict[str, Any]:
    """Every placeholder of the graph with its value: parameters, buffers, lifted constants,
    user inputs."""
    from torch.export.graph_signature import InputKind

    values: dict[str, Any] = {}
    user = iter(users)
    for spec in ep.graph_signature.input_specs:
        name = spec.arg.name
        if spec.kind == InputKind.USER_INPUT:
            values[name] = next(user)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            values[name] = (
                ep.state_dict[spec.target]
                if spec.target in ep.state_dict
                else ep.constants[spec.target]
            )
        else:
            values[name] = ep.constants[spec.target]
    return values


def _user_placeholders(ep: ExportedProgram) -> set[str]:
    from torch.export.graph_signature import InputKind

    return {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}


def _variable(graph: Graph, users: set[str]) -> set[str]:
    """The nodes whose value depends on a user input (the rest is computed from the program's
    own constants)."""
    out: set[str] = set()
    for node in graph.nodes:
        if node.op == "placeholder":
            if node.name in users:
                out.add(node.name)
        elif any(a.name in out for a in node.all_input_nodes):
            out.add(node.name)
    return out


def _is_tensor_node(node: Node) -> bool:
    import torch

    return isinstance(node.meta.get("val"), torch.Tensor)


def _select(graph: Graph, region: set[str], hops: int, variable: set[str]) -> set[str]:
    """The cut's nodes: the region, `hops` rings of producers and consumers, every constant-only
    producer, and the tuple producers and item getters that keep a cut whole."""
    import operator

    by_name = {n.name: n for n in graph.nodes}
    keep = {n for n in region if n in by_name and by_name[n].op == "call_function"}
    for _ in range(hops):
        ring: set[str] = set()
        for name in keep:
            node = by_name[name]
            ring |= {a.name for a in node.all_input_nodes if a.op == "call_function"}
            ring |= {u.name for u in node.users if u.op == "call_function"}
        keep |= ring
    changed = True
    while changed:
        changed = False
        for name in list(keep):
            node = by_name[name]
            for a in node.all_input_nodes:
                if a.op != "call_function" or a.name in keep:
                    continue
                # a constant-only producer (folded by an optimizer), or a node whose value is
                # not a tensor (a tuple an item is taken of) cannot be an input of the cut
                if a.name not in variable or not _is_tensor_node(a):
                    keep.add(a.name)
                    changed = True
            if not _is_tensor_node(node):
                for u in node.users:
                    if (
                        u.op == "call_function"
                        and u.target is operator.getitem
                        and u.name not in keep
                    ):
                        keep.add(u.name)
                        changed = True
    return keep


class _Capture:
    """One fp32 run of the whole graph, keeping only the values some cut reads from outside."""

    def __init__(self, gm: GraphModule, wanted: set[str]) -> None:
        import torch.fx

        self.values: dict[str, Any] = {}
        wanted_ = wanted

        class _Keeping(torch.fx.Interpreter):
            def run_node(inner, node: Node) -> Any:  # noqa: N805 - fx's own signature
                value = super().run_node(node)
                if node.name in wanted_:
                    self.values[node.name] = value
                return value

        self._interpreter = _Keeping(gm)

    def run(self, args: list) -> None:
        import torch

        # on one thread whatever the process has: a reduction split over threads sums in
        # another order, so the activations captured (the cut's inputs and fp32 reference,
        # and the keys of everything measured from them) would depend on the machine; on a
        # 1-CPU cluster node (one thread) they differed from a 2-core run's by 1e-3 in fp16
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                self._interpreter.run(*args)
        finally:
            torch.set_num_threads(threads)


def _cut_module(
    graph: Graph,
    keep: set[str],
    placeholders: dict[str, Any],
    captured: dict[str, Any],
    region: set[str],
) -> tuple[GraphModule, list[tuple[str, Any]], list[str]]:
    """The cut as a graph module: its inputs (the outside activations, in the dtype the program
    has there), its constants (the bundle's own), its outputs and their labels."""
    import torch
    import torch.fx

    from oracle.constructs._graph import module_path

    root = torch.nn.Module()
    new = torch.fx.Graph()
    env: dict[str, Any] = {}  # fx nodes of the cut, or constants computed outside
    inputs: list[tuple[str, Any]] = []
    consts = 0
    order = [n for n in graph.nodes if n.name in keep]

    def outside(a: Node) -> Any:
        nonlocal consts
        if a.name in env:
            return env[a.name]
        if a.op == "placeholder" and a.name not in captured:
            value = placeholders[a.name]
            attr = f"c{consts}"
            consts += 1
            if isinstance(value, torch.nn.Parameter):
                value = value.detach()
            root.register_buffer(
                attr, value.clone() if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            )
            env[a.name] = new.get_attr(attr)
            return env[a.name]
        value = captured[a.name]
        if not isinstance(value, torch.Tensor):
            env[a.name] = value  # a scalar computed outside (a static size): a constant
            return value
        want = a.meta["val"].dtype if _is_tensor_node(a) else value.dtype
        inputs.append((a.name, value.to(want)))
        env[a.name] = new.placeholder(f"in_{a.name}")
        return env[a.name]

    for node in order:
        for a in node.all_input_nodes:
            if a.name not in keep:
                outside(a)
        env[node.name] = new.node_copy(node, lambda a: env[a.name])
    outs = [n for n in order if _is_tensor_node(n) and any(u.name not in keep for u in n.users)]
    if not outs:
        outs = [n for n in order if n.name in region and _is_tensor_node(n)]
    new.output(tuple(env[n.name] for n in outs))
    gm = torch.fx.GraphModule(root, new)
    labels = [f"{n.name} ({module_path(n) or 'no module'})" for n in outs]
    return gm, inputs, labels


def _reaches(graph: Graph, region: set[str]) -> list[int]:
    """The whole program's outputs (indices) that depend on the region's nodes."""
    reached = set(region)
    for node in graph.nodes:
        if node.op == "output":
            flat = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            return [i for i, a in enumerate(flat) if getattr(a, "name", None) in reached]
        if any(a.name in reached for a in node.all_input_nodes):
            reached.add(node.name)
    return []


def _save_inputs(names: list[str], values: list, path: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    data, meta = {}, {}
    for name, value in zip(names, values, strict=True):
        array = np.ascontiguousarray(value.detach().cpu().numpy())
        key = f"main/input:{name}"
        data[key] = array
        meta[key] = json.dumps([str(array.dtype), list(array.shape)])
    save_file(data, str(path), metadata=meta)


def _write_cut(
    gm: GraphModule, inputs: list[tuple[str, Any]], labels: list[str], out: Path
) -> dict:
    """Export the cut (the program both releases convert), save its inputs and its fp32
    reference."""
    import numpy as np
    import torch
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    values = [v for _n, v in inputs]
    ep = torch.export.export(gm, tuple(v.clone() for v in values), strict=False)
    torch.export.save(ep, str(out / "program.pt2"))
    names = list(ep.graph_signature.user_inputs)
    _save_inputs(names, values, out / "main.inputs.safetensors")
    reference = _fp32_graph(gm).float()
    with torch.no_grad():
        result = reference(*[_up(v) for v in values])
    outs = result if isinstance(result, (tuple, list)) else (result,)
    # contiguous first: safetensors.numpy writes a strided array's raw buffer, so a transposed
    # output (a view) was stored in the wrong element order
    save_file(
        {
            f"out{i}": np.ascontiguousarray(
                o.detach().float().numpy() if o.is_floating_point() else o.detach().numpy()
            )
            for i, o in enumerate(outs)
        },
        str(out / "reference.safetensors"),
    )
    return {
        "inputs": [
            {
                "name": n,
                "from": src,
                "shape": list(v.shape),
                "dtype": str(v.dtype).removeprefix("torch."),
            }
            for n, (src, v) in zip(names, inputs, strict=True)
        ],
        "outputs": labels,
        "files": {
            "program": str(out / "program.pt2"),
            "inputs": str(out / "main.inputs.safetensors"),
            "reference": str(out / "reference.safetensors"),
        },
    }


_LOADED: dict[str, Any] = {}  # the last program decomposed: a wider cut reuses it


def _loaded(program: str, pipeline: dict, inputs: str) -> dict[str, Any]:
    """The decomposed whole program, its fp32 twin and its placeholders' values, kept for the
    next request on the same program (a cut that did not reproduce is cut again wider)."""
    import torch

    key = json.dumps([program, pipeline, inputs], sort_keys=True)
    if _LOADED.get("key") != key:
        _LOADED.clear()
        ep = _decomposed(torch.export.load(program), pipeline)
        placeholders = _placeholder_values(ep, _user_inputs(ep, inputs))
        _LOADED.update(
            key=key,
            ep=ep,
            fp32=_fp32_graph(ep.graph_module),
            placeholders=placeholders,
            variable=_variable(ep.graph, _user_placeholders(ep)),
        )
    return _LOADED


def cut(program: str, pipeline: dict, inputs: str, cuts: list[dict], hops: int, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    reset_peak()
    seconds: dict[str, float] = {}
    with logged(out / "cut.log"):
        start = time.perf_counter()
        try:
            loaded = _loaded(program, pipeline, inputs)
        except Exception as exc:  # noqa: BLE001 - reported as a result, not raised
            return _fail("export", exc, out)
        seconds["decompose"] = time.perf_counter() - start
        ep, placeholders, variable = loaded["ep"], loaded["placeholders"], loaded["variable"]
        graph = ep.graph
        by_name = {n.name: n for n in graph.nodes}
        plans: list[tuple[dict, set[str], set[str]]] = []
        wanted: set[str] = set()
        for c in cuts:
            region = set(c["nodes"]) & set(by_name)
            keep = _select(graph, region, hops, variable)
            plans.append((c, region, keep))
            wanted |= {
                a.name
                for k in keep
                for a in by_name[k].all_input_nodes
                if a.name not in keep and a.name in variable
            }
        start = time.perf_counter()
        try:
            capture = _Capture(loaded["fp32"], wanted)
            capture.run([_up(placeholders[n.name]) for n in graph.nodes if n.op == "placeholder"])
        except Exception as exc:  # noqa: BLE001
            return _fail("capture", exc, out)
        seconds["capture"] = time.perf_counter() - start
        start = time.perf_counter()
        answers = []
        for c, region, keep in plans:
            entry = {
                "id": c["id"],
                "hops": hops,
                "nodes": len(c["nodes"]),
                "found": len(region),
                "missing": sorted(set(c["nodes"]) - set(by_name))[:10],
                "reaches_outputs": _reaches(graph, region),
                "cut_nodes": len(keep),
            }
            try:
                if not region:
                    raise ValueError("none of the region's aten nodes is in this graph")
                module, cut_inputs, labels = _cut_module(
                    graph, keep, placeholders, capture.values, region
                )
                entry.update(ok=True, **_write_cut(module, cut_inputs, labels, out / c["id"]))
            except Exception as exc:  # noqa: BLE001 - one cut's trouble, told per cut
                entry.update(ok=False, error=one_line(exc))
            answers.append(entry)
        seconds["cut"] = time.perf_counter() - start
    return {
        "ok": True,
        "cuts": answers,
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "log": str(out / "cut.log"),
    }


def handle(request: dict) -> dict:
    op = request.get("op")
    if op == "hello":
        return {"ok": True, "versions": _versions(), "pid": os.getpid()}
    if op == "cut":
        return cut(
            request["program"],
            request.get("pipeline", {}),
            request["inputs"],
            request["cuts"],
            int(request.get("hops", 0)),
            Path(request["out"]),
        )
    return {"ok": False, "stage": "protocol", "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    serve(handle)
