"""What `inventory bisect` found, as attribution data: per release step and probe, the pull
requests of the commits that change the probe's program (`evidence/bisect/<A>-<B>*.json`, the
command's own JSON output, kept as evidence).

The release notes read it to separate two fixes of one step that name the same construct: a
comparison of the released wheels says that a probe changes in the step, not which record's
commit changes it. A probe that bisection attributes only to other pull requests is not listed
as changed by a record (#25 vs #13 on arange with mixed bounds). A probe bisection did not reach
keeps the step's attribution: nothing here is a guess.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from oracle.catalog import Fix
from oracle.compare import ProbeSpec

EVIDENCE = Path(__file__).resolve().parent.parent / "evidence" / "bisect"


@dataclass(frozen=True)
class Attributed:
    """One probe's bisection in one release step."""

    prs: tuple[str, ...]  # the pull requests of the commits that change it, in order
    commits: tuple[str, ...]  # their short shas with PR ("53d6bdd (#13)")
    evidence: str  # the file it was read from

    def names(self, ids: tuple[str, ...]) -> bool:
        return any(i in self.prs for i in ids)


def load_bisected(folder: Path = EVIDENCE) -> dict[tuple[str, str, str], Attributed]:
    """(from, to, probe spec key) -> its attribution, from every bisect document in `folder`.
    A probe no commit was named for is left out (it keeps the step's attribution)."""
    out: dict[tuple[str, str, str], Attributed] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # evidence that cannot be read attributes nothing
        if not isinstance(doc, dict) or doc.get("command") != "bisect":
            continue
        doc = doc.get("result")  # the envelope's answer
        if not isinstance(doc, dict):
            continue
        for probe in doc.get("probes", []):
            commits = probe.get("commits") or []
            if not commits or not probe.get("key"):
                continue
            out[(doc["from"], doc["to"], probe["key"])] = Attributed(
                tuple(c["pr"] for c in commits if c.get("pr")),
                tuple(
                    f"{c['sha'][:7]} (#{c['pr']})" if c.get("pr") else c["sha"][:7] for c in commits
                ),
                str(path.relative_to(folder.parent.parent))
                if folder.parent.parent in path.parents
                else str(path),
            )
    return out


@functools.cache
def _recorded() -> dict[tuple[str, str, str], Attributed]:
    return load_bisected()


def narrowed(
    ids: tuple[str, ...], fixes: list[Fix], old: str, new: str, spec: ProbeSpec
) -> tuple[str, ...]:
    """Of the records `ids` that name a probe's construct in the step `old`->`new`, those
    whose pull requests (id or aliases) bisection names for the probe's change; all of `ids`
    when the probe was not bisected in that step. None left: the commit that changes it
    belongs to no record naming its construct, so no record explains the change."""
    found = _recorded().get((old, new, spec.key()))
    if found is None:
        return ids
    by = {f.id: f for f in fixes}
    return tuple(i for i in ids if i in by and found.names((i, *by[i].aliases)))
