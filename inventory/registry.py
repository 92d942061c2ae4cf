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


def _need(table: dict[str, Any], key: str, where: str, path: Path) -> Any:
    if key not in table:
        raise RegistryError(f"{path}: {where} lacks '{key}'")
    return table[key]


def _instance(raw: dict[str, Any], where: str, path: Path) -> Instance:
    return Instance(
        kind=str(_need(raw, "kind", where, path)),
        params=dict(_need(raw, "params", where, path)),
        count=int(raw.get("count", 1)),
        dtype=str(_need(raw, "dtype", where, path)),
        modules=tuple(raw.get("modules", [])),
        source=str(_need(raw, "source", where, path)),
        producers=tuple(raw.get("producers", [])),
    )


def _runtimes(raw: Any, where: str, path: Path) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(r, str) for r in raw):
        raise RegistryError(f"{path}: {where} runtimes must be a non-empty list of coreai-core "
                            f"releases (e.g. [\"1.0.0b2\", \"1.0.0b3\"])")
    return tuple(raw)


def _bundle(name: str, raw: dict[str, Any], path: Path,
            deploy: tuple[tuple[str, ...], str]) -> Bundle:
    where = f"[bundles.{name}]"
    exp = _need(raw, "exporter", where, path)
    pipe = raw.get("pipeline", {})
    if pipe.get("decompositions", "coreai") not in ("coreai", "default", "none"):
        raise RegistryError(f"{path}: {where} pipeline.decompositions must be coreai, default "
                            f"or none, not {pipe['decompositions']!r}")
    return Bundle(
        name=name,
        files=tuple(_need(raw, "files", where, path)),
        dtype=str(_need(raw, "dtype", where, path)),
        exporter=Exporter(
            converter=str(_need(exp, "converter", f"{where} exporter", path)),
            core=str(exp.get("core", UNKNOWN)),
            source=str(_need(exp, "source", f"{where} exporter", path)),
        ),
        pipeline=Pipeline(
            decompositions=pipe.get("decompositions", "coreai"),
            optimize=bool(pipe.get("optimize", True)),
            shapes=pipe.get("shapes", "static"),
        ),
        recipe=dict(raw.get("recipe", {})),
        trace=dict(raw.get("trace", {})),
        instances=tuple(
            _instance(inst, f"{where} instance {i}", path)
            for i, inst in enumerate(raw.get("instances", []), start=1)
        ),
        note=str(raw.get("note", "")),
        fingerprints=_fingerprints(raw),
        runtimes=_runtimes(raw["runtimes"], where, path) if "runtimes" in raw else deploy[0],
        runtimes_source=f"{path.name} {where} runtimes" if "runtimes" in raw else deploy[1],
        export=dict(pipe),
        standin=dict(raw.get("standin", {})),
    )


def _fingerprints(raw: dict[str, Any]) -> frozenset[str]:
    """Optional `fingerprint`/`fingerprints`: a string, a list, or a table file -> fingerprint."""
    values: set[str] = set()
    for key in ("fingerprint", "fingerprints"):
        value = raw.get(key)
        if isinstance(value, str):
            values.add(value)
        elif isinstance(value, list):
            values |= {str(v) for v in value}
        elif isinstance(value, dict):
            values |= {str(v) for v in value.values()}
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
    missing = [n for n in names if n not in known]
    if missing:
        raise RegistryError(f"bundle {missing[0]!r} is not in the registry "
                            f"(known: {', '.join(sorted(known))})")
    return [known[n] for n in names]
