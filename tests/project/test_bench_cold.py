"""`scripts/bench --cold` prints each clone's timeline beside its phases
(`scripts/bench_cold.py`, `timeline`): when each environment was ready, when the bytecode
warm-ups ran, when each worker started and fell idle, and when the answer was done, in order.
A clone's progress lines and sampled processes stand in for a run here (a cold run takes
minutes and downloads torch): what is tested is what the timeline makes of them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _bench_cold() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_cold_script", ROOT / "scripts" / "bench_cold.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_timeline_shows_a_worker_held_back_after_its_environment_was_ready() -> None:
    bench = _bench_cold()
    envs = "/c/cache/envs"
    side = bench.Side("uv's cache warm", wall=71.0)
    side.lines = [
        (3.0, "installing inventory into /c/clone/.venv with uv 0.13.9 (no extras)"),
        (9.0, "torch-2.13.0: ready"),
        (20.0, "coreai-torch-0.4.1: creating (uv 0.13.9)"),
        (24.0, "coreai-torch-0.4.1: ready"),
        (70.0, "mimi: 2 steps, 5 probes"),
    ]
    side.procs = {
        10: bench.Proc(f"python -I warm_up_torch.py {envs}/torch-2.13.0/site", 1, 9.1, 34.0, 8.7),
        11: bench.Proc(
            f"{envs}/coreai-torch-0.4.1/bin/python -u probe_worker.py", 1, 34.2, 70.0, 5.0, 69.0
        ),
        12: bench.Proc(
            f"{envs}/coreai-torch-0.4.1/bin/python -u probe_worker.py", 11, 34.5, 70.0, 0.1
        ),
    }
    assert bench.timeline(side) == [
        (9.0, "torch-2.13.0 ready"),
        (9.1, "bytecode warm-up (held torch's) starts"),
        (24.0, "coreai-torch-0.4.1 ready"),
        (34.0, "bytecode warm-up (held torch's) ends, 8.7 CPU-s"),
        (34.2, "coreai-torch-0.4.1: worker starts"),
        (69.0, "coreai-torch-0.4.1: worker idle (started in 34.8 s)"),
        (70.0, "last bundle answered"),
        (71.0, "first answer (wall)"),
    ]
