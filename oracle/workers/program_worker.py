"""The in-environment whole-program script: convert a saved `torch.export` program (a whole
bundle module, `inventory verify`) with this environment's converter.

Run by a converter environment's python as a long-lived subprocess, with the protocol of
`probe_worker.py`. The program is built and exported once, outside any converter environment, and
saved with `torch.export.save`; every side loads the same file, so the converter (and its own
decomposition table, applied here as the bundle's pipeline says) is the only variable.

A whole bundle's IR text is large (its weights are printed as hex blobs: ~470 MB for sortformer):
it is printed straight to a file through a writer that replaces every long hex blob by its
digest, so no side ever holds the full text in memory and the evidence stays small. A changed
weight still changes its digest.

Requests:
  {"op": "hello"}                                    -> versions of what is installed here
  {"op": "convert_program", "program": FILE.pt2, "pipeline": {...}, "out": DIR}
      -> emitted.mlir, shipped.mlir (blobs digested), emitted.located.mlir and
         shipped.located.mlir (with debug locations, for mapping a differing region back to its
         aten nodes, and telling a lowering's change from the optimizer's), nodes.json (each
         decomposed aten node: its target and module path), model.aimodel, convert.log; the
         seconds of each step and the process's peak resident memory during the request
Version differences of the converter API are handled here and in `probe_worker.py`, nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.export import ExportedProgram

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle.workers.memory import peak_mb, reset_peak  # noqa: E402
from oracle.workers.probe_worker import _decomposed, _fail, _versions  # noqa: E402
from oracle.workers.worker_io import logged, mlir_module, serve  # noqa: E402

_BLOB = re.compile(r'"0x([0-9A-Fa-f]{97,})"')
_LONG = 96  # as normalise: shorter literals are kept as they are


class _DigestingWriter:
    """A text sink for MLIR's printer: whole lines are written on, each long hex blob replaced by
    `"sha256:<16 hex>"` of its upper-case body."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "w")  # noqa: SIM115 - closed by close()
        self._pending = ""

    @staticmethod
    def _digest(m: re.Match[str]) -> str:
        return f'"sha256:{hashlib.sha256(m.group(1).upper().encode()).hexdigest()[:16]}"'

    def write(self, chunk: str | bytes) -> int:
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        data = self._pending + text
        cut = data.rfind("\n") + 1
        self._pending = data[cut:]
        if cut:
            self._file.write(_BLOB.sub(self._digest, data[:cut]))
        return len(text)

    def close(self) -> None:
        self._file.write(_BLOB.sub(self._digest, self._pending))
        self._file.close()


def _print(prog: Any, path: Path, located: bool) -> None:
    writer = _DigestingWriter(path)
    try:
        # The module's own printer, streamed: never one string of the whole program.
        mlir_module(prog).operation.print(file=writer, enable_debug_info=located)
    finally:
        writer.close()


class _PreRewrite:
    """coreai-core 1.0.0b3 optimizes inside `to_coreai()`: its authoring module runs the
    pre-compilation rewrite (what `optimize()` did up to b2) when the converter's `with module`
    block exits. The module is printed just before that rewrite, so the emitted program of 0.4.3
    is the lowering's own output, comparable with an earlier release's pre-`optimize()` program
    (a region's stage, lowering or optimizer, is read off the two). Nothing is patched where the
    hook does not exist (up to b2)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.captured = False
        self._owner: Any = None  # coreai's authoring module, once patched
        self._original: Any = None

    def __enter__(self) -> _PreRewrite:
        try:
            from coreai.authoring import module as owner
        except ImportError:
            return self
        original = getattr(owner, "run_pre_compilation_rewrite", None)
        if original is None:
            return self

        def printed_first(*, module: Any) -> Any:  # the compiler's own signature
            for located in (False, True):
                path = self.out / ("emitted.located.mlir" if located else "emitted.mlir")
                writer = _DigestingWriter(path)
                try:
                    module.operation.print(file=writer, enable_debug_info=located)
                finally:
                    writer.close()
            self.captured = True
            return original(module=module)

        self._owner, self._original = owner, original
        owner.run_pre_compilation_rewrite = printed_first
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owner is not None:
            self._owner.run_pre_compilation_rewrite = self._original


def _nodes(ep: ExportedProgram) -> dict[str, dict]:
    """Each aten node of the decomposed graph the converter sees: its op, module path and, where
    a construct's detector recognises it, the construct kind (the detectors `trace` runs)."""
    from oracle import constructs
    from oracle.constructs._graph import Sizes, module_path, target_name

    readers: dict[str, list] = {}
    for construct in constructs.detected():
        for reader in construct.readers:
            for op in reader.ops:
                readers.setdefault(op, []).append(reader.detect)
    sizes = Sizes()
    out: dict[str, dict] = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        entry = {"target": target_name(node), "module": module_path(node)}
        for detect in readers.get(entry["target"], []):
            try:
                hit = detect(node, sizes)
            except Exception:  # noqa: BLE001 - a detector's trouble costs only the label
                hit = None
            if hit is not None:
                entry["kind"] = hit.kind
                break
        out[node.name] = entry
    return out


