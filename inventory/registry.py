"""The registry of shipped bundles (`recipes.toml`): what each bundle is and how it was exported."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inventory.errors import RegistryError
from inventory.registry_cache import cached
from oracle.catalog import (
    DECOMPOSITIONS,
    SHAPES,
    Catalog,
    EnvError,
    Fields,
    cores,
    load_catalog,
    parse_runtime,
)
from oracle.compare import Pipeline
from oracle.infra import parse_toml, read_text

DEFAULT_REGISTRY = Path(__file__).resolve().parent.parent / "recipes.toml"
UNKNOWN = "unknown"

__all__ = [
    "UNKNOWN",
    "Bundle",
    "Exporter",
    "Instance",
    "RegistryError",
    "exporter_release",
    "load_registry",
    "select",
]


@dataclass(frozen=True)
class Exporter:
    converter: str  # a release, or "unknown"
    core: str
    source: str  # where that fact comes from
    torch: str = ""  # the torch the recipe ran ("": not recorded)
    torch_source: str = ""  # where that fact comes from
    torch_checked: str = ""  # the measured sensitivity to the shared torch, in one line


def exporter_release(exporter: Exporter, catalog: Catalog) -> tuple[str, bool]:
    """The exporter release an answer uses, and whether it is assumed: a registry that records
    none is answered as the oldest supported release (the most fixes to check)."""
    if exporter.converter == UNKNOWN:
        return catalog.oldest(), True
    return exporter.converter, False


@dataclass(frozen=True)
class Instance:
    """One construct found by tracing the bundle's recipe, with its exact parameters."""

    kind: str
    params: dict[str, Any]
    count: int
    dtype: str
    modules: tuple[str, ...]
    source: str
    # per module, the module whose tensors its probe also takes (a batch norm's depthwise conv)
    producers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Bundle:
    name: str
    files: tuple[str, ...]
    dtype: str
    exporter: Exporter
    pipeline: Pipeline
    recipe: dict[str, Any]  # strings, and the `builder` table
    trace: dict[str, Any]
    instances: tuple[Instance, ...]
    note: str = ""
    # weights fingerprints a scan matches the bundle's files by (optional)
    fingerprints: frozenset[str] = frozenset()
    # The coreai-core runtimes the bundle must load on, as the registry states them (per bundle,
    # else for the whole inventory in [deploy]); empty: not stated, the default applies.
    runtimes: tuple[str, ...] = ()
    runtimes_source: str = ""
    # the recipe's export pipeline as recorded (`[bundles.X.pipeline]`): beside the probe's
    # `pipeline` fields, the export steps (grad, autocast, convert, names, ...)
    export: dict[str, Any] = field(default_factory=dict)
    # a project target standing in for the recipe, and its stated differences (`[standin]`)
    standin: dict[str, Any] = field(default_factory=dict)
    # how `inventory verify` builds the whole bundle (`[bundles.X.verify]`, inventory.verify.forms)
    verify: dict[str, Any] = field(default_factory=dict)


# No model holds a million instances of one construct: a larger count is a typo, not a fact.
MAX_COUNT = 1_000_000
_BUNDLE_KEYS = (
    "files",
    "dtype",
    "exporter",
    "pipeline",
    "recipe",
    "trace",
    "instances",
    "note",
    "fingerprint",
    "fingerprints",
    "runtimes",
    "standin",
    "verify",
)
_INSTANCE_KEYS = ("kind", "params", "count", "dtype", "modules", "source", "producers")
# `[bundles.X.verify]` (inventory.verify.forms reads the form, chain.py its measured cost): a
# project target's miniature as `build` arguments, a recipe-built one as the builder's own
# `kwargs` and `inputs`; `run` the form run on the runtime, stated alike
VERIFY_KEYS = (
    "form",
    "why",
    "build",
    "kwargs",
    "inputs",
    "seconds_per_run",
    "cost_measured",
    "run",
)
VERIFY_RUN_KEYS = ("why", "build", "kwargs", "inputs", "seconds_per_run", "cost_measured")
_EXPORTER_KEYS = ("converter", "core", "source", "torch", "torch_source", "torch_check")


