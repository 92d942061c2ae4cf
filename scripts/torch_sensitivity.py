"""Does the torch a recipe ran on change what the converter makes of the registry's probes?

Opt-in and never in CI: it needs another torch (PyPI's Linux x86_64 wheels of 2.9.0 and 2.11.0
are CUDA builds: 2.9.0 is a 4.1 GB download with its CUDA libraries, 6.7 GB on disk). Every
registry probe (each traced instance's probe, as `affected` builds it) is converted under its
bundle's exporter release twice, in two environments that differ only in torch: the shared torch
(the oracle's) and `--torch` (an exporter's). Each pair goes through the oracle's own comparison:
the same probe module on both sides (digests), the aten text byte for byte, and the emitted and
shipped programs after normalisation (measured on the runtime if they differ). Results are kept in
the result store; a summary goes to $INVENTORY_CACHE/runs/torch-sensitivity-<torch>.json, and with
`--write` into the registry (per bundle that ran on that torch) and `oracle/catalog/converters.toml`
([torch.checked]).

    scripts/torch-sensitivity --torch 2.9.0 [--torch-dir DIR] [--write]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tomli_w  # noqa: E402

from inventory.instances import instance_spec  # noqa: E402 - the probes `affected` builds
from inventory.registry import (  # noqa: E402
    DEFAULT_REGISTRY,
    Bundle,
    exporter_release,
    load_registry,
)
from inventory.trace.service import HEADER  # noqa: E402
from oracle.catalog.releases import CATALOG_FILE, load_catalog  # noqa: E402
from oracle.clients.worker_pool import Pool  # noqa: E402
from oracle.compare.results import Identity  # noqa: E402
from oracle.constructs import has_probe  # noqa: E402
from oracle.envs.environment import Env, ensure_env, ensure_env_on_torch, torch_install  # noqa: E402
from oracle.executors.comparison import compare  # noqa: E402
from oracle.infra.paths import cache_root  # noqa: E402
from oracle.infra.portable_paths import portable  # noqa: E402


def torch_site(version: str, torch_dir: Path | None) -> Path:
    """An existing install of torch==version (`--torch-dir`, checked), else one made with pip
    (with its dependencies: a CUDA build imports only beside its CUDA libraries)."""
    if torch_dir is None:
        return torch_install(version, f"torch-{version}-measured", [], print)
    found = re.search(r"__version__ = '([^']+)'", (torch_dir / "torch" / "version.py").read_text())
    if not found or found.group(1).split("+")[0] != version:
        sys.exit(
            f"--torch-dir {torch_dir} holds torch {found.group(1) if found else '?'}, not {version}"
        )
    return torch_dir


def probes_of(bundle: Bundle) -> list[Any]:
    return [instance_spec(bundle, i) for i in bundle.instances if has_probe(i.kind)]


def same_aten(a: dict[str, str], b: dict[str, str]) -> bool:
    return Path(a["aten"]).read_bytes() == Path(b["aten"]).read_bytes()


def run(version: str, torch_dir: Path | None, registry: Path) -> dict[str, Any]:
    catalog = load_catalog()
    site = torch_site(version, torch_dir)
    bundles = load_registry(registry)
    envs: dict[str, tuple[Env, Env]] = {}
    rows = []
    started = time.monotonic()
    with Pool(cache_root() / "logs", log_suffix="torch-sensitivity") as pool:
        for bundle in bundles:
            converter, _ = exporter_release(bundle.exporter, catalog)
            if converter not in envs:
                envs[converter] = (
                    ensure_env(converter, catalog, print),
                    ensure_env_on_torch(
                        converter,
                        f"measured-coreai-torch-{converter}-torch-{version}",
                        site,
                        catalog,
                        print,
                    ),
                )
            shared, other = envs[converter]
            for spec in probes_of(bundle):
                row: dict[str, Any] = {
                    "bundle": bundle.name,
                    "converter": converter,
                    "probe": spec.label(),
                    "key": spec.key(),
                }
                try:
                    result = compare(spec, shared, other, pool)
                except RuntimeError as exc:  # the two torches built different probe modules
                    row.update(identical=False, error=str(exc))
                    rows.append(row)
                    continue
                ok = result.old.ok and result.new.ok
                row.update(
                    aten="identical"
                    if ok and same_aten(result.old.files, result.new.files)
                    else "differs",
                    emitted=result.emitted,
                    shipped=result.shipped,
                    outputs=result.outputs,
                    digest_equal=ok and result.old.digest == result.new.digest,
                    evidence=result.evidence,
                )
                row["identical"] = (
                    row["aten"] == "identical"
                    and row["digest_equal"]
                    and result.emitted == Identity.IDENTICAL
                    and result.shipped == Identity.IDENTICAL
                )
                rows.append(row)
                print(
                    f"{bundle.name:10} {converter} aten {row['aten']:9} emitted "
                    f"{row['emitted']:9} shipped {row['shipped']:9} {spec.label()}",
                    flush=True,
                )
    torches = {c: (s.packages["torch"], o.packages["torch"]) for c, (s, o) in envs.items()}
    return {
        "torch": version,
        "against": catalog.torch,
        "torches": torches,
        "date": date.today().isoformat(),
        "seconds": round(time.monotonic() - started, 1),
        "rows": rows,
    }


def summary_path(version: str) -> Path:
    return cache_root() / "runs" / f"torch-sensitivity-{version}.json"


EVIDENCE_DIR = ROOT / "evidence"


def write(result: dict[str, Any], registry: Path, catalog_file: Path) -> None:
    """Record the measurement: the per-probe summary in evidence/, and per bundle whose recorded
    exporter torch it is, and the catalog's [torch.checked."V"] that environment deviations
    cite."""
    version, rows = result["torch"], result["rows"]
    kept = EVIDENCE_DIR / f"torch-sensitivity-{version}.json"
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(json.dumps(portable(result), indent=1) + "\n")
    evidence = (
        f"scripts/torch-sensitivity --torch {version}, {result['date']}; per probe: "
        f"{kept.relative_to(ROOT)}"
    )
    data = tomllib.loads(registry.read_text())
    for name, raw in data["bundles"].items():
        if raw["exporter"].get("torch") != version:
            continue
        mine = [r for r in rows if r["bundle"] == name]
        raw["exporter"]["torch_check"] = {
            "against": result["against"],
            "converter": mine[0]["converter"] if mine else "",
            "probes": len(mine),
            "identical": sum(r["identical"] for r in mine),
            "evidence": evidence,
        }
    registry.write_text(HEADER + tomli_w.dumps(data, multiline_strings=False))
    converters = sorted({r["converter"] for r in rows})
    table = (
        f'[torch.checked."{version}"]\n'
        f"# measured by scripts/torch-sensitivity: every registry probe converted under its\n"
        f"# bundle's exporter with torch {version} and with the shared torch\n"
        f'against = "{result["against"]}"\n'
        f"converters = {json.dumps(converters)}\n"
        f"probes = {len(rows)}\n"
        f"identical = {sum(r['identical'] for r in rows)}\n"
        f'evidence = "{evidence}"\n'
    )
    text = catalog_file.read_text()
    text = re.sub(
        rf'\n\[torch\.checked\."{re.escape(version)}"\]\n(?:[^\[].*\n|\n)*?(?=\n\[|\Z)', "\n", text
    )
    anchor = text.index("\n[converters.")
    catalog_file.write_text(text[:anchor] + "\n" + table + text[anchor:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", required=True, help="the exporter's torch, e.g. 2.9.0")
    parser.add_argument(
        "--torch-dir",
        type=Path,
        help="reuse an install of that torch (a pip --target folder) instead of downloading it",
    )
    parser.add_argument("--registry", type=Path, default=DEFAULT_REGISTRY)
    parser.add_argument(
        "--write",
        action="store_true",
        help="record the result in the registry and oracle/catalog/converters.toml",
    )
    args = parser.parse_args()
    result = run(args.torch, args.torch_dir, args.registry)
    path = summary_path(args.torch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    rows = result["rows"]
    same = sum(r["identical"] for r in rows)
    print(
        f"torch {args.torch} vs {result['against']}: {same} of {len(rows)} probes identical "
        f"(aten text, probe digest, emitted and shipped programs); "
        f"{result['seconds']} s; per probe: {path}"
    )
    for r in rows:
        if not r["identical"]:
            print(f"  differs: {r['bundle']} {r['probe']}: {r.get('error') or r}")
    if args.write:
        write(result, args.registry, CATALOG_FILE)
        print(f"recorded in {args.registry} and {CATALOG_FILE}")


if __name__ == "__main__":
    main()
