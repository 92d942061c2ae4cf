"""The in-environment bundle reader: parses a shipped `.aimodel` with coreai-core's own bindings.

Run by a converter environment's python as a long-lived subprocess, with the protocol of
`probe_worker.py`: one JSON request per line on stdin, one JSON answer per line on the protocol
stream
(the original stdout); every other write, including what coreai-core prints from native code, goes
to a per-request log file.

A bundle is data: this reads `metadata.json` and `main.mlirb` through coreai-core (the same parser
the runtime uses) and walks the resulting IR. It never runs the program, never compiles it, never
runs a pass on it and never imports anything from the bundle folder. It imports neither torch nor
the converter. A bundle this core cannot parse may abort the process natively (coreai-core 1.0.0b2
and b3 abort on a 1.0.0b1 asset, every core aborts on truncated bytecode); the caller contains
that and tries another core.

Requests:
  {"op": "hello"}                           -> versions of what is installed here
  {"op": "read", "bundle": DIR, "out": DIR} -> metadata, graphs, weights fingerprint; what the
      core printed is appended to out/read.log (a traceback beside it)
Version differences of coreai-core's Python API are handled here and nowhere else.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

_CALLEE = re.compile(r'@("(?:[^"\\]|\\.)*"|[\w$.\-]+)')
_COMPOSITE = re.compile(r'composite_declaration<"([^"]+)"')
_RESOURCE = re.compile(r"dense_resource<([^>]+)>")
_RESOURCE_KEY = re.compile(r'([\w$.\-]+|"(?:[^"\\]|\\.)*")\s*:\s*"0x$')
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")

# The shared helpers sit beside this file; import them without the rest of the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from oracle.workers.worker_io import logged, mlir_module, one_line, serve  # noqa: E402


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for dist in ("coreai-core", "coreai-torch"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = "absent"
    return out


# ---- IR helpers --------------------------------------------------------------------------------
# `ir` is coreai's MLIR module and the values are its bindings' objects: no types outside the
# converter environment, so they are Any here.


def _attr(op: Any, name: str) -> Any:
    attrs = op.attributes
    return attrs[name] if name in attrs else None  # noqa: SIM401 - the map has no get()


def _tensor(ir: Any, type_: Any, name: str | None) -> dict:
    """Name, shape (`?` for a dynamic axis) and element type of one value type."""
    out: dict = {"name": name, "type": str(type_)}
    try:
        shaped = ir.ShapedType(type_)
    except Exception:  # noqa: BLE001 - not a shaped type (a token, a state)
        out.update(shape=None, dtype=str(type_), dynamic=False)
        return out
    if not shaped.has_rank:
        out.update(shape=None, dtype=str(shaped.element_type), dynamic=True)
        return out
    shape = [
        ("?" if shaped.is_dynamic_dim(i) else int(shaped.get_dim_size(i)))
        for i in range(shaped.rank)
    ]
    out.update(shape=shape, dtype=str(shaped.element_type), dynamic="?" in shape)
    return out


def _io_names(attr: Any) -> list[str | None]:
    names: list[str | None] = []
    if attr is None:
        return names
    for entry in attr:
        text = str(entry)
        found = re.search(r'coreai\.name = "((?:[^"\\]|\\.)*)"', text)
        names.append(found.group(1) if found else None)
    return names


def _is_dynamic(ir: Any, type_: Any) -> bool:
    try:
        shaped = ir.ShapedType(type_)
    except Exception:  # noqa: BLE001
        return False
    if not shaped.has_rank:
        return True
    return any(shaped.is_dynamic_dim(i) for i in range(shaped.rank))


def _numel(ir: Any, type_: Any) -> int | None:
    try:
        shaped = ir.ShapedType(type_)
    except Exception:  # noqa: BLE001
        return None
    if not shaped.has_rank or not shaped.has_static_shape:
        return None
    n = 1
    for i in range(shaped.rank):
        n *= int(shaped.get_dim_size(i))
    return n


class _ResourceHasher:
    """A file-like sink for the printed module: hashes each dense resource blob as it streams by.

    Resource blobs are printed after the module body, as `name: "0x<4-byte alignment><data>"`
    inside `{-# dialect_resources ... #-}`. Only digests are kept, never the text.
    """

    def __init__(self) -> None:
        self.state = "body"
        self.tail = ""
        self.buf = ""
        self.key = ""
        self.hasher = hashlib.sha256()  # a new one for each blob
        self.pending = ""
        self.skip = 0
        self.size = 0
        self.digests: dict[str, tuple[str, int]] = {}

    def write(self, chunk: str | bytes) -> None:
        if isinstance(chunk, bytes):
            chunk = chunk.decode("utf-8", "replace")
        while chunk:
            if self.state == "body":
                text = self.tail + chunk
                at = text.find("\n{-#")
                if at < 0:
                    self.tail = text[-4:]
                    return
                self.state, self.buf = "resources", ""
                chunk = text[at + 4 :]
            elif self.state == "resources":
                self.buf += chunk
                chunk = ""
                at = self.buf.find('"0x')
                if at < 0:
                    self.buf = self.buf[-4096:]
                    return
                head, rest = self.buf[: at + 3], self.buf[at + 3 :]
                found = _RESOURCE_KEY.search(head)
                self.key = found.group(1).strip('"') if found else f"?{len(self.digests)}"
                self.hasher, self.pending, self.skip, self.size = hashlib.sha256(), "", 8, 0
                self.state, self.buf = "hex", ""
                chunk = rest
            else:  # hex
                end = chunk.find('"')
                part, chunk = (chunk, "") if end < 0 else (chunk[:end], chunk[end + 1 :])
                self._feed(part)
                if end >= 0:
                    self.digests[self.key] = (self.hasher.hexdigest(), self.size)
                    self.state = "resources"

    def _feed(self, part: str) -> None:
        if self.skip:  # the blob's 4-byte alignment header
            dropped = part[: self.skip]
            self.skip -= len(dropped)
            part = part[len(dropped) :]
        text = self.pending + part
        if len(text) % 2:
            text, self.pending = text[:-1], text[-1]
        else:
            self.pending = ""
        data = bytes.fromhex(text)
        self.size += len(data)
        self.hasher.update(data)

    def flush(self) -> None:
        return None


def _is_weight(ir: Any, attr: Any) -> bool:
    """A stored tensor that is a weight: scalars and 1-D integer constants (axes, permutations,
    paddings, shapes) are program structure, everything else counts."""
    if _RESOURCE.search(str(attr)[:200]):
        return True
    try:
        shaped = ir.ShapedType(attr.type)
    except Exception:  # noqa: BLE001
        return False
    numel = _numel(ir, attr.type)
    if numel is None or numel < 2:
        return False
    element = str(shaped.element_type)
    return not (shaped.rank == 1 and element not in FLOAT_TYPES)


def _walk_graph(ir: Any, graph: Any, inline: list, resources: list) -> dict:
    attrs = graph.attributes
    sym = _attr(graph, "sym_name")
    name = ir.StringAttr(sym).value if sym is not None else "?"
    decl = _attr(graph, "composite_decl")
    decl_text = str(decl) if decl is not None else None
    composite = None
    if decl_text:
        found = _COMPOSITE.search(decl_text)
        composite = found.group(1) if found else None
    template = _attr(graph, "template_op")  # set when built, not serialised; kept if present
    template_op = ir.StringAttr(template).value if template is not None else None
    ftype = ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value)
    in_names = _io_names(_attr(graph, "arg_attrs"))
    out_names = _io_names(_attr(graph, "res_attrs"))
    inputs = [
        _tensor(ir, t, in_names[i] if i < len(in_names) else None)
        for i, t in enumerate(ftype.inputs)
    ]
    outputs = [
        _tensor(ir, t, out_names[i] if i < len(out_names) else None)
        for i, t in enumerate(ftype.results)
    ]
    ops: dict[str, int] = {}
    invokes: dict[str, int] = {}
    dynamic_results = 0
    result_dtypes: dict[str, int] = {}

    def visit(block: Any) -> None:
        nonlocal dynamic_results
        for child in block.operations:
            op = child.operation
            ops[op.name] = ops.get(op.name, 0) + 1
            if op.name.endswith(".invoke"):
                callee = _attr(op, "callee")
                found = _CALLEE.search(str(callee)) if callee is not None else None
                target = found.group(1).strip('"') if found else "?"
                invokes[target] = invokes.get(target, 0) + 1
            if any(_is_dynamic(ir, r.type) for r in op.results):
                dynamic_results += 1
            for r in op.results:
                try:
                    dt = str(ir.ShapedType(r.type).element_type)
                except Exception:  # noqa: BLE001
                    continue
                result_dtypes[dt] = result_dtypes.get(dt, 0) + 1
            if op.name.endswith(".constant"):
                value = _attr(op, "value")
                if value is not None and _is_weight(ir, value):
                    element = str(ir.ShapedType(value.type).element_type)
                    found = _RESOURCE.search(str(value)[:200])
                    if found:
                        resources.append((str(value.type), element, found.group(1).strip('"')))
                    else:
                        inline.append((str(value.type), element, value))
            for region in op.regions:
                for inner in region.blocks:
                    visit(inner)

    for region in graph.regions:
        for block in region.blocks:
            visit(block)
    return {
        "name": name,
        "public": "priv" not in attrs,
        "noinline": "no_inline" in attrs,
        "composite": composite,
        "composite_decl": decl_text,
        "template_op": template_op,
        "inputs": inputs,
        "outputs": outputs,
        "ops": ops,
        "invokes": invokes,
        "dynamic_results": dynamic_results,
        "result_dtypes": result_dtypes,
    }


def _graphs(ir: Any, block: Any, inline: list, resources: list) -> list[dict]:
    """Every `coreai.graph`, also inside namespaces."""
    found = []
    for child in block.operations:
        op = child.operation
        if op.name == "coreai.graph":
            found.append(_walk_graph(ir, op, inline, resources))
        else:
            for region in op.regions:
                for inner in region.blocks:
                    found += _graphs(ir, inner, inline, resources)
    return found


def _inline_digest(value: Any) -> tuple[str, int]:
    """sha256 of a dense constant's raw bytes; its printed form where no buffer is exposed
    (splats, element types without a buffer format)."""
    try:
        raw = memoryview(value).tobytes()
        return hashlib.sha256(raw).hexdigest(), len(raw)
    except Exception:  # noqa: BLE001
        text = str(value).encode()
        return hashlib.sha256(b"text:" + text).hexdigest(), 0


def _weights(module: Any, inline: list, resources: list) -> dict:
    per_constant = []
    total = 0
    dtypes: dict[str, int] = {}
    for type_text, element, value in inline:
        digest, size = _inline_digest(value)
        total += size
        dtypes[element] = dtypes.get(element, 0) + 1
        per_constant.append(hashlib.sha256(f"{type_text}\0{digest}".encode()).hexdigest())
    missing = 0
    if resources:
        sink = _ResourceHasher()
        module.operation.print(
            large_elements_limit=16, large_resource_limit=1 << 62, assume_verified=True, file=sink
        )
        for type_text, element, key in resources:
            if key not in sink.digests:
                missing += 1
                continue
            digest, size = sink.digests[key]
            total += size
            dtypes[element] = dtypes.get(element, 0) + 1
            per_constant.append(hashlib.sha256(f"{type_text}\0{digest}".encode()).hexdigest())
    fingerprint = hashlib.sha256("\n".join(sorted(per_constant)).encode()).hexdigest()
    return {
        "fingerprint": f"sha256:{fingerprint}",
        "constants": len(per_constant),
        "bytes": total,
        "dtypes": dtypes,
        "inline": len(inline),
        "resources": len(resources),
        "unresolved_resources": missing,
    }


def _metadata(asset: Any) -> dict:
    meta = asset.metadata
    out: dict = {}
    for key, attr in (
        ("producer", "_producer"),
        ("author", "author"),
        ("license", "license"),
        ("description", "model_description"),
        ("creation_date", "creation_date"),
    ):
        try:
            value = getattr(meta, attr)
        except Exception:  # noqa: BLE001
            continue
        out[key] = value if value not in ("",) else None
    try:
        out["custom"] = {str(k): str(v) for k, v in dict(meta.creator_defined_metadata).items()}
    except Exception:  # noqa: BLE001
        out["custom"] = {}
    return out


def read(bundle: Path, log: Path) -> dict:
    with logged(log):
        from coreai._compiler import ir
        from coreai.authoring import AIModelAsset

        stage = "load"
        try:
            asset = AIModelAsset.load(bundle)
            metadata = _metadata(asset)
            stage = "parse"
            module = mlir_module(asset.program)
            stage = "walk"
            with module.context:
                inline: list = []
                resources: list = []
                graphs = _graphs(ir, module.body, inline, resources)
                stage = "weights"
                weights = _weights(module, inline, resources)
        except Exception as exc:  # noqa: BLE001 - reported as a result, not raised
            (log.parent / f"{log.stem}.traceback.txt").write_text(traceback.format_exc())
            return {"ok": False, "stage": stage, "error": one_line(exc)}
    return {
        "ok": True,
        "versions": _versions(),
        "metadata": metadata,
        "graphs": graphs,
        "weights": weights,
    }


def handle(request: dict) -> dict:
    op = request.get("op")
    if op == "hello":
        return {"ok": True, "versions": _versions(), "pid": os.getpid()}
    if op == "read":
        return read(Path(request["bundle"]), Path(request["out"]) / "read.log")
    return {"ok": False, "stage": "protocol", "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    serve(handle)
