"""Release day with nothing written by hand, measured: discovery of a release the catalog lacks,
and drafted records against the curated ones (`scripts/release-day`).

    scripts/release-day discover
        A copy of the packaged catalog without its newest release: `inventory envs discover`
        with it, then `plan --to NEWEST` with the copy and with the packaged catalog, compared
        bundle by bundle. The discovered record is kept in a scratch cache that borrows the
        environments (results stay in the store), so the cache is left as it was. Writes
        evidence/release-day/discover-<newest>.json.

    scripts/release-day draft --from A --to B [--repo DIR]
        `inventory draft --from A --to B [--repo DIR --allow-code] --against
        oracle/catalog/fixes.toml`
        (the draft kept as evidence/release-day/draft-<A>-<B>.toml), then `plan --to B` with
        the curated records and with the draft, compared bundle by bundle: the level, and the
        records that set it by pull request (an id that is a number, an alias, the pull request
        an upstream address names; a record without one by its id). Writes
        evidence/release-day/draft-<A>-<B>.json.

Every command runs through the CLI (`python -m inventory.cli ... --json -q`) on the default
store; every document is made portable (oracle/infra/portable_paths.py) before it is written, the
repository named by what it is (`--repo-name`, default apple/coreai-torch). Exit 1 when a bundle's
level (or, with a repository, its records by pull request) differs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inventory.draft.against import prs_of  # noqa: E402
from oracle.catalog.fixes import FIXES_FILE, load_fixes  # noqa: E402
from oracle.catalog.releases import CATALOG_FILE, load_catalog, version_key  # noqa: E402
from oracle.infra.paths import envs_dir, store_root  # noqa: E402
from oracle.infra.portable_paths import absolute_paths, portable  # noqa: E402

OUT = ROOT / "evidence" / "release-day"
LEVEL_KEYS = {
    "required": "required",
    "inconclusive": "inconclusive",
    "optional": "optional",
    "no": "not_affected",
}


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], float]:
    """Exit code, the JSON envelope (the answer under `result`) and seconds."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", *args, "--json", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(
            f"inventory {' '.join(args)}: exit {proc.returncode}, no JSON: "
            f"{proc.stderr.strip()[-500:]}"
        ) from None
    return proc.returncode, doc, round(time.monotonic() - started, 1)


def setting(plan: dict[str, Any], fixes: Path) -> dict[str, dict[str, Any]]:
    """Per bundle: its level, the records at that level (none for "no") and their pull
    requests, and the changes no record explains that count in it."""
    by_id = {f.id: f for f in load_fixes(fixes)}
    out = {}
    for b in plan["bundles"]:
        level = b["reexport"]
        items = [] if level == "no" else b[LEVEL_KEYS[level]]
        ids = [i["fix"] for i in items]
        prs = sorted({p for i in ids for p in (prs_of(by_id[i]) or (i,))})
        unexplained = sorted(
            {f"{u['construct']} ({u['step']})" for u in b["unexplained"] if u["reexport"] == level}
        )
        out[b["bundle"]] = {"level": level, "records": ids, "prs": prs, "unexplained": unexplained}
    return out


def compared(curated: dict[str, Any], drafted: dict[str, Any], by_pr: bool) -> dict[str, Any]:
    rows = []
    for bundle, c in curated.items():
        d = drafted[bundle]
        rows.append(
            {
                "bundle": bundle,
                "curated": c,
                "draft": d,
                "same_level": c["level"] == d["level"],
                "same_records_by_pr": c["prs"] == d["prs"] and c["unexplained"] == d["unexplained"],
            }
        )
    return {
        "bundles": rows,
        "every_level_same": all(r["same_level"] for r in rows),
        "every_record_set_same_by_pr": all(r["same_records_by_pr"] for r in rows)
        if by_pr
        else None,
    }


# A local package source pip's configuration names (`file:///srv/simple`), or the interpreter
# whose configuration was read: under no root `portable` knows, and only this machine's.
FILE_URL = re.compile(r"file://(/[^\s\"'(),;]+)")


def machine_free(text: str) -> str:
    """`text` with the paths only this machine has (local package sources, its interpreter)
    written as `<machine path>`: the evidence says that a local source was read, not where."""
    text = FILE_URL.sub("file://<machine path>", text)
    for path in sorted(set(absolute_paths(text)), key=len, reverse=True):
        text = text.replace(path, "<machine path>")
    return text


