"""`inventory trace`: re-derive a bundle's construct instances and record them in the registry.

Two sources of a trace:

* the **recipe** (`--recipe-root PATH`): the recipe's own module, built from a checkout of its
  repository by the builder the registry names (`[bundles.X.recipe.builder]`, see
  `inventory.trace.recipes`), exported with the recipe's export steps. Written with `--write`, it
  is the registry's authority (`trace.origin = "recipe"`), with its provenance: repository,
  commit (read from the checkout), file, builder, packages.
* a **target** in this project (`module:function`): the authority for a bundle whose recipe was
  never traced, else the stand-in (`[bundles.X.standin]`) that CI traces without any checkout;
  `--check` then holds the stand-in against the recorded recipe trace through its stated
  differences (`inventory.trace.standin`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import AoT, Array, InlineTable, Table

from inventory.errors import InventoryError
from inventory.registry import Bundle, exporter_release
from inventory.trace import extra, recipes, standin, trust
from oracle.catalog import Catalog
from oracle.envs import Env, ensure_env, site_packages
from oracle.infra import scratch, scratch_environ, seconds

TRACE_TIMEOUT = "INVENTORY_TRACE_TIMEOUT"
OPTIONS, RESULT = "options.json", "result.json"  # in the worker's folder (trace/trace_worker.py)
_GRACE = 30.0  # past the supervisor's own limit: it is stuck, not the builder

HEADER = """\
# The registry of shipped bundles. Facts about each bundle (files, dtype, exporter and the source
# of that fact, export pipeline, recipe provenance and builder, a stand-in's stated differences)
# are written by hand from the recipe sources; `trace` and `instances` are written by
# `inventory trace BUNDLE --recipe-root PATH --write` (or, for a bundle traced from a project
# target, `inventory trace BUNDLE --write`) and checked by `inventory trace --check`. Never edit
# instances by hand.

"""
RECIPE, TARGET = "recipe", "target"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class TraceError(InventoryError):
    """A trace could not run; one line for the user."""


@dataclass(frozen=True)
class TraceResult:
    bundle: str
    target: str  # module:function, or the recipe builder as described
    origin: str  # RECIPE or TARGET
    dtype: str
    notes: str
    decompositions: str
    packages: dict[str, str]
    aten_ops: int
    instances: list[dict[str, Any]]  # registry-shaped instance tables
    detected: list[str]  # the construct kinds the trace looked for
    facts: dict[str, Any] = field(default_factory=dict)
    export: dict[str, Any] = field(default_factory=dict)  # the export steps applied
    provenance: dict[str, Any] = field(default_factory=dict)  # a recipe trace's
    warnings: tuple[str, ...] = ()

    @property
    def is_standin(self) -> bool:
        return self.origin == TARGET and bool(self.provenance.get("standin"))


def origin(bundle: Bundle) -> str:
    """Where the registry's instances come from: a recipe trace, else a project target."""
    return str(bundle.trace.get("origin", TARGET))


def traceable(bundle: Bundle, recipe_root: Path | None) -> bool:
    """Whether `inventory trace` without bundle names traces this one: with a recipe root, the
    bundles whose recipe file is in that checkout; else those with a project target."""
    if recipe_root is not None:
        try:
            # Only whether the recipe file is in this checkout decides; a builder naming code it
            # may not is then refused loudly by `vet`, not skipped here.
            recipes.check(
                recipes.Builder.from_table(bundle.recipe.get("builder") or {}),
                recipe_root,
                allow_code=True,
            )
        except recipes.RecipeError:
            return False
        return True
    return bool(bundle.trace.get("target") or bundle.standin.get("target"))


def _target_ref(bundle: Bundle) -> tuple[str | None, str, bool]:
    """The registry's target for a trace without a recipe root: (module:function or None, the
    key naming it, whether it is the stand-in)."""
    is_standin = origin(bundle) == RECIPE
    target = (bundle.standin if is_standin else bundle.trace).get("target")
    key = f"[bundles.{bundle.name}.{'standin' if is_standin else 'trace'}] target"
    return (str(target) if target else None), key, is_standin


