"""The registry of shipped bundles (`recipes.toml`): what each bundle is and how it was exported."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inventory.errors import RegistryError
from oracle.envs import Catalog
from oracle.spec import Pipeline
from oracle.tomlfile import read_toml

DEFAULT_REGISTRY = Path(__file__).resolve().parent.parent / "recipes.toml"
UNKNOWN = "unknown"

__all__ = ["UNKNOWN", "Bundle", "Exporter", "Instance", "RegistryError", "exporter_release",
           "load_registry", "select"]


@dataclass(frozen=True)
class Exporter:
    converter: str  # a release, or "unknown"
    core: str
    source: str  # where that fact comes from


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
    recipe: dict[str, str]
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


def _need(table: dict[str, Any], key: str, where: str, path: Path) -> Any:
    if key not in table:
        raise RegistryError(f"{path}: {where} lacks '{key}'")
    return table[key]


def _wrong(path: Path, where: str, key: str, what: str, value: Any) -> RegistryError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return RegistryError(f"{path}: {where} {key} must be {what}, not {shown}")


def _text(table: dict[str, Any], key: str, where: str, path: Path,
          default: str | None = None) -> str:
    """A non-empty string field (required unless it has a default)."""
    value = _need(table, key, where, path) if default is None else table.get(key, default)
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise _wrong(path, where, key, "a non-empty string" if default is None else "a string",
                     value)
    return value


def _table(table: dict[str, Any], key: str, where: str, path: Path,
           required: bool = False) -> dict[str, Any]:
    value = _need(table, key, where, path) if required else table.get(key, {})
    if not isinstance(value, dict):
        raise _wrong(path, where, key, "a table", value)
    return value


def _strings(table: dict[str, Any], key: str, where: str, path: Path,
             required: bool = False) -> tuple[str, ...]:
    """A list of non-empty strings; a required one must not be empty either."""
    value = _need(table, key, where, path) if required else table.get(key, [])
    if (not isinstance(value, list) or (required and not value)
            or not all(isinstance(v, str) and v.strip() for v in value)):
        what = "a non-empty list of strings" if required else "a list of strings"
        raise _wrong(path, where, key, what, value)
    return tuple(value)


def _count(raw: dict[str, Any], where: str, path: Path) -> int:
    value = raw.get("count", 1)
    # bool is an int to Python, never a count to a reader
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise _wrong(path, where, "count", f"a whole number from 1 to {MAX_COUNT}", value)
    return value


def _instance(raw: Any, where: str, path: Path) -> Instance:
    if not isinstance(raw, dict):
        raise RegistryError(f"{path}: {where} must be a table ([[bundles.NAME.instances]])")
    return Instance(
        kind=_text(raw, "kind", where, path),
        params=dict(_table(raw, "params", where, path, required=True)),
        count=_count(raw, where, path),
        dtype=_text(raw, "dtype", where, path),
        # "" is the root module (a construct called in the model's own forward)
        modules=tuple(_strings_or_blank(raw, "modules", where, path)),
        source=_text(raw, "source", where, path),
        producers=tuple(_strings_or_blank(raw, "producers", where, path)),
    )


def _strings_or_blank(raw: dict[str, Any], key: str, where: str, path: Path) -> list[str]:
    """Per module, a name or "" (the root module; for producers: a module with none)."""
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _wrong(path, where, key, "a list of strings", value)
    return value


def _runtimes(raw: Any, where: str, path: Path) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) for r in raw):
        raise RegistryError(f"{path}: {where} runtimes must be a non-empty list of coreai-core "
                            f"releases (e.g. [\"1.0.0b2\", \"1.0.0b3\"])")
    return tuple(raw)


def _bundle(name: str, raw: Any, path: Path,
            deploy: tuple[tuple[str, ...], str]) -> Bundle:
    if not name.strip() or not name.isprintable():
        # a name is printed in every answer and error line: no newline or terminal escape
        raise RegistryError(f"{path}: bundle name {name!r} must be printable text on one line")
    where = f"[bundles.{name}]"
    if not isinstance(raw, dict):
        raise RegistryError(f"{path}: {where} must be a table, not {type(raw).__name__}")
    exp = _table(raw, "exporter", where, path, required=True)
    pipe = _table(raw, "pipeline", where, path)
    decompositions = _text(pipe, "decompositions", f"[bundles.{name}.pipeline]", path, "coreai")
    if decompositions not in ("coreai", "default", "none"):
        raise RegistryError(f"{path}: {where} pipeline.decompositions must be coreai, default "
                            f"or none, not {decompositions!r}")
    optimize = pipe.get("optimize", True)
    if not isinstance(optimize, bool):
        raise _wrong(path, f"[bundles.{name}.pipeline]", "optimize", "true or false", optimize)
    instances = raw.get("instances", [])
    if not isinstance(instances, list):
        raise _wrong(path, where, "instances", "an array of tables", instances)
    return Bundle(
        name=name,
        files=_strings(raw, "files", where, path, required=True),
        dtype=_text(raw, "dtype", where, path),
        exporter=Exporter(
            converter=_text(exp, "converter", f"[bundles.{name}.exporter]", path),
            core=_text(exp, "core", f"[bundles.{name}.exporter]", path, UNKNOWN),
            source=_text(exp, "source", f"[bundles.{name}.exporter]", path),
        ),
        pipeline=Pipeline(
            decompositions=decompositions,
            optimize=optimize,
            shapes=_text(pipe, "shapes", f"[bundles.{name}.pipeline]", path, "static"),
        ),
        recipe=dict(_table(raw, "recipe", where, path)),
        trace=dict(_table(raw, "trace", where, path)),
        instances=tuple(
            _instance(inst, f"{where} instance {i}", path)
            for i, inst in enumerate(instances, start=1)
        ),
        note=_text(raw, "note", where, path, ""),
        fingerprints=_fingerprints(raw, where, path),
        runtimes=_runtimes(raw["runtimes"], where, path) if "runtimes" in raw else deploy[0],
        runtimes_source=f"{path.name} {where} runtimes" if "runtimes" in raw else deploy[1],
        export=dict(pipe),
        standin=dict(_table(raw, "standin", where, path)),
        verify=dict(_table(raw, "verify", where, path)),
    )


def _fingerprints(raw: dict[str, Any], where: str, path: Path) -> frozenset[str]:
    """Optional `fingerprint`/`fingerprints`: a string, a list, or a table file -> fingerprint."""
    values: set[str] = set()
    for key in ("fingerprint", "fingerprints"):
        value = raw.get(key)
        if value is None:
            continue
        found = ([value] if isinstance(value, str) else value if isinstance(value, list)
                 else list(value.values()) if isinstance(value, dict) else [None])
        if not all(isinstance(v, str) for v in found):
            raise _wrong(path, where, key, "a string, a list of strings or a table of strings",
                         value)
        values |= set(found)
    return frozenset(values)


def load_registry(path: Path = DEFAULT_REGISTRY) -> list[Bundle]:
    data = read_toml(path, RegistryError)
    bundles = data.get("bundles")
    if not isinstance(bundles, dict) or not bundles:
        raise RegistryError(f"{path}: no [bundles.<name>] tables")
    deploy: tuple[tuple[str, ...], str] = ((), "")
    if "deploy" in data:
        table = data["deploy"]
        if not isinstance(table, dict) or "runtimes" not in table:
            raise RegistryError(f"{path}: [deploy] lacks 'runtimes'")
        deploy = (_runtimes(table["runtimes"], "[deploy]", path), f"{path.name} [deploy] runtimes")
    try:
        return [_bundle(name, raw, path, deploy) for name, raw in bundles.items()]
    except (TypeError, ValueError, AttributeError) as exc:
        raise RegistryError(f"{path}: malformed entry: {exc}") from None


def select(bundles: list[Bundle], names: list[str] | None) -> list[Bundle]:
    if not names:
        return bundles
    known = {b.name: b for b in bundles}
    names = list(dict.fromkeys(names))  # `-b mimi -b mimi` asks for mimi once
    missing = [n for n in names if n not in known]
    if missing:
        raise RegistryError(f"bundle {missing[0]!r} is not in the registry "
                            f"(known: {', '.join(sorted(known))})")
    return [known[n] for n in names]