def convert_program(program: str, pipeline: dict, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    reset_peak()
    seconds: dict[str, float] = {}
    with logged(out / "convert.log"):
        import torch

        start = time.perf_counter()
        try:
            ep = _decomposed(torch.export.load(program), pipeline)
        except Exception as exc:  # noqa: BLE001 - reported as a result, not raised
            return _fail("export", exc, out)
        seconds["decompose"] = time.perf_counter() - start
        (out / "nodes.json").write_text(json.dumps(_nodes(ep)))
        from coreai_torch import TorchConverter

        start = time.perf_counter()
        try:
            with _PreRewrite(out) as pre:
                prog = TorchConverter().add_exported_program(ep).to_coreai()
            if not pre.captured:
                _print(prog, out / "emitted.mlir", located=False)
                _print(prog, out / "emitted.located.mlir", located=True)
        except Exception as exc:  # noqa: BLE001
            return _fail("convert", exc, out)
        seconds["convert"] = time.perf_counter() - start
        del ep
        # 0.4.3's to_coreai() returns the already-optimized program and has no optimize(); its
        # emitted program was printed before the rewrite that optimizes it (_PreRewrite).
        prebuilt_optimized = not hasattr(prog, "optimize")
        start = time.perf_counter()
        try:
            if pipeline.get("optimize", True) and not prebuilt_optimized:
                result = prog.optimize()
                prog = result if result is not None else prog
            _print(prog, out / "shipped.mlir", located=False)
            _print(prog, out / "shipped.located.mlir", located=True)
        except Exception as exc:  # noqa: BLE001
            return _fail("optimize", exc, out)
        seconds["optimize"] = time.perf_counter() - start
        asset = out / "model.aimodel"
        shutil.rmtree(asset, ignore_errors=True)
        start = time.perf_counter()
        try:
            prog.save_asset(asset)
        except Exception as exc:  # noqa: BLE001
            return _fail("save", exc, out)
        seconds["save"] = time.perf_counter() - start
    return {
        "ok": True,
        "emitted_is_optimized": prebuilt_optimized and not pre.captured,
        "emitted_before_rewrite": pre.captured,
        "seconds": seconds,
        "peak_mb": peak_mb(),
        "files": {
            name: str(out / f)
            for name, f in (
                ("emitted", "emitted.mlir"),
                ("emitted_located", "emitted.located.mlir"),
                ("shipped", "shipped.mlir"),
                ("located", "shipped.located.mlir"),
                ("nodes", "nodes.json"),
                ("asset", "model.aimodel"),
                ("log", "convert.log"),
            )
        },
    }


def handle(request: dict) -> dict:
    op = request.get("op")
    if op == "hello":
        return {"ok": True, "versions": _versions(), "pid": os.getpid()}
    if op == "convert_program":
        return convert_program(
            request["program"], request.get("pipeline", {}), Path(request["out"])
        )
    return {"ok": False, "stage": "protocol", "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    serve(handle)