def vet(bundle: Bundle, recipe_root: Path | None, allow_code: bool) -> None:
    """Refuse, before anything is imported or built, a bundle whose registry entry names code
    the trace may not run (`inventory.trace.trust`)."""
    try:
        if recipe_root is not None:
            table = bundle.recipe.get("builder")
            if table:
                recipes.check(recipes.Builder.from_table(table), recipe_root, allow_code)
            where = f"[bundles.{bundle.name}.recipe.environment] requirements entry"
            env = bundle.recipe.get("environment")
            for requirement in env.get("requirements", []) if isinstance(env, dict) else []:
                trust.check_requirement(str(requirement), where, allow_code)
            return
        target, key, _standin = _target_ref(bundle)
        if target:
            trust.check_target(target, key, allow_code)
    except (recipes.RecipeError, trust.UntrustedCode) as exc:
        raise TraceError(f"{bundle.name}: {exc}") from None


def _decomp_env(bundle: Bundle, catalog: Catalog, progress: Any) -> Env:
    version, _assumed = exporter_release(bundle.exporter, catalog)
    if version not in catalog.releases:  # decompose as the oldest release does
        version = catalog.oldest()
    return ensure_env(version, catalog, progress)


def export_steps(bundle: Bundle) -> dict[str, Any]:
    """The recipe's steps around torch.export that a trace applies (pipeline.grad, autocast)."""
    steps = {k: bundle.export.get(k, "") for k in ("grad", "autocast")}
    return {k: v for k, v in steps.items() if v}


def _python(bundle: Bundle, catalog: Catalog, progress: Any) -> str:
    """The interpreter of a recipe trace: the project's own, or an environment with the packages
    the recipe ran with (`[bundles.X.recipe.environment] requirements`) where they differ."""
    env = bundle.recipe.get("environment", {})
    requirements = tuple(env.get("requirements", []))
    if not requirements:
        return sys.executable
    return extra.requirements_env(requirements, catalog, progress)


def recipe_process(
    bundle: Bundle, catalog: Catalog, progress: Any = lambda _: None
) -> tuple[str, str]:
    """The interpreter a recipe's code runs with (the project's, or the environment its
    `[recipe.environment]` pins) and the converter site-packages a trace appends to its path:
    what `inventory verify` builds a recipe-traced bundle with too."""
    env = _decomp_env(bundle, catalog, progress)
    return _python(bundle, catalog, progress), str(site_packages(env.python))


@dataclass(frozen=True)
class Supervised:
    """How a supervised worker ended: its exit code (None: the supervisor itself was stuck),
    its result (FOLDER/result.json), its log and the limit it ran under."""

    code: int | None
    result: dict[str, Any] | None
    log: str
    limit: float

    @property
    def detail(self) -> str:
        """One line saying why it gave no result."""
        if self.code is None:
            return f"the builder did not answer within {self.limit:g} s (INVENTORY_TRACE_TIMEOUT)"
        lines = [ln for ln in self.log.splitlines() if ln.strip()]
        return (lines[-1] if lines else f"exit code {self.code}").removeprefix("error: ")


def supervised(
    python: str, module: str, args: list[str], options: dict[str, Any], allow_code: bool
) -> Supervised:
    """`python -m MODULE ARGS... FOLDER`, the supervisor of a builder's processes
    (`inventory.trace.trace_worker.supervise`): its own process group, its options, result and
    scratch (TMPDIR, torch's caches) in a scratch folder of the store (never on argv or a pipe
    a forked child could hold open), at most INVENTORY_TRACE_TIMEOUT seconds. A trace runs so,
    and so does `verify`'s build of a bundle's module."""
    limit = seconds(TRACE_TIMEOUT)
    with scratch("trace") as folder:
        (folder / OPTIONS).write_text(
            json.dumps({**options, "allow_code": allow_code, "timeout": limit})
        )
        log = folder / "trace.log"
        # its temp files and torch's scratch (the inductor's `torchinductor_<user>`) go with
        # the folder, never to the system temp directory
        tmp = folder / "tmp"
        tmp.mkdir()
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [python, "-m", module, *args, str(folder)],
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                cwd=PROJECT_ROOT,
                env=scratch_environ(tmp),
                start_new_session=True,
            )
            try:
                code: int | None = proc.wait(timeout=limit + _GRACE)
            except subprocess.TimeoutExpired:
                code = None  # the supervisor itself is stuck: its whole group goes
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        result = folder / RESULT
        answer = json.loads(result.read_text()) if code == 0 and result.is_file() else None
        return Supervised(code, answer, log.read_text(errors="replace"), limit)


def _run_worker(
    bundle: Bundle, python: str, target: str, site: Path, options: dict[str, Any], allow_code: bool
) -> dict[str, Any]:
    """The trace worker (`inventory.trace.trace_worker`), supervised (`supervised`)."""
    run = supervised(
        python, "inventory.trace.trace_worker", [target, str(site)], options, allow_code
    )
    if run.result is not None:
        return run.result
    raise TraceError(f"tracing {bundle.name} failed: {run.detail}")