def _instance(fields: Fields, raw: Any, where: str) -> Instance:
    if not isinstance(raw, dict):
        fields.problem(f"{where} must be a table ([[bundles.NAME.instances]])")
    fields.keys(raw, _INSTANCE_KEYS, where)
    return Instance(
        # an unknown kind would never be probed: the bundle would answer "no" for it
        kind=fields.kind(raw, "kind", where),
        params=dict(fields.table(raw, "params", where, required=True)),
        count=fields.integer(raw, "count", where, 1, 1, MAX_COUNT),
        dtype=fields.dtype(raw, "dtype", where),
        # "" is the root module (a construct called in the model's own forward)
        modules=fields.strings(raw, "modules", where, blank=True),
        source=fields.text(raw, "source", where),
        # per module, the module whose tensors its probe also takes ("" for none)
        producers=fields.strings(raw, "producers", where, blank=True),
    )


def _runtimes(fields: Fields, raw: Any, where: str, catalog: Catalog) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) for r in raw):
        fields.problem(
            f"{where} runtimes must be a non-empty list of coreai-core releases "
            f'(e.g. ["1.0.0b2", "1.0.0b3"])'
        )
    for runtime in raw:
        try:
            parse_runtime(runtime, catalog)
        except EnvError as exc:
            fields.problem(f"{where} runtimes: {exc}")
    return tuple(raw)


def _torch_checked(fields: Fields, exp: dict[str, Any], where: str) -> str:
    """`[bundles.X.exporter.torch_check]` (written by scripts/torch-sensitivity) in one line."""
    check = fields.table(exp, "torch_check", where)
    if not check:
        return ""
    where = f"{where[:-1]}.torch_check]"
    probes = fields.integer(check, "probes", where, None, 0, 1_000_000)
    identical = fields.integer(check, "identical", where, None, 0, 1_000_000)
    return (
        f"{identical} of {probes} probes give the same program under coreai-torch "
        f"{fields.line(check, 'converter', where)} with the recipe's torch and with "
        f"{fields.line(check, 'against', where)} ({fields.line(check, 'evidence', where)})"
    )


def _bundle(
    fields: Fields, name: str, raw: Any, deploy: tuple[tuple[str, ...], str], catalog: Catalog
) -> Bundle:
    path = fields.path
    if not name.strip() or not name.isprintable():
        # a name is printed in every answer and error line: no newline or terminal escape
        fields.problem(f"bundle name {name!r} must be printable text on one line")
    where = f"[bundles.{name}]"
    if not isinstance(raw, dict):
        fields.problem(f"{where} must be a table, not {type(raw).__name__}")
    fields.keys(raw, _BUNDLE_KEYS, where)
    exp = fields.table(raw, "exporter", where, required=True)
    exp_where = f"[bundles.{name}.exporter]"
    fields.keys(exp, _EXPORTER_KEYS, exp_where)
    pipe = fields.table(raw, "pipeline", where)
    pipe_where = f"[bundles.{name}.pipeline]"
    fields.text(pipe, "decompositions", pipe_where, "coreai")
    instances = raw.get("instances", [])
    if not isinstance(instances, list):
        fields.fail(where, "instances", "an array of tables", instances)
    return Bundle(
        name=name,
        files=fields.strings(raw, "files", where, required=True),
        dtype=fields.dtype(raw, "dtype", where),
        exporter=Exporter(
            # a release of the catalog, or "unknown" (answered as the oldest, and said so)
            converter=fields.release(
                exp, "converter", exp_where, catalog.releases, also=(UNKNOWN,)
            ),
            core=fields.choice(
                exp,
                "core",
                exp_where,
                (*cores(catalog), UNKNOWN),
                UNKNOWN,
                what="a coreai-core release in converters.toml",
            ),
            source=fields.text(exp, "source", exp_where),
            torch=fields.line(exp, "torch", exp_where, ""),
            torch_source=fields.text(exp, "torch_source", exp_where, ""),
            torch_checked=_torch_checked(fields, exp, exp_where),
        ),
        pipeline=Pipeline(
            decompositions=fields.choice(
                pipe, "decompositions", pipe_where, DECOMPOSITIONS, "coreai"
            ),
            optimize=fields.boolean(pipe, "optimize", pipe_where, True),
            shapes=fields.choice(pipe, "shapes", pipe_where, SHAPES, "static"),
            # the ops the recipe takes out of its table (kept whole for their lowering): an
            # instance is probed under the table its recipe really uses
            keep=fields.aten_overloads(pipe, "keep", pipe_where),
        ),
        recipe=dict(fields.table(raw, "recipe", where)),
        trace=dict(fields.table(raw, "trace", where)),
        instances=tuple(
            _instance(fields, inst, f"{where} instance {i}")
            for i, inst in enumerate(instances, start=1)
        ),
        note=fields.text(raw, "note", where, ""),
        fingerprints=_fingerprints(fields, raw, where),
        runtimes=(
            _runtimes(fields, raw["runtimes"], where, catalog) if "runtimes" in raw else deploy[0]
        ),
        runtimes_source=f"{path.name} {where} runtimes" if "runtimes" in raw else deploy[1],
        export=dict(pipe),
        standin=dict(fields.table(raw, "standin", where)),
        verify=_verify(fields, raw, name),
    )


