"""What `affected` answers, and what `plan` and the reports read: one probe's answer, a condition
finding, one bundle's answer and the report for one fix (built in `affected.py` for lowering
records and in `kind_answers.py` for asset and pipeline records)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inventory.attribution import Step
from inventory.deployment import Deployment
from inventory.ignore import Ignore
from inventory.load_answers import LoadAnswer
from inventory.registry import Instance
from inventory.sweep import Unrecorded
from inventory.verdict import ProbeVerdict, Reexport, Verdict, worst

if TYPE_CHECKING:
    from inventory.coverage import Coverage
from oracle.catalog import Condition, ConditionCheck, Fix
from oracle.compare import ProbeResult, ProbeSpec


@dataclass(frozen=True)
class ProbeAnswer:
    instance: Instance
    spec: ProbeSpec
    result: ProbeResult | None
    verdict: ProbeVerdict
    # measured with this traced module's own tensors from the bundle's checkpoint (--weights)
    module: str = ""
    # when the program changes between the exporter and the target: each release step's
    # comparison, so a change is credited to the step it happens in
    steps: tuple[Step, ...] = ()
    # the exporter -> target verdict, when this fix's own step leaves the program unchanged
    # (the change happens in another step: `verdict` is then this fix's step's)
    elsewhere: ProbeVerdict | None = None

    @property
    def changed_in(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.changed)


def detour(runtime: str, attempt: str) -> str:
    """A measurement made on another runtime than the first one tried, and why that one was
    left: `measured on <runtime> after <runtime>: <worker died of SIGABRT ...>`."""
    return f"measured on {runtime} after {attempt}"


def detours(probes: Iterable[ProbeAnswer]) -> tuple[str, ...]:
    """Each runtime the probes were measured on after another refused them (once each): a fact
    of the answer every format states, since the runtime a value comes from is part of it."""
    measured = [
        p.result.measurement
        for p in probes
        if p.result and p.result.measurement and p.result.measurement.ok
    ]
    return tuple(
        detour(runtime, attempt)
        for runtime, attempt in sorted({(m.runtime, a) for m in measured for a in m.attempts})
    )


@dataclass(frozen=True)
class ConditionFinding:
    """A verdict that changes with parameter values: trained-looking vs adversarial."""

    instance: Instance
    condition: Condition
    trained: ProbeAnswer
    adversarial: ProbeAnswer
    check: ConditionCheck | None  # against the bundle's own weights, when given

    @property
    def decided(self) -> ProbeAnswer:
        """The answer that applies to this bundle: adversarial only if its weights say so."""
        if self.check is not None and self.check.holds:
            return self.adversarial
        return self.trained


# How the changes of a fix's own step that no record explains were had for an answer: the
# registry sweep of the step run by this answer (`affected --sweep`), read from the store where
# `plan` or `sweep --registry` left it, or not looked for (said, with the command that looks).
COMPUTED, STORED, NOT_LOOKED_FOR = "computed", "stored", "not looked for"
UNRECORDED_STATES = (COMPUTED, STORED, NOT_LOOKED_FOR)
_SAID = {
    COMPUTED: "looked for (the registry sweep of the step, run now)",
    STORED: "looked for (the registry sweep of the step, read from the store)",
    NOT_LOOKED_FOR: "not looked for",
}


def unrecorded_said(state: str) -> str:
    """The line every format gives of how a bundle's answer looked for its step's changes that
    no record explains (`unrecorded_state`); "" when it has no such step."""
    return f"changes of the fix's step no record explains: {_SAID[state]}" if state else ""


@dataclass(frozen=True)
class BundleAnswer:
    bundle: str
    exporter: str  # the exporter release the answer used
    exporter_recorded: str  # what the registry says (may be "unknown")
    exporter_source: str
    instances: tuple[Instance, ...]
    probes: tuple[ProbeAnswer, ...]
    verdict: Verdict
    reexport: Reexport
    reason: str
    chain: tuple[str, ...]
    runtimes: tuple[str, ...] = field(default=())
    conditions: tuple[ConditionFinding, ...] = field(default=())
    deployment: Deployment | None = None  # the runtimes the bundle must load on
    load: LoadAnswer | None = None  # question 2, when this answer rests on it (asset records)
    # changes of the bundle's instances in the fix's own step that no record of the step
    # explains (the registry sweep): said in one line, never counted in this fix's answer
    unrecorded: tuple[Unrecorded, ...] = ()
    unrecorded_line: str = ""
    # one of UNRECORDED_STATES; "" when the bundle's exporter already holds the fix (no step)
    unrecorded_state: str = ""
    # a pipeline record answered on the bundle's own whole program (its step's regions of the
    # optimizer stage and drift, `inventory.kind_answers.whole_program`); None: the asset probe
    whole_program: dict | None = None
    # why the bundle's own program was not checked for this record (a pipeline record the
    # asset probe answered alone): "" when it was, or when the record is not a pipeline one
    not_checked: str = ""
    # what the answer rests on at its step: each op of the traced program probed, checked
    # whole, or not covered (`inventory.coverage`); None when no step is compared
    coverage: Coverage | None = None

    @property
    def remedies(self) -> tuple[str, ...]:
        return self.load.remedies if self.load is not None and self.reexport != Reexport.NO else ()

    @property
    def detours(self) -> tuple[str, ...]:
        return detours(self.probes)


@dataclass(frozen=True)
class AffectedReport:
    fix: Fix
    to: str
    bundles: tuple[BundleAnswer, ...]
    ignored: dict[str, Ignore] = field(default_factory=dict)  # bundle -> accepted risk
    warnings: tuple[str, ...] = ()

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(sorted({r for b in self.bundles for r in b.runtimes}))

    @property
    def reexport(self) -> Reexport:
        return worst(b.reexport for b in self.bundles if b.bundle not in self.ignored)
