"""Trace one target in a subprocess: export it through the converter's decomposition table.

Run as `python -m inventory.trace.trace_worker TARGET CONVERTER_SITE_PACKAGES FOLDER`. FOLDER holds
`options.json` (options travel in a file, never on the command line: a 2 MB keyword argument
overflowed argv). TARGET is a project target (`module:function`, called with the options'
`build` keyword arguments, none by default) or `recipe`: then the options' `recipe` (`root`,
`builder`, `dtype`) names the recipe's builder in a checkout (see `inventory.trace.recipes`).
The options' `export` holds the recipe's export steps that run around `torch.export` (`grad`:
"no_grad" or "enabled"; `autocast`: a dtype or ""). The converter's site-packages is appended to
sys.path (after this environment's own packages) so that `coreai_torch.get_decomp_table()`
decomposes the graph exactly as the recipe's export does, and so that a recipe importing the
converter at module level imports; nothing else of the converter is used here. Writes one JSON
document to FOLDER/result.json.

A user's builder is foreign code, so this process is its supervisor: a child subreaper
(PR_SET_CHILD_SUBREAPER) that forks the tracer, waits for it at most the options' `timeout`
seconds, then kills and reaps every process the builder left, a `setsid` grandchild included
(orphans are re-parented here, not to init). A builder that raises answers at once in one line
(its last line on stderr), even while a child it forked still holds the inherited descriptors.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.metadata as md
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any


def _target(target_ref: str, options: dict[str, Any]) -> Any:
    from inventory.trace import trust

    allow_code = bool(options.get("allow_code"))
    if target_ref != "recipe":
        # checked by the service already; again here, since this is where the import happens
        trust.check_target(target_ref, "trace target", allow_code)
        mod_name, _, fn_name = target_ref.partition(":")
        # `build`: keyword arguments to the target (a verify form's miniature, see
        # inventory.verify.forms); none for the registry's own trace
        return getattr(importlib.import_module(mod_name), fn_name or "build")(
            **options.get("build", {})
        )
    from inventory.trace import recipes

    return recipes.target(options["recipe"], allow_code)


@contextlib.contextmanager
def export_context(steps: dict[str, Any]) -> Iterator[None]:
    """The recipe's context around torch.export: no_grad (coreai-models' export_to_coreai) and
    autocast (sam3's recipe). Also what `inventory verify` exports a whole bundle under."""
    import torch

    with contextlib.ExitStack() as stack:
        if steps.get("grad") == "no_grad":
            stack.enter_context(torch.no_grad())
        if steps.get("autocast"):
            stack.enter_context(torch.autocast("cpu", dtype=getattr(torch, steps["autocast"])))
        yield


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "absent"


def _trace(target_ref: str, site: str, options: dict[str, Any], result: Path) -> int:
    os.dup2(2, 1)  # whatever the models print goes to the log, never into the result
    import torch

    from inventory.trace.detect import detect, detected_kinds, group
    from inventory.trace.facts import graph_facts
    from inventory.trace.recipes import RecipeError
    from inventory.trace.trust import UntrustedCode

    if site:
        sys.path.append(site)
    try:
        target = _target(target_ref, options)
    except (RecipeError, UntrustedCode) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    steps = options.get("export", {})
    with export_context(steps):
        ep = torch.export.export(target.module, target.args, kwargs=target.kwargs, strict=False)
    if site:
        import coreai_torch

        table = coreai_torch.get_decomp_table()
        decomp = f"coreai_torch {md.version('coreai-torch')} get_decomp_table()"
    else:
        table = torch.export.default_decompositions()
        decomp = "torch default decompositions"
    # the overloads the recipe keeps out of its table ([bundles.X.pipeline] keep): the graph
    # then holds them whole, as the bundle's converter saw them
    keep = set(options.get("keep", ()))
    if keep:
        for op in [op for op in table if str(op) in keep]:
            table.pop(op)
        decomp += " minus " + ", ".join(sorted(keep))
    ep = ep.run_decompositions(table)
    nodes = list(ep.graph.nodes)
    packages = {"torch": md.version("torch")}
    for dist in target.packages:
        packages[dist] = _version(dist)
    found = group(detect(nodes))
    facts = graph_facts(ep)
    tmp = result.with_suffix(".tmp")
    with tmp.open("w") as protocol:
        json.dump(
            {
                "target": target_ref,
                "dtype": target.dtype,
                "notes": target.notes,
                "decompositions": decomp,
                "export": steps,
                "packages": packages,
                "aten_ops": facts["aten_ops"],
                "facts": facts,
                "detected": detected_kinds(),
                "instances": [asdict(g) for g in found],
            },
            protocol,
        )
    tmp.replace(result)
    return 0


OPTIONS, RESULT = "options.json", "result.json"
_PR_SET_CHILD_SUBREAPER = 36


def _subreaper() -> None:
    """Orphans of the builder's processes are re-parented here (Linux); elsewhere the process
    group still ends them."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            out.append(int(entry.name))
    return out


def _end_descendants(limit: float = 10.0) -> None:
    """Kill and reap every process left under this one (as the subreaper, every descendant of
    the builder ends up a child here once its parent is gone)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for pid in _children(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _wait(tracer: int, limit: float | None) -> int:
    deadline = None if limit is None else time.monotonic() + limit
    while True:
        pid, status = os.waitpid(tracer, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(tracer, signal.SIGKILL)
            os.waitpid(tracer, 0)
            print(
                f"the builder did not answer within {limit:g} s (INVENTORY_TRACE_TIMEOUT)",
                file=sys.stderr,
                flush=True,
            )
            return 124
        time.sleep(0.02)


def supervise(job: Callable[[], int], limit: float | None) -> int:
    """Run `job` (the code that calls a builder) in a forked child of this process, its
    supervisor: at most `limit` seconds, then every process the builder left is killed and
    reaped; a job that raises answers at once in one line. Its exit code is the job's. Also how
    `inventory verify` builds a recipe's module (`inventory.verify.build_worker`)."""
    _subreaper()
    child = os.fork()
    if child == 0:
        code = 1
        try:
            code = job()
        except BaseException as exc:  # noqa: BLE001 - the builder raised: one line, at once
            traceback.print_exc()
            detail = " ".join(str(exc).split())
            print(
                f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__,
                file=sys.stderr,
                flush=True,
            )
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(code)
    code = _wait(child, float(limit) if limit else None)
    _end_descendants()
    return code


def main(argv: list[str]) -> int:
    target_ref, site, folder = argv[0], argv[1], Path(argv[2])
    options = json.loads((folder / OPTIONS).read_text())
    return supervise(
        lambda: _trace(target_ref, site, options, folder / RESULT), options.get("timeout")
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