def _verify(fields: Fields, raw: dict[str, Any], name: str) -> dict[str, Any]:
    """`[bundles.X.verify]` with its keys checked: a misspelt one (`kwarg`) would otherwise be
    ignored, and the full module built where a miniature was meant."""
    table = fields.table(raw, "verify", f"[bundles.{name}]")
    fields.keys(table, VERIFY_KEYS, f"[bundles.{name}.verify]")
    run = table.get("run")
    if isinstance(run, dict):
        fields.keys(run, VERIFY_RUN_KEYS, f"[bundles.{name}.verify.run]")
    return dict(table)


def _fingerprints(fields: Fields, raw: dict[str, Any], where: str) -> frozenset[str]:
    """Optional `fingerprint`/`fingerprints`: a string, a list, or a table file -> fingerprint."""
    values: set[str] = set()
    for key in ("fingerprint", "fingerprints"):
        value = raw.get(key)
        if value is None:
            continue
        found: list[Any] = (
            [value]
            if isinstance(value, str)
            else value
            if isinstance(value, list)
            else list(value.values())
            if isinstance(value, dict)
            else [None]
        )
        if not all(isinstance(v, str) for v in found):
            fields.fail(where, key, "a string, a list of strings or a table of strings", value)
        values |= set(found)
    return frozenset(values)


def load_registry(path: Path = DEFAULT_REGISTRY) -> list[Bundle]:
    """Every bundle, each value checked (oracle.catalog.schema): an unknown construct kind or
    dtype, a
    release or runtime the catalog does not know, a misspelt key or a value of the wrong type
    is one line naming the file, the table and the key. Read from the parsed registry's cache
    (`registry_cache`) when the file, this code and the catalog are those it was parsed with."""
    text = read_text(path, RegistryError)
    catalog = load_catalog()
    return cached(
        path,
        text,
        f"{path}\0{catalog!r}",
        lambda: _parsed(path, text, catalog),
        (Bundle, Exporter, Instance, Pipeline),
    )


def _parsed(path: Path, text: str, catalog: Catalog) -> list[Bundle]:
    data = parse_toml(text, path, RegistryError)
    fields = Fields(path, RegistryError)
    fields.keys(data, ("bundles", "deploy"), "the file")
    bundles = data.get("bundles")
    if not isinstance(bundles, dict) or not bundles:
        raise RegistryError(f"{path}: no [bundles.<name>] tables")
    deploy: tuple[tuple[str, ...], str] = ((), "")
    if "deploy" in data:
        table = data["deploy"]
        if not isinstance(table, dict) or "runtimes" not in table:
            raise RegistryError(f"{path}: [deploy] lacks 'runtimes'")
        fields.keys(table, ("runtimes",), "[deploy]")
        deploy = (
            _runtimes(fields, table["runtimes"], "[deploy]", catalog),
            f"{path.name} [deploy] runtimes",
        )
    return [_bundle(fields, name, raw, deploy, catalog) for name, raw in bundles.items()]


def select(bundles: list[Bundle], names: list[str] | None) -> list[Bundle]:
    if not names:
        return bundles
    known = {b.name: b for b in bundles}
    names = list(dict.fromkeys(names))  # `-b mimi -b mimi` asks for mimi once
    missing = [n for n in names if n not in known]
    if missing:
        raise RegistryError(
            f"bundle {missing[0]!r} is not in the registry (known: {', '.join(sorted(known))})"
        )
    return [known[n] for n in names]
