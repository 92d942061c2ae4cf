"""Run `inventory verify` for each (bundle, --to) pair and keep its JSON in evidence/verify/.

Usage: scripts/verify-bundles [--fixes FILE] [BUNDLE:TO ...]
  (default: the done-when sets of issues #13 and #24; with --fixes, e.g. a draft database, the
  JSON is written as <bundle>-<to>-<draft name>.json)
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

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "evidence" / "verify"
DEFAULT = ["mimi:0.4.2", "mimi:0.4.3", "sortformer:0.4.2", "parakeet:0.4.2", "sam3:0.4.2",
           "lfm_audio:0.4.2"]


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    fixes: list[str] = []
    suffix = ""
    if argv[:1] == ["--fixes"]:
        fixes, argv = argv[:2], argv[2:]
        suffix = "-" + Path(fixes[1]).stem
    worst = 0
    for pair in argv or DEFAULT:
        bundle, _, to = pair.partition(":")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "inventory.cli", "verify", bundle, "--to",
                               to, *fixes, "--json", "-q"], capture_output=True, text=True,
                              cwd=ROOT)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 / 1024
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            print(f"{pair}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            worst = max(worst, 4)
            continue
        (OUT / f"{bundle}-{to}{suffix}.json").write_text(json.dumps(data, indent=1) + "\n")
        for b in data.get("bundles", []):
            print(f"{pair}: exit {proc.returncode}, {b['status']}: {b['answer']}")
            print(f"  wall {wall:.0f} s (measured once: {b['seconds'] or 0:.0f} s), peak "
                  f"{(b['peak_mb'] or 0) / 1024:.2f} GB per process (largest child so far "
                  f"{peak:.2f} GB); stored: {b['cached']}")
            for row in (b.get("run") or {}).get("outputs", []):
                print(f"  {row['output']}: old {row['maxabs_old']:.3g} (rel {row['rel_old']:.3g}),"
                      f" new {row['maxabs_new']:.3g} (rel {row['rel_new']:.3g}), |old-new| "
                      f"{row['maxabs_old_new']:.3g}")
            for step in b.get("steps", []):
                print(f"  step {step['step']}: shipped {(step['shipped'] or {}).get('identity')},"
                      f" {step['regions']} region(s), {step['unrecorded_regions']} unrecorded")
            for u in b.get("unrecorded", []):
                print(f"  UNRECORDED {u['step']} {u['stage']}: {u['regions']} region(s), "
                      f"{', '.join(u['coreai_ops'])}; {u['reexport']}")
            for line in b["inconsistencies"] + b["limitations"]:
                print(f"  {line}")
        worst = max(worst, proc.returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
