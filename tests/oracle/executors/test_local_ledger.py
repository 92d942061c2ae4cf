"""The local executor's ledger (`oracle/executors/local.py`, `runs/local/`): what each job waited
for lists the jobs that converted, not the reads of stored results (a warm plan reads about
three hundred in one batch, each after the ones before it: listed, its ledger was 2.5 MB). The
comparisons are answered by a stand-in for the store's read and for a conversion: what is tested
is the ledger the executor keeps of them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oracle.catalog import load_regimes
from oracle.clients.worker_pool import Pool
from oracle.envs.environment import Env
from oracle.executors.api import Comparison
from oracle.executors.local import LocalOracle


def _env(version: str) -> Env:
    path = Path("/nonexistent") / f"coreai-torch-{version}"
    packages = {"coreai-torch": version, "coreai-core": "1.0.0b2", "torch": "2.13.0"}
    return Env(version, "1.0.0b2", path, path / "bin" / "python", packages, ())


def test_a_job_waited_for_the_conversions_that_ended_not_the_stored_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = [r.spec for r in load_regimes()[:12]]
    converted = {specs[3].key(), specs[7].key()}  # the rest are stored

    def answered(self: LocalOracle, c: Comparison, use_cache: bool) -> Any:
        side = SimpleNamespace(ok=True, stage="", converter=c.old.converter)
        return SimpleNamespace(cached=c.spec.key() not in converted, old=side, new=side)

    monkeypatch.setattr(LocalOracle, "_made", answered)
    oracle = LocalOracle(Pool(tmp_path / "logs"), jobs=1)
    old, new = _env("0.4.1"), _env("0.4.2")
    oracle.dispatch([Comparison(s, old, new) for s in specs])
    for s in specs:
        oracle.compare(s, old, new)
    oracle.close()
    runs = oracle.ledger["runs"]
    assert len(runs) == len(specs) and [r["stored"] for r in runs].count(False) == 2
    first = runs[3]["key"]
    # one thread, queued at once: each job after the first conversion waited for it (and for
    # the second once that ended), and for no read
    assert [r["waited_for"] for r in runs[4:8]] == [[first]] * 4
    assert [r["waited_for"] for r in runs[:4]] == [[]] * 4
    assert all(len(r["waited_for"]) == 2 for r in runs[8:])
