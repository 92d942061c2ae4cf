"""Scratch folders in the store, never in the system temp directory: named `<pid>-<kind>-...`
under the store's `tmp/` like a worker's temp folder, removed when done, and a killed run's
reclaimed by the next run and by `cache prune` (`client.reclaim_temp`: its pid is gone)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oracle.infra.paths import TEMP, cache_root, in_store


@contextmanager
def scratch(kind: str) -> Iterator[Path]:
    folder = in_store(cache_root() / TEMP / f"{os.getpid()}-{kind}-{secrets.token_hex(4)}")
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# torch's scratch that would go to the system temp directory or the home folder: the inductor's
# compile cache (`torchinductor_<user>` under TMPDIR by default; torch.export's decompositions
# create it), compiled extensions and triton's kernels
TORCH_SCRATCH = {
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TRITON_CACHE_DIR": "triton",
}


def scratch_environ(tmp: Path) -> dict[str, str]:
    """The environment of a process the tool starts, whose scratch is the folder `tmp` of the
    store (removed when the process is done): TMPDIR, and torch's scratch (`TORCH_SCRATCH`)
    in folders under it."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    for variable, name in TORCH_SCRATCH.items():
        env[variable] = str(tmp / name)
    return env


def warm_up_dir() -> Path:
    """A scratch folder of the store for a process that outlives this call (removed by its
    owner; reclaimed with this process's others when it is gone)."""
    folder = in_store(cache_root() / TEMP / f"{os.getpid()}-warm-up-{secrets.token_hex(4)}")
    folder.mkdir(parents=True)
    return folder
