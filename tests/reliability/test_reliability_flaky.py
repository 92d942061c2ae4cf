"""Reliability IV, part 2: a refusal is confirmed before it is believed.

A runtime that dies is tried again in a fresh process; only a death that repeats is `crashes`
(stored, answered as a refusal). One that does not repeat, or an abort after the outputs were
written, is `flaky`: both attempts' evidence kept, inconclusive, never stored, and the next run
answers from a fresh check. The runtime is the real one behind the flaky double
(`tests/helpers/doubles/flaky_asset_worker.py`: its first N runs abort natively), for load checks,
`scan`, verify's runs and `repair`'s checks. The real repeatable refusal (coreai-core b2/b3
aborting on every 0.4.0 asset) stays `crashes`: `test_assets.py`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bundles import export
from cli import invoke

from inventory.verify import parts, whole
from oracle.catalog.releases import load_catalog
from oracle.catalog.runtimes import cores
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.infra.paths import cache_root, envs_dir
from oracle.load_check import check_dir, load_check, load_stored, run_on
from oracle.session import Session
from oracle.workers import asset_probe

SPEC = ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), "float32", Pipeline())


@pytest.fixture
def store(env, tmp_path, monkeypatch) -> Path:
    """A fresh store borrowing the environments, and the double's count folder."""
    for version in load_catalog().releases:
        env(version)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    monkeypatch.setenv("INVENTORY_CACHE", str(cache))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    monkeypatch.setenv("INVENTORY_FAULT_DIR", str(tmp_path))
    return cache


def _fault(monkeypatch, tmp_path: Path, value: str) -> None:
    (tmp_path / "asset-aborts").unlink(missing_ok=True)
    monkeypatch.setenv("INVENTORY_ASSET_FAULT", value)


def _runtime_ids(session: Session, catalog) -> dict[str, dict[str, str]]:
    return {
        c: {k: session.env_for_core(c).packages.get(k, "?") for k in ("coreai-core", "numpy")}
        for c in cores(catalog)
    }


def test_a_load_check_that_aborts_once_is_flaky_unstored_and_the_next_run_checks_afresh(
    env, store, tmp_path, monkeypatch
):
    catalog = load_catalog()
    exporter = env("0.4.1")
    _fault(monkeypatch, tmp_path, "abort:1")
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        check = load_check(SPEC, exporter, cores(catalog), session)
        final = check_dir(SPEC, exporter, _runtime_ids(session, catalog))
    first, *rest = check.outcomes
    assert first.outcome == "flaky", first
    assert first.error.startswith(
        "crashes (SIGABRT) on the first attempt, loads on the second, "
        "in a fresh process: no lasting answer"
    ), first.error
    assert [o.outcome for o in rest] == ["loads"] * len(rest)
    # both attempts' evidence, kept outside the temp folder; nothing stored
    assert Path(first.files["log"]).is_file() and Path(first.files["confirm.log"]).is_file()
    assert Path(check.evidence).is_relative_to(cache_root() / "logs" / "load-checks")
    assert load_stored(final) is None
    # the double's one abort is spent: the next run checks afresh, loads, and stores it
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        again = load_check(SPEC, exporter, cores(catalog), session)
    # a run after it reads it back (within one run, a check asked twice is the one made)
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        cached = load_check(SPEC, exporter, cores(catalog), session)
    assert [o.outcome for o in again.outcomes] == ["loads"] * len(again.outcomes)
    assert not again.cached and cached.cached


def test_an_abort_that_repeats_is_crashes_as_before(env, store, tmp_path, monkeypatch):
    catalog = load_catalog()
    _fault(monkeypatch, tmp_path, "abort:2")
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        check = load_check(SPEC, env("0.4.1"), cores(catalog)[:1], session)
    [outcome] = check.outcomes
    assert (outcome.outcome, outcome.signal) == ("crashes", "SIGABRT")
    assert "confirm.log" in outcome.files  # the confirmation is evidence too
    assert load_stored(Path(check.evidence)) is not None  # a repeated refusal is stored


def test_an_abort_after_the_outputs_were_written_is_flaky(env, store, tmp_path, monkeypatch):
    catalog = load_catalog()
    _fault(monkeypatch, tmp_path, "abort-after-outputs:2")  # both attempts abort, after writing
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        check = load_check(SPEC, env("0.4.1"), cores(catalog)[:1], session)
    [outcome] = check.outcomes
    assert outcome.outcome == "flaky"
    assert "on the first attempt, after writing its outputs: no lasting answer" in outcome.error


def test_scan_of_a_runtime_that_aborts_once_is_inconclusive(env, store, tmp_path, monkeypatch):
    bundle = export(env, "0.4.1", tmp_path / "export")
    folder = tmp_path / "bundles"
    shutil.copytree(bundle, folder / "probe.aimodel")
    _fault(monkeypatch, tmp_path, "abort:1")
    ran = invoke("scan", str(folder), "--json", "-q", "--runtime", "b2")
    assert ran.returncode == 3, ran.stderr
    doc = json.loads(ran.stdout)
    outcomes = [o["outcome"] for b in doc["result"]["bundles"] for o in b["loads"]]
    assert outcomes.count("flaky") == 1 and set(outcomes) <= {"flaky", "loads"}
    assert any("flaky" in w and "inconclusive: scan again" in w for w in doc["warnings"])
    _fault(monkeypatch, tmp_path, "abort:0")
    again = invoke("scan", str(folder), "--json", "-q", "--runtime", "b2")
    assert again.returncode == 0, again.stderr


def test_a_verify_run_that_aborts_once_is_flaky_and_not_stored(env, store, tmp_path, monkeypatch):
    """verify's run of an asset on a runtime (`whole.run`, what each chain step's measurement
    calls), on the inputs a first run stored."""
    asset = export(env, "0.4.1", tmp_path / "export")
    runtime = env("0.4.1")
    inputs = tmp_path / "inputs"
    with Session(load_catalog(), log_dir=tmp_path / "logs") as session:
        assert run_on(asset, runtime.core, session, inputs).loads  # seeded inputs, stored
        _fault(monkeypatch, tmp_path, "abort:1")
        flaky = whole.run(
            session, runtime, str(asset), inputs, tmp_path / "flaky", lambda _: None, "the probe"
        )
        _fault(monkeypatch, tmp_path, "abort:2")
        repeated = whole.run(
            session, runtime, str(asset), inputs, tmp_path / "repeated", lambda _: None, "the probe"
        )
    assert flaky["stage"] == "flaky" and "died of SIGABRT" in flaky["error"]
    assert "then ran in a fresh process: no lasting answer" in flaky["error"]
    assert not parts.run_repeats(flaky)
    assert repeated["stage"] == "worker" and len(repeated["attempts"]) == 2
    assert parts.run_repeats(repeated)  # an abort that repeats is the runtime's answer


def test_repair_with_a_runtime_that_aborts_once_is_inconclusive_and_writes_nothing(
    env, store, tmp_path, monkeypatch
):
    asset = export(env, "0.4.0", tmp_path / "export")
    out = tmp_path / "repaired.aimodel"
    _fault(monkeypatch, tmp_path, "abort:1")
    # one run at a time, so the double's one abort falls on the original's run on b1 (b2 and
    # b3 abort on a 0.4.0 asset anyway: an abort there repeats, and is rightly `crashes`)
    ran = invoke("repair", str(asset), "-o", str(out), "-q", "--jobs", "1")
    assert ran.returncode == 3, (ran.returncode, ran.stderr)
    line = ran.stderr.strip()
    assert line.startswith("inconclusive: ") and "flaky" in line and "run repair again" in line
    assert not out.exists()