def write(name: str, doc: dict[str, Any], named: dict[Path, str]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    path.write_text(machine_free(json.dumps(portable(doc, named), indent=1)) + "\n")
    return path


def discover(args: argparse.Namespace) -> int:
    releases = sorted(load_catalog(discovered=False).releases, key=version_key)
    newest = releases[-1]
    text = CATALOG_FILE.read_text()
    start = text.index(f'[converters."{newest}"]')
    end = text.find("[converters.", start + 1)
    with tempfile.TemporaryDirectory(prefix="release-day-") as tmp:
        copy = Path(tmp) / "converters-without-newest.toml"
        copy.write_text(text[:start] + (text[end:] if end != -1 else ""))
        cache = Path(tmp) / "cache"
        cache.mkdir()
        (cache / "envs").symlink_to(envs_dir())
        env = {"INVENTORY_CACHE": str(cache), "INVENTORY_STORE": str(store_root())}
        code, found, took = cli("envs", "discover", "--catalog", str(copy), env=env)
        listed = subprocess.run(
            [sys.executable, "-m", "inventory.cli", "envs", "list", "--catalog", str(copy)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **env},
        ).stdout
        plans = {}
        for name, extra in (("packaged", ()), ("copy", ("--catalog", str(copy)))):
            p_code, plan, p_took = cli("plan", "--to", newest, *extra, env=env)
            plans[name] = {"exit": p_code, "seconds": p_took, "bundles": plan["result"]["bundles"]}
        named = {Path(tmp): "<scratch>"}
    same = plans["packaged"]["bundles"] == plans["copy"]["bundles"]
    doc = {
        "removed": newest,
        "discover": {"exit": code, "seconds": took, "result": found.get("result")},
        "envs_list": [ln for ln in listed.splitlines() if ln.startswith(f"coreai-torch-{newest}:")],
        "plans": {
            k: {
                "exit": v["exit"],
                "seconds": v["seconds"],
                "levels": {b["bundle"]: b["reexport"] for b in v["bundles"]},
            }
            for k, v in plans.items()
        },
        "same_plan_document_per_bundle": same,
    }
    print(f"wrote {write(f'discover-{newest}.json', doc, named)}; same plan: {same}")
    return 0 if same and code == 0 else 1


def draft(args: argparse.Namespace) -> int:
    a, b = args.old, args.new
    toml = OUT / f"draft-{a}-{b}.toml"
    OUT.mkdir(parents=True, exist_ok=True)
    repo = ["--repo", str(args.repo), "--allow-code"] if args.repo else []
    code, drafted, took = cli(
        "draft", "--from", a, "--to", b, *repo, "-o", str(toml), "--against", str(FIXES_FILE)
    )
    plans = {}
    for name, fixes in (("curated", FIXES_FILE), ("draft", toml)):
        p_code, plan, p_took = cli("plan", "--to", b, "--fixes", str(fixes))
        plans[name] = (p_code, plan, p_took, fixes)
    result = compared(
        setting(plans["curated"][1]["result"], FIXES_FILE),
        setting(plans["draft"][1]["result"], toml),
        by_pr=bool(args.repo),
    )
    drafted = drafted.get("result") or {}
    drafted.pop("toml", None)  # kept beside it, as the file itself
    named = {args.repo: args.repo_name} if args.repo else {}
    doc = {
        "from": a,
        "to": b,
        "history": bool(args.repo),
        "draft": {"exit": code, "seconds": took, "result": drafted},
        "plans": {k: {"exit": v[0], "seconds": v[2]} for k, v in plans.items()},
        "comparison": result,
    }
    toml.write_text(machine_free(portable(toml.read_text(), named)))
    path = write(f"draft-{a}-{b}.json", doc, named)
    print(
        f"wrote {path} and {toml}: every level same: {result['every_level_same']}; records "
        f"by pull request same: {result['every_record_set_same_by_pr']}"
    )
    ok = result["every_level_same"] and result["every_record_set_same_by_pr"] is not False
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("discover")
    d = sub.add_parser("draft")
    d.add_argument("--from", dest="old", required=True)
    d.add_argument("--to", dest="new", required=True)
    d.add_argument("--repo", type=lambda s: Path(s).expanduser().resolve())
    d.add_argument("--repo-name", default="apple/coreai-torch")
    args = parser.parse_args()
    return discover(args) if args.what == "discover" else draft(args)


if __name__ == "__main__":
    raise SystemExit(main())
