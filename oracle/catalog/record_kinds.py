"""The kinds of fix record, one class per kind: what a record of the kind changes, and so how
its effect is probed, which bundles it concerns, how a bundle is answered for it and which
changes it is credited with.

`fixes.toml` names a record's kind (`kind = "pipeline"`); everything that reads records asks the
kind, never compares its name or its properties. The kind is the strategy, the caller holds the
means: each question is a small protocol below (`ProbeContext`, `ConcernContext`,
`AnswerContext`) whose operations the inventory implements, and the kind picks the one that
answers it (the oracle never imports the inventory, so the kinds know the operations only by
these protocols):
- release notes probe a record through `probed` and list the bundles `concerned` names;
- `affected` (and the batch plan that lists its comparisons first) answers a bundle for a record
  through `answer`;
- attribution (a probe's change in a release step) and verify's explanation (a whole program's
  region) ask the kind whether a change made at a stage is its to explain (`credited`), and
  bisection narrows a step's records to the commit only for the kinds it can see change
  (`narrowed_by_bisection`).

Adding a kind is one class here: it picks among the operations the protocols offer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar

# Where a program's change is made: a lowering emitted something else, or the optimizer made
# something else of the same emitted program; `BOTH` where the two cannot be told apart.
LOWERING, OPTIMIZER, BOTH = "lowering", "optimizer", "lowering or optimizer"

R = TypeVar("R", contravariant=True)  # the record asked about (an `oracle.fixes.Fix`)
Q = TypeVar("Q", contravariant=True)  # the question answered: a bundle, a record, a target
T = TypeVar("T", covariant=True)  # what the caller makes of the operation


class ProbeContext(Protocol[R, T]):
    """How release notes probe a record's effect: each operation returns the caller's view of
    it (the regimes to compare, the load checks to show, the bisection evidence to read)."""

    def construct_regimes(self, record: R) -> T:
        """The regimes of the constructs the record names."""
        ...

    def asset_probe(self, record: R) -> T:
        """The asset probe converted under both releases (no construct of the bundle's)."""
        ...

    def load_checks(self, record: R) -> T:
        """No program comparison: the asset probe's load checks on every runtime."""
        ...


class ConcernContext(Protocol[R, T]):
    """The bundles a record concerns."""

    def holders(self, record: R) -> T:
        """The bundles whose traces hold one of the record's constructs."""
        ...

    def exported_before(self, record: R) -> T:
        """Every bundle exported before the release the record ships in (or by an exporter the
        registry does not know)."""
        ...


class AnswerContext(Protocol[Q, T]):
    """How a bundle is answered for a record (`affected`; the batch plan lists the same path's
    comparisons, and the environments it needs, through the same operations)."""

    def by_load_check(self, question: Q) -> T:
        """Does the shipped asset load on the bundle's deployment runtimes?"""
        ...

    def by_construct_probes(self, question: Q) -> T:
        """The probes of each traced instance of a construct the record names."""
        ...

    def by_whole_program(self, question: Q) -> T:
        """The bundle's own whole program at the record's step, else the asset probe shaped
        like the bundle."""
        ...


@dataclass(frozen=True)
class RecordKind:
    name: ClassVar[str]
    doc: ClassVar[str]
    # a record of the kind names the constructs whose lowering it changes (required), and a
    # change of such a construct's program is credited to it; other kinds name none
    names_constructs: ClassVar[bool] = False
    # it changes what the optimizer makes of every program (a core pin, what to_coreai()
    # returns): an optimizer-stage region of a whole program is credited to it
    changes_optimizer: ClassVar[bool] = False
    # its release-notes entry compares programs (and so answers the four questions of a program
    # change); a load-checked kind compares none
    compares_programs: ClassVar[bool] = True

    def credited(self, stage: str, holds_its_construct: bool) -> bool:
        """Whether a program's change made at `stage` (`LOWERING`, `OPTIMIZER` or `BOTH`) is
        this kind's to explain; `holds_its_construct`: the program holds a construct the record
        names. A kind naming constructs explains a lowering's change of a program holding one (at
        the optimizer stage a lowering emitted the same program, so it changed nothing); a kind
        changing the optimizer explains the optimizer's."""
        return (stage != LOWERING and self.changes_optimizer) or (
            stage != OPTIMIZER and self.names_constructs and holds_its_construct
        )

    @property
    def narrowed_by_bisection(self) -> bool:
        """Whether bisection can narrow a step's records of this kind to the commit: it builds
        every commit on one release's pins, so a change of the optimizer (a pin) is never seen
        there, and such a record stays credited to the whole step."""
        return not self.changes_optimizer

    def probed(self, context: ProbeContext[R, T], record: R) -> T:
        """How release notes probe a record of the kind."""
        raise NotImplementedError

    def concerned(self, context: ConcernContext[R, T], record: R) -> T:
        """The bundles a record of the kind concerns."""
        raise NotImplementedError

    def answer(self, context: AnswerContext[Q, T], question: Q) -> T:
        """How a bundle is answered for a record of the kind."""
        raise NotImplementedError


class Lowering(RecordKind):
    name = "lowering"
    doc = "how an aten construct is lowered to Core AI ops"
    names_constructs = True

    def probed(self, context: ProbeContext[R, T], record: R) -> T:
        return context.construct_regimes(record)

    def concerned(self, context: ConcernContext[R, T], record: R) -> T:
        return context.holders(record)

    def answer(self, context: AnswerContext[Q, T], question: Q) -> T:
        return context.by_construct_probes(question)


class Asset(RecordKind):
    name = "asset"
    doc = "what the saved asset carries besides the program (answered by load checks)"
    compares_programs = False

    def probed(self, context: ProbeContext[R, T], record: R) -> T:
        return context.load_checks(record)

    def concerned(self, context: ConcernContext[R, T], record: R) -> T:
        return context.exported_before(record)

    def answer(self, context: AnswerContext[Q, T], question: Q) -> T:
        return context.by_load_check(question)


class Pipeline(RecordKind):
    name = "pipeline"
    doc = "what runs around the lowerings (core pin, what to_coreai() returns)"
    changes_optimizer = True

    def probed(self, context: ProbeContext[R, T], record: R) -> T:
        return context.asset_probe(record)

    def concerned(self, context: ConcernContext[R, T], record: R) -> T:
        return context.exported_before(record)

    def answer(self, context: AnswerContext[Q, T], question: Q) -> T:
        return context.by_whole_program(question)


KINDS: dict[str, RecordKind] = {k.name: k() for k in (Lowering, Asset, Pipeline)}
# the kind of a record `fixes.toml` names no kind for
DEFAULT_KIND = Lowering.name