def _instances(data: dict[str, Any], source: str) -> list[dict[str, Any]]:
    out = []
    for g in data["instances"]:
        inst = {
            "kind": g["kind"],
            "count": g["count"],
            "dtype": g["dtype"],
            "modules": list(g["modules"]),
        }
        if g.get("producers"):
            inst["producers"] = list(g["producers"])
        inst["params"] = g["params"]
        inst["source"] = source
        out.append(inst)
    return out


def trace_recipe(
    bundle: Bundle,
    root: Path,
    catalog: Catalog,
    progress: Any = lambda _: None,
    allow_code: bool = False,
    build: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
) -> TraceResult:
    """Trace the recipe's own module from a checkout of its repository; `build`: keyword
    arguments over the builder's (a verify form's miniature, stated as the builder's own), and
    `inputs` in place of the builder's."""
    table = bundle.recipe.get("builder")
    if not table:
        raise TraceError(
            f"bundle {bundle.name!r}: the registry names no recipe builder "
            f"([bundles.{bundle.name}.recipe.builder])"
        )
    if build:
        table = {**table, "kwargs": {**table.get("kwargs", {}), **build}}
    if inputs is not None:
        table = {**table, "inputs": inputs}
    try:
        builder = recipes.Builder.from_table(table)
        if builder.offline:
            raise TraceError(
                f"{bundle.name}: the recipe cannot be traced offline: {builder.offline}"
            )
        recipes.check(builder, root, allow_code)
    except recipes.RecipeError as exc:
        raise TraceError(f"{bundle.name}: {exc}") from None
    env = _decomp_env(bundle, catalog, progress)
    python = _python(bundle, catalog, progress)
    checkout = recipes.checkout(root)
    progress(f"tracing {bundle.name} from its recipe ({builder.described()}, {root})")
    steps = export_steps(bundle)
    data = _run_worker(
        bundle,
        python,
        "recipe",
        site_packages(env.python),
        {
            "recipe": {
                "root": str(root.resolve()),
                "builder": builder.to_json(),
                "dtype": bundle.dtype,
            },
            "export": steps,
            "keep": list(bundle.pipeline.keep),
        },
        allow_code,
    )
    repository = bundle.recipe.get("repository", "unknown")
    provenance = {
        "repository": repository,
        "commit": checkout.commit,
        "commit_source": checkout.how,
        "file": builder.file,
        "builder": builder.described(),
    }
    if checkout.modified:
        provenance["modified"] = True
    warnings = []
    recorded = str(bundle.recipe.get("commit", ""))
    if (
        recorded
        and checkout.commit != "unknown"
        and not checkout.commit.startswith(recorded)
        and not recorded.startswith(checkout.commit)
    ):
        warnings.append(
            f"{bundle.name}: the registry names recipe commit {recorded[:12]}, the "
            f"checkout is {checkout.commit[:12]} ({checkout.how})"
        )
    if checkout.modified:
        warnings.append(f"{bundle.name}: the checkout has local changes")
    source = (
        f"traced from the recipe: inventory trace {bundle.name} --recipe-root ({repository} "
        f"{checkout.commit[:12]}, {builder.described()}; torch.export, "
        f"{data['decompositions']}, aten graph read node by node)"
    )
    return TraceResult(
        bundle.name,
        builder.described(),
        RECIPE,
        data["dtype"],
        data["notes"],
        data["decompositions"],
        data["packages"],
        data["aten_ops"],
        _instances(data, source),
        data["detected"],
        data["facts"],
        steps,
        provenance,
        tuple(warnings),
    )


def trace_target(
    bundle: Bundle,
    catalog: Catalog,
    progress: Any = lambda _: None,
    allow_code: bool = False,
    build: dict[str, Any] | None = None,
) -> TraceResult:
    """Trace the project's target for the bundle: its stand-in when the registry's authority is
    a recipe trace, else the registry's own target; `build`: keyword arguments to the target
    (a verify form's miniature)."""
    target, _key, is_standin = _target_ref(bundle)
    if not target:
        what = "stand-in target ([standin] target)" if is_standin else "trace target"
        raise TraceError(f"bundle {bundle.name!r} has no {what} in the registry")
    vet(bundle, None, allow_code)
    env = _decomp_env(bundle, catalog, progress)
    progress(f"tracing {bundle.name} ({target}{', the stand-in' if is_standin else ''})")
    steps = export_steps(bundle)
    python = extra.module_python(catalog, progress)  # the `trace` extra, installed on first use
    data = _run_worker(
        bundle,
        python,
        target,
        site_packages(env.python),
        {"export": steps, "build": build or {}, "keep": list(bundle.pipeline.keep)},
        allow_code,
    )
    source = (
        f"traced: inventory trace {bundle.name} (torch.export, "
        f"{data['decompositions']}, aten graph read node by node)"
    )
    return TraceResult(
        bundle.name,
        target,
        TARGET,
        data["dtype"],
        data["notes"],
        data["decompositions"],
        data["packages"],
        data["aten_ops"],
        _instances(data, source),
        data["detected"],
        data["facts"],
        steps,
        {"standin": True} if is_standin else {},
    )


