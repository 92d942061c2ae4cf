"""Changes no record explains: `plan` sweeps every traced instance across every
release step from each bundle's exporter to the target, so a missing record (a draft of the next
release's, `tests/golden/drafts/no54.toml`: the shipped database without #54) never turns a
change of what would ship into a "no".

The draft plan's CLI run (a golden entry, from the session's matrix) is shared by the assertions
on its document; the rest calls the services in-process on one session, so the stored
conversions are read once and every later plan is answered from memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli import Ran, invoke

from inventory.affected import affected
from inventory.attribution import release_steps
from inventory.instances import probed_keys
from inventory.plan import plan
from inventory.policy import load_policy
from inventory.registry import DEFAULT_REGISTRY, load_registry
from inventory.release_notes import release_notes
from inventory.sweep import registry_regimes, sweep
from oracle.catalog.fixes import find_fix, load_fixes
from oracle.catalog.regimes import load_regimes
from oracle.catalog.releases import EnvError
from oracle.session import Session

ROOT = Path(__file__).resolve().parents[2]
DRAFT = ROOT / "tests" / "golden" / "drafts" / "no54.toml"
NEWEST = "0.4.3"


def run(*args: str) -> Ran:
    proc = invoke(*args, "-q")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def draft_plan(matrix, json_schema) -> tuple[int, dict]:
    """`plan --to 0.4.2 --fixes no54.toml --json`, as a user runs it on release day (the
    session's matrix runs it once: it is a golden entry)."""
    ran = matrix.run_cli(("plan", "--to", "0.4.2", "--fixes", str(DRAFT.relative_to(ROOT))))
    json_schema(ran.data)
    return ran.exit, ran.data["result"]


@pytest.fixture(scope="module")
def session(converter_envs, catalog):
    with Session(catalog) as s:
        yield s


@pytest.fixture(scope="module")
def bundles():
    return load_registry(DEFAULT_REGISTRY)


@pytest.fixture(scope="module")
def explained(session, bundles, catalog) -> dict[str, set[tuple[str, str, str]]]:
    """Per record of the shipped database, the (bundle, instance, step) changes it explains: the
    registry sweep of every release step, as `sweep --registry` makes it."""
    fixes, regimes = load_fixes(), registry_regimes(bundles)
    keys = {b.name: probed_keys(b) for b in bundles}
    out: dict[str, set[tuple[str, str, str]]] = {}
    for old, new in release_steps(catalog, "0.4.0", NEWEST):
        found = sweep(old, new, fixes, regimes, catalog, load_policy(), session=session)
        for f in found.changed:
            spec = f.outcome.regime.spec
            for fix in f.explained_by:
                out.setdefault(fix, set()).update(
                    (b, spec.label(), f"{old}->{new}") for b in keys if spec.key() in keys[b]
                )
    return out


def _bundles(data: dict) -> dict[str, dict]:
    return {b["bundle"]: b for b in data["bundles"]}


def test_a_draft_without_a_record_still_counts_the_change_it_would_have_explained(draft_plan):
    code, data = draft_plan
    by = _bundles(data)
    # #54's fp16 batch norms change in 0.4.1->0.4.2 and no record of the draft names them: the
    # measured answer is the one #54 gives with the full database (values-move, optional);
    # mimi, which nothing changes, is unchecked: its ops were never counted, so the sweep of
    # its traced instances is not all of it (docs/verdicts.md, coverage)
    assert {b: by[b]["reexport"] for b in by} == {
        "parakeet": "optional",
        "lfm_audio": "inconclusive",
        "sortformer": "optional",
        "mimi": "unchecked",
        "sam3": "required",
    }
    for name in ("parakeet", "lfm_audio", "sortformer"):
        (u,) = by[name]["unexplained"]
        assert (u["construct"], u["step"], u["verdict"], u["reexport"]) == (
            "batch_norm",
            "0.4.1->0.4.2",
            "values-move",
            "optional",
        ), u
        assert u["reason"].startswith(
            "changes in 0.4.1->0.4.2 and no record of that step explains it (none names "
            "batch_norm); values-move: outputs move, new side closer to torch"
        )
        # the drift the verdict rests on, measured from the exporter to 0.4.2 on one runtime
        assert u["drift"]["runtime"].startswith("linux-cpu, coreai-core 1.0.0b")
        assert 0 < u["drift"]["maxabs_new_ref"] < u["drift"]["maxabs_old_ref"]
        assert Path(u["drift"]["evidence"], "result.json").is_file()
        assert not any(
            i["fix"] == "54" for level in ("optional", "not_affected") for i in by[name][level]
        )
    assert by["mimi"]["unexplained"] == [] and by["sam3"]["unexplained"] == []
    # exit codes (docs/reference/exit-codes.md): sam3's asset does not load (#28, required),
    # so the run exits 1
    assert data["reexport"] == "required" and code == 1


def test_plan_and_sweep_registry_agree_on_what_is_unexplained(
    draft_plan, session, bundles, catalog
):
    _, data = draft_plan
    found = sweep(
        "0.4.1",
        "0.4.2",
        load_fixes(DRAFT),
        registry_regimes(bundles),
        catalog,
        load_policy(),
        session=session,
    )
    keys = {b.name: probed_keys(b) for b in bundles}
    swept = {
        (b, f.outcome.regime.spec.label())
        for f in found.unexplained
        for b in keys
        if f.outcome.regime.spec.key() in keys[b]
    }
    planned = {(b["bundle"], u["probe"]) for b in data["bundles"] for u in b["unexplained"]}
    assert planned == swept and len(swept) == 3


def test_release_notes_list_the_same_unexplained_changes(draft_plan, session, bundles, catalog):
    _, data = draft_plan
    notes = release_notes(
        "0.4.1", "0.4.2", load_fixes(DRAFT), load_regimes(), bundles, catalog, load_policy()
    )
    assert "54" not in {f.fix.id for f in notes.fixes}
    noted = {(o.regime.spec.label(), s.label, o.verdict.verdict) for o, s in notes.unexplained}
    planned = {
        (u["probe"], u["step"], u["verdict"]) for b in data["bundles"] for u in b["unexplained"]
    }
    assert noted == planned


def test_removing_any_lowering_record_never_answers_no_where_it_explained_a_change(
    session, bundles, catalog, explained
):
    full = load_fixes()
    policy = load_policy()
    # what the shipped records explain across 0.4.0 -> 0.4.3 (measured): #54 the fp16 batch
    # norms; core-b2 (the coreai-core pin 1.0.0b1 -> 1.0.0b2, a pipeline record) sam3's
    # pairwise rotary at 0.4.0->0.4.1: its emitted programs are identical and only optimize()'s
    # output differs (b1's folds the reshapes around the negated half away, b2's keeps them;
    # the outputs are bit-identical), a change made by the optimizer alone, which only a
    # pipeline record of that step explains; every other record explains no change of a
    # shipped instance (sam3's dynamic views, #56's until their probes were built as the bundle
    # builds them, change nowhere)
    assert {fix: {b for b, _, _ in found} for fix, found in explained.items()} == {
        "54": {"parakeet", "lfm_audio", "sortformer"},
        "core-b2": {"sam3"},
    }
    before = {
        b.bundle: b.reexport
        for b in plan(NEWEST, bundles, full, catalog, policy, session=session).bundles
    }
    for dropped in [f for f in full if f.kind == "lowering"]:
        fixes = [f for f in full if f is not dropped]
        after = plan(NEWEST, bundles, fixes, catalog, policy, session=session)
        by = {b.bundle: b for b in after.bundles}
        for bundle, probe, step in explained.get(dropped.id, set()):
            assert by[bundle].reexport != "no", (dropped.id, bundle)
            assert (probe, step) in {(u.probe, u.step.label) for u in by[bundle].unexplained}
        # the change is counted by the same policy as when the record explains it
        assert {b: p.reexport for b, p in by.items()} == before, dropped.id


def test_affected_stays_about_the_fix_and_mentions_the_steps_unrecorded_changes(
    session, bundles, catalog
):
    draft = load_fixes(DRAFT)
    # --sweep: the registry sweep of #29's step computed (not only read from the store)
    report = affected(
        find_fix("29", draft), bundles, catalog, load_policy(), fixes=draft, sweep=True
    )
    by = {b.bundle: b for b in report.bundles}
    # #29's own answer is unchanged: constant pads are the same program
    assert {b: a.reexport for b, a in by.items()} == {
        "parakeet": "no",
        "lfm_audio": "no",
        "sortformer": "no",
        "mimi": "no",
        "sam3": "no",
    }
    for name in ("parakeet", "lfm_audio", "sortformer"):
        (u,) = by[name].unrecorded
        assert (u.spec.construct, u.step.label, u.outcome.verdict.verdict) == (
            "batch_norm",
            "0.4.1->0.4.2",
            "values-move",
        )
        assert by[name].chain[-1] == by[name].unrecorded_line
        assert by[name].unrecorded_line.startswith("also in 0.4.1->0.4.2, the step #29 ships in")
        assert by[name].unrecorded_line.endswith("`inventory plan --to 0.4.2` counts them")
    assert not by["mimi"].unrecorded and not by["sam3"].unrecorded
    # with the shipped records nothing in #29's step is unrecorded
    shipped = affected(find_fix("29"), bundles, catalog, load_policy(), sweep=True)
    assert all(not b.unrecorded and not b.unrecorded_line for b in shipped.bundles)
    assert {b.unrecorded_state for b in shipped.bundles} == {"computed"}


def test_a_step_that_cannot_be_swept_makes_the_bundle_inconclusive(
    session, bundles, catalog, monkeypatch
):
    """The sweep of 0.4.2 -> 0.4.3 failing for want of an environment: parakeet's answers are
    stored (#54 optional), but no change of that step can be ruled out."""
    import inventory.sweep as notes

    real = notes.sweep

    def sweep_but(old: str, new: str, *args, **kwargs):
        if (old, new) == ("0.4.2", "0.4.3"):
            raise EnvError("coreai-torch 0.4.3: withheld by the test")
        return real(old, new, *args, **kwargs)

    monkeypatch.setattr(notes, "sweep", sweep_but)
    p = plan(
        NEWEST,
        [b for b in bundles if b.name == "parakeet"],
        load_fixes(),
        catalog,
        load_policy(),
        session=session,
    )
    (b,) = p.bundles
    assert [i.fix.id for i in b.by_level("optional")] == ["54"]
    assert b.unswept == ("0.4.2->0.4.3 could not run (coreai-torch 0.4.3: withheld by the test)",)
    assert b.reexport == "inconclusive"
    assert p.warnings == (
        "parakeet: the registry sweep of 0.4.2->0.4.3 could not run "
        "(coreai-torch 0.4.3: withheld by the test); a change no record "
        "explains cannot be ruled out there",
    )


def test_a_step_where_a_worker_already_failed_is_not_swept(bundles, catalog, converter_envs):
    """After a worker of 0.4.3 died in this run, the sweep of 0.4.2 -> 0.4.3 would start one
    again for every instance: it is not run, and the bundle cannot be answered below
    inconclusive."""
    with Session(catalog) as failed:
        failed.worker_failures["0.4.3"] = "coreai-torch-0.4.3 worker died of SIGABRT (the test)"
        p = plan(
            NEWEST,
            [b for b in bundles if b.name == "parakeet"],
            load_fixes(),
            catalog,
            load_policy(),
            session=failed,
        )
    (b,) = p.bundles
    assert b.unswept == (
        "0.4.2->0.4.3 could not run (a coreai-torch 0.4.3 worker failed "
        "earlier in this run: coreai-torch-0.4.3 worker died of SIGABRT (the "
        "test))",
    )
    assert b.reexport == "inconclusive"


def test_a_fix_the_draft_does_not_hold_is_one_line():
    proc = run("affected", "--fix", "54", "--fixes", str(DRAFT))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: unknown fix '54': not in the fix database (no54.toml); the closest ids: 56, 55, "
        f"43, 42, 40; `inventory fixes --fixes {DRAFT}` lists every record"
    )
