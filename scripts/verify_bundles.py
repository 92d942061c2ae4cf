"""Run `inventory verify` for each (bundle, --to) pair and keep its JSON in evidence/verify/.

Usage: scripts/verify-bundles [--fixes FILE] [BUNDLE:TO ...]
       scripts/verify-bundles --agree TO BUNDLE... [--fixes FILE]
  (default: every bundle to 0.4.2, and mimi to 0.4.3 too; with --fixes, e.g. a draft database, the
  JSON is written as <bundle>-<to>-<draft name>.json). --agree: `plan --to TO --verify --json`
  and `verify BUNDLE... --to TO --json` for the same bundles, compared field by field (one
  answer); both are written to evidence/verify/, and every field that differs is
  printed (exit 1 if one does).
Each run is a subprocess; its wall time and the peak resident memory of its processes (the
command and every worker it started, from the kernel's accounting of waited-for children) are
printed beside the answer.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from oracle.infra.portable_paths import portable

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "evidence" / "verify"
DEFAULT = [
    "mimi:0.4.2",
    "mimi:0.4.3",
    "sortformer:0.4.2",
    "parakeet:0.4.2",
    "sam3:0.4.2",
    "lfm_audio:0.4.2",
]


def _cli(*args: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", *args, "--json", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return proc.returncode, json.loads(proc.stdout)


def _differences(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b))
            for d in _differences(a.get(k), b.get(k), f"{path}/{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: plan {a!r} != verify {b!r}"]


def agree(to: str, bundles: list[str], fixes: list[str]) -> int:
    suffix = f"-{Path(fixes[1]).stem}" if fixes else ""
    v_code, verify = _cli("verify", *bundles, "--to", to, *fixes)
    p_code, plan = _cli(
        "plan", "--to", to, *[x for b in bundles for x in ("-b", b)], "--verify", *fixes
    )
    (OUT / f"verify-{to}{suffix}.json").write_text(json.dumps(portable(verify), indent=1) + "\n")
    (OUT / f"plan-{to}-verify{suffix}.json").write_text(json.dumps(portable(plan), indent=1) + "\n")
    differing = 0
    checked = {b["bundle"]: b for b in verify["result"]["bundles"]}
    for b in plan["result"]["bundles"]:
        diffs = _differences(b["verify"], checked.get(b["bundle"]))
        differing += bool(diffs)
        print(
            f"{b['bundle']}: plan {b['reexport']}, verify {b['verify']['status']} "
            f"{b['verify']['reexport']}, {len(b['verify']['unrecorded'])} unrecorded change(s); "
            f"{'the same record' if not diffs else f'{len(diffs)} field(s) differ'}"
        )
        for d in diffs[:20]:
            print(f"  {d}")
        for u in b["verify"]["unrecorded"]:
            moved = max((r["maxabs_old_new"] or 0 for r in u["drift"] or []), default=None)
            print(
                f"  unrecorded {u['step']} {u['stage']}: {u['regions']} region(s) "
                f"{', '.join(u['constructs']) or ', '.join(u['coreai_ops'])}, max|old-new| "
                f"{moved}, {u['reexport']}"
            )
    print(f"plan exit {p_code}, verify exit {v_code}")
    return 1 if differing else 0


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    if argv[:1] == ["--agree"]:
        rest = argv[2:]
        chosen = (
            rest[rest.index("--fixes") : rest.index("--fixes") + 2] if "--fixes" in rest else []
        )
        return agree(argv[1], [b for b in rest if b not in chosen], chosen)
    fixes: list[str] = []
    suffix = ""
    if argv[:1] == ["--fixes"]:
        fixes, argv = argv[:2], argv[2:]
        suffix = "-" + Path(fixes[1]).stem
    worst = 0
    for pair in argv or DEFAULT:
        bundle, _, to = pair.partition(":")
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "inventory.cli",
                "verify",
                bundle,
                "--to",
                to,
                *fixes,
                "--json",
                "-q",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 / 1024
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            print(f"{pair}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            worst = max(worst, 4)
            continue
        (OUT / f"{bundle}-{to}{suffix}.json").write_text(
            json.dumps(portable(data), indent=1) + "\n"
        )
        for b in (data.get("result") or {}).get("bundles", []):
            print(f"{pair}: exit {proc.returncode}, {b['status']}: {b['answer']}")
            print(
                f"  wall {wall:.0f} s (measured once: {b['seconds'] or 0:.0f} s), peak "
                f"{(b['peak_mb'] or 0) / 1024:.2f} GB per process (largest child so far "
                f"{peak:.2f} GB); stored: {b['cached']}"
            )
            for row in (b.get("run") or {}).get("outputs", []):
                print(
                    f"  {row['output']}: old {row['maxabs_old']:.3g} (rel {row['rel_old']:.3g}),"
                    f" new {row['maxabs_new']:.3g} (rel {row['rel_new']:.3g}), |old-new| "
                    f"{row['maxabs_old_new']:.3g}"
                )
            for step in b.get("steps", []):
                print(
                    f"  step {step['step']}: shipped {(step['shipped'] or {}).get('identity')},"
                    f" {step['regions']} region(s), {step['unrecorded_regions']} unrecorded"
                )
            for u in b.get("unrecorded", []):
                print(
                    f"  UNRECORDED {u['step']} {u['stage']}: {u['regions']} region(s), "
                    f"{', '.join(u['coreai_ops'])}; {u['reexport']}"
                )
            for line in b["inconsistencies"] + b["limitations"]:
                print(f"  {line}")
        worst = max(worst, proc.returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
