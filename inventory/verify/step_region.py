"""One region of a release step's whole program: where its shipped programs differ, the stage
it changes at, the records of the step that explain it, and its own run at its cut. Built once
by `inventory.verify.explain.step_regions`; what is added later (its run, the changing probes'
constructs it holds) makes a new region. `to_json` is its one JSON form (`verify --json`'s
`regions`): a part not added is not written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inventory.verify.regions import MODULES_SHOWN, Region, spans


@dataclass(frozen=True)
class RegionRun:
    """The region cut out and run on its own (`inventory.verify.cuts`); `ran` is false when it
    was not cut, and `why` says why."""

    reproduces: bool | None
    why: str | None
    ran: bool = True
    hops: int | None = None
    attempts: tuple[dict[str, Any], ...] = ()  # each ring of the cut tried: its hops, outcome
    runtime: str | None = None
    runtime_attempts: tuple[Any, ...] = ()
    reaches_outputs: tuple[int, ...] | None = None  # the model outputs the region reaches
    inputs: Any = None  # the cut's inputs, as the cut worker reported them
    drift: dict[str, Any] | None = None  # the worst of its outputs (cuts.summary)
    outputs: tuple[dict[str, Any], ...] | None = None  # the drift of each cut output
    evidence: str | None = None
    cut: str | None = None
    cut_from: str = ""
    nodes_missing: tuple[str, ...] = ()

    @classmethod
    def not_cut(cls, why: str) -> RegionRun:
        return cls(reproduces=None, why=why, ran=False)

    def to_json(self) -> dict[str, Any]:
        if not self.ran:
            return {"reproduces": None, "why": self.why}
        return {
            "reproduces": self.reproduces,
            "why": self.why,
            "hops": self.hops,
            "attempts": list(self.attempts),
            "runtime": self.runtime,
            "runtime_attempts": list(self.runtime_attempts),
            "reaches_outputs": None if self.reaches_outputs is None else list(self.reaches_outputs),
            "inputs": self.inputs,
            "drift": self.drift,
            "outputs": None if self.outputs is None else list(self.outputs),
            "evidence": self.evidence,
            "cut": self.cut,
            "cut_from": self.cut_from,
            "nodes_missing": list(self.nodes_missing),
        }


@dataclass(frozen=True)
class StepRegion:
    graph: str
    composite: str | None
    changed_lines: int
    lines_old: tuple[str, ...]  # changed line spans, "12" or "12-15"
    lines_new: tuple[str, ...]
    calls: int  # a composite's call sites in @main
    constructs: tuple[str, ...]
    modules: tuple[str, ...]  # the first MODULES_SHOWN
    module_count: int
    ops: tuple[str, ...]
    coreai_ops: tuple[str, ...]
    located: bool
    aten_nodes: int
    consumer_nodes: int
    step: str
    stage: str
    explained_how: Mapping[str, str]  # record id -> the rule that explains the region by it
    evidence: str | None
    region_run: RegionRun | None = None
    # the constructs of the step's changing probes it holds (None: not reconciled)
    explained_by_probes: tuple[str, ...] | None = None
    explained_by: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "explained_by", tuple(sorted(self.explained_how)))

    @classmethod
    def of(
        cls, region: Region, step: str, stage: str, how: Mapping[str, str], evidence: str | None
    ) -> StepRegion:
        return cls(
            graph=region.graph,
            composite=region.composite or None,
            changed_lines=region.changed,
            lines_old=tuple(spans(region.lines_old)),
            lines_new=tuple(spans(region.lines_new)),
            calls=region.calls,
            constructs=tuple(region.constructs),
            modules=tuple(region.modules[:MODULES_SHOWN]),
            module_count=len(region.modules),
            ops=tuple(region.ops),
            coreai_ops=tuple(region.coreai_ops),
            located=region.located,
            aten_nodes=len(region.nodes),
            consumer_nodes=len(region.consumers),
            step=step,
            stage=stage,
            explained_how=dict(how),
            evidence=evidence,
        )

    @property
    def unrecorded(self) -> bool:
        return not self.explained_how

    @property
    def kinds(self) -> set[str]:
        """Its constructs, and the composite whose body it is."""
        return set(self.constructs) | ({self.composite} if self.composite else set())

    @property
    def run_drift(self) -> dict[str, Any] | None:
        return self.region_run.drift if self.region_run is not None else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "graph": self.graph,
            "composite": self.composite,
            "changed_lines": self.changed_lines,
            "lines_old": list(self.lines_old),
            "lines_new": list(self.lines_new),
            "calls": self.calls,
            "constructs": list(self.constructs),
            "modules": list(self.modules),
            "module_count": self.module_count,
            "ops": list(self.ops),
            "coreai_ops": list(self.coreai_ops),
            "located": self.located,
            "aten_nodes": self.aten_nodes,
            "consumer_nodes": self.consumer_nodes,
            "step": self.step,
            "stage": self.stage,
            "explained_by": list(self.explained_by),
            "explained_how": dict(self.explained_how),
            "unrecorded": self.unrecorded,
            "evidence": self.evidence,
        }
        if self.region_run is not None:
            out["region_run"] = self.region_run.to_json()
        if self.explained_by_probes is not None:
            out["explained_by_probes"] = list(self.explained_by_probes)
        return out
