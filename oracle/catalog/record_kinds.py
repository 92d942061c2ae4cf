"""The kinds of fix record, one class per kind: what a record of the kind changes, and so how
its effect is probed, which bundles it concerns and which changes it is credited with.

`fixes.toml` names a record's kind (`kind = "pipeline"`); everything that reads records asks the
kind, never compares its name:
- release notes probe a record through `probe` and list the bundles `concerns` names;
- attribution credits a construct's change only to a kind that `names_constructs`, and an
  optimizer-stage region of a whole program to a kind that `changes_optimizer`;
- `affected` answers a record by its kind's `answer` (`inventory/record_answers.py`).

Adding a kind is one class here, and its answer there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

# how release notes probe a record's effect
CONSTRUCT_REGIMES = "construct-regimes"  # the regimes of the constructs it names
ASSET_PROBE = "asset-probe"  # the asset probe converted under both releases
LOAD_CHECKS = "load-checks"  # no program comparison: the asset probe's load checks
# the bundles a record concerns
HOLDERS = "holders"  # the bundles whose traces hold one of its constructs
EXPORTED_BEFORE = "exported-before"  # every bundle exported before the release it ships in


@dataclass(frozen=True)
class RecordKind:
    name: ClassVar[str]
    doc: ClassVar[str]
    probe: ClassVar[str]
    concerns: ClassVar[str]
    # a record of the kind names the constructs whose lowering it changes (required), and a
    # change of such a construct's program is credited to it; other kinds name none
    names_constructs: ClassVar[bool] = False
    # it changes what the optimizer makes of every program (a core pin, what to_coreai()
    # returns): an optimizer-stage region of a whole program is credited to it
    changes_optimizer: ClassVar[bool] = False

    @property
    def compares_programs(self) -> bool:
        """Whether its release-notes entry compares programs (and so answers the four
        questions of a program change); a load-checked kind compares none."""
        return self.probe != LOAD_CHECKS


class Lowering(RecordKind):
    name = "lowering"
    doc = "how an aten construct is lowered to Core AI ops"
    probe = CONSTRUCT_REGIMES
    concerns = HOLDERS
    names_constructs = True


class Asset(RecordKind):
    name = "asset"
    doc = "what the saved asset carries besides the program (answered by load checks)"
    probe = LOAD_CHECKS
    concerns = EXPORTED_BEFORE


class Pipeline(RecordKind):
    name = "pipeline"
    doc = "what runs around the lowerings (core pin, what to_coreai() returns)"
    probe = ASSET_PROBE
    concerns = EXPORTED_BEFORE
    changes_optimizer = True


KINDS: dict[str, RecordKind] = {k.name: k() for k in (Lowering, Asset, Pipeline)}