def trace_bundle(
    bundle: Bundle,
    catalog: Catalog,
    progress: Any = lambda _: None,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> TraceResult:
    if recipe_root is not None:
        return trace_recipe(bundle, recipe_root, catalog, progress, allow_code)
    return trace_target(bundle, catalog, progress, allow_code)


def trace_bundles(
    registry: Path,
    bundles: list[Bundle],
    catalog: Catalog,
    *,
    write: bool,
    check: bool,
    progress: Any = lambda _: None,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> Iterator[tuple[TraceResult, list[str]]]:
    """Trace each bundle in turn: its result and, with `check`, what keeps the registry from
    matching it; with `write`, the registry is updated after each. Every bundle's code is vetted
    first, so a refused entry stops the run before any bundle is traced or written."""
    for bundle in bundles:
        vet(bundle, recipe_root, allow_code)
    for bundle in bundles:
        result = trace_bundle(bundle, catalog, progress, recipe_root, allow_code)
        raw = raw_bundle(registry, bundle.name)
        stale = differences(raw, result) if check else []
        if write:
            write_trace(registry, result)
        yield result, stale


def _trace_table(result: TraceResult, previous: dict[str, Any]) -> dict[str, Any]:
    kinds = sorted({i["kind"] for i in result.instances})
    summary = (
        f"{sum(i['count'] for i in result.instances)} instance(s) of "
        f"{', '.join(kinds) or 'no tracked construct'} among {result.aten_ops} aten ops"
    )
    table = {
        k: v
        for k, v in previous.items()
        if k not in ("provenance", "facts", "export", "target", "builder")
    }
    # A recipe trace names its builder; `target` is only ever a project module:function.
    where = "builder" if result.origin == RECIPE else "target"
    table.update(
        {
            "origin": result.origin,
            where: result.target,
            "decompositions": result.decompositions,
            "export": result.export,
            "packages": result.packages,
            "notes": result.notes,
            "summary": summary,
            "detected": result.detected,
            "facts": result.facts,
        }
    )
    if result.provenance:
        table["provenance"] = result.provenance
    if not result.export:
        table.pop("export")
    return table


def _standin_table(result: TraceResult, previous: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's own facts (target, packages, notes); its stated differences are kept."""
    table = dict(previous)
    table.update(
        {
            "target": result.target,
            "decompositions": result.decompositions,
            "packages": result.packages,
            "notes": result.notes,
        }
    )
    return table


def _same_packages(
    recorded: dict[str, str], traced: dict[str, str], who: str, bundle: str
) -> list[str]:
    if recorded and recorded != traced:
        return [f"{bundle}: {who} traced with {recorded}, now {traced}"]
    return []


def differences(bundle_raw: dict[str, Any], result: TraceResult) -> list[str]:
    """What the registry records that a fresh trace does not reproduce, one line each."""
    trace = bundle_raw.get("trace", {})
    recorded = bundle_raw.get("instances", [])
    out: list[str] = []
    old_detected = trace.get("detected", [])
    if old_detected != result.detected:
        out.append(
            f"{result.bundle}: recorded trace looked for {old_detected}, "
            f"the tracer now detects {result.detected}"
        )
    if result.is_standin:
        table = bundle_raw.get("standin", {})
        out += _same_packages(
            table.get("packages", {}), result.packages, "the stand-in", result.bundle
        )
        problems = standin.check(
            result.bundle, table, result.instances, result.facts, recorded, trace.get("facts", {})
        )
        if problems:
            derived = standin.derived(
                result.instances, recorded, result.facts, trace.get("facts", {})
            )
            problems.append(
                f"{result.bundle}: the stand-in differs from the recipe trace by "
                f"(to review and state, with why): {json.dumps(derived)}"
            )
        return out + problems
    rec = {standin.key(i) for i in recorded}
    new = {standin.key(i) for i in result.instances}
    out += [f"{result.bundle}: recorded but not traced: {k}" for k in sorted(rec - new)]
    out += [f"{result.bundle}: traced but not recorded: {k}" for k in sorted(new - rec)]
    for fact, value in sorted(trace.get("facts", {}).items()):
        if result.facts.get(fact) != value:
            out.append(
                f"{result.bundle}: fact {fact}: recorded {value!r}, traced "
                f"{result.facts.get(fact)!r}"
            )
    out += _same_packages(
        trace.get("packages", {}), result.packages, "recorded trace", result.bundle
    )
    if result.origin == RECIPE and trace.get("origin") == RECIPE:
        was = trace.get("provenance", {}).get("commit")
        if was and was != result.provenance.get("commit"):
            out.append(
                f"{result.bundle}: recorded from recipe commit {was[:12]}, the checkout "
                f"is {result.provenance.get('commit', '?')[:12]}"
            )
    return out


def write_trace(registry: Path, result: TraceResult) -> None:
    """The bundle's trace, instances and stand-in written into the registry in place: the file
    is edited, not rewritten, so its header, comments, order and inline tables stay the user's,
    and only what the trace changed changes."""
    doc = tomlkit.parse(registry.read_text())
    raw = doc["bundles"][result.bundle]
    plain: dict[str, Any] = raw.unwrap()
    previous = plain.get("trace", {})
    if result.is_standin:
        # The recipe trace stays the authority: only the stand-in's own facts are refreshed.
        _edit(raw, "standin", _standin_table(result, plain.get("standin", {})))
    else:
        if (
            result.origin == RECIPE
            and previous.get("origin", TARGET) == TARGET
            and previous.get("target")
            and "standin" not in plain
        ):
            # A bundle traced from a project target until now: that target becomes its stand-in.
            standin = {
                k: previous[k]
                for k in ("target", "decompositions", "packages", "notes")
                if k in previous
            }
            _edit(raw, "standin", standin)
        _edit(raw, "trace", _trace_table(result, previous))
        _edit(raw, "instances", result.instances)
    tmp = registry.with_suffix(".toml.tmp")
    tmp.write_text(tomlkit.dumps(doc))
    tmp.replace(registry)


def _edit(container: Any, key: str, value: Any) -> None:
    """`container[key] = value`, keeping every part of the old item that already holds what
    `value` says: a table is edited key by key, an equal value is left as written (its inline
    form, its comments), a new array of tables takes the old one's inline sub-tables."""
    if key not in container:
        container[key] = _array_of_tables(value, None) if _is_aot(value) else value
        return
    old = container[key]
    if _unwrapped(old) == value:
        return
    if isinstance(value, dict) and isinstance(old, Table | InlineTable):
        for gone in [k for k in old if k not in value]:
            del old[gone]
        for k, v in value.items():
            _edit(old, k, v)
    elif _is_aot(value):
        container[key] = _array_of_tables(value, old if isinstance(old, AoT) else None)
    elif isinstance(value, list) and isinstance(old, Array):
        new = tomlkit.array()
        new.extend(value)
        container[key] = new.multiline(len(old) > 0 and "\n" in old.as_string())
    else:
        container[key] = value


def _unwrapped(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _is_aot(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _inline(value: dict[str, Any]) -> InlineTable:
    table = tomlkit.inline_table()
    table.update(value)
    return table


def _array_of_tables(rows: list[dict[str, Any]], old: AoT | None) -> AoT:
    """The rows as `[[...]]` tables; a key the old array's first table wrote inline (`params =
    { ... }`) is written inline again, and the last table ends with a blank line, as a table
    written by hand does."""
    inline = {
        k
        for k, v in (old[0].items() if old is not None and len(old) else ())
        if isinstance(v, InlineTable)
    }
    out = tomlkit.aot()
    for row in rows:
        out.append(
            tomlkit.item(
                {
                    k: _inline(v) if k in inline and isinstance(v, dict) else v
                    for k, v in row.items()
                }
            )
        )
    if len(out):
        _end_with_blank_line(out[-1])
    return out


def _end_with_blank_line(table: Table) -> None:
    subtables = [v for v in table.values() if isinstance(v, Table)]
    if subtables:
        _end_with_blank_line(subtables[-1])
    else:
        table.add(tomlkit.nl())


def raw_bundle(registry: Path, name: str) -> dict[str, Any]:
    return tomllib.loads(registry.read_text())["bundles"][name]
