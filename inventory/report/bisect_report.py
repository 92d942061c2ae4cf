"""The renderings of `bisect`: per changing probe, the commit(s) that change it."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.bisect import WHEEL_SAME, Bisection, ProbeBisection, Transition
from inventory.gitrepo import Commit
from inventory.report.text import md_code, md_line, md_text


def _commit(c: Commit) -> dict[str, Any]:
    return {"sha": c.sha, "subject": c.subject, "pr": c.pr}


def _transition(t: Transition) -> dict[str, Any]:
    return {
        **_commit(t.commit),
        "parent": t.parent,
        "reference": t.reference,
        "shipped": t.shipped,
        "reference_error": t.old_error or None,
        "error": t.new_error or None,
        "result": t.result,
        "final": t.final,
    }


def _probe(p: ProbeBisection) -> dict[str, Any]:
    return {
        "regime": p.regime.id,
        "construct": p.regime.construct,
        "probe": p.regime.spec.label(),
        "key": p.regime.spec.key(),
        "release_shipped": str(p.release.shipped),
        "release_result": p.release.evidence,
        "commits": [_transition(t) for t in p.transitions],
        "prs": list(p.prs),
        "tested": [
            {
                "commit": t.commit,
                "reference": t.reference,
                "changed": t.changed,
                "shipped": t.shipped,
                "result": t.result,
            }
            for t in p.tested
        ],
        "problem": p.problem or None,
    }


def bisect_record(b: Bisection) -> dict[str, Any]:
    return {
        "from": b.old,
        "to": b.new,
        "repo": b.repo,
        "from_commit": {
            **_commit(b.old_commit),
            "found_by": b.found_by[b.old],
            "wheel": b.wheel_check[b.old],
        },
        "to_commit": {
            **_commit(b.new_commit),
            "found_by": b.found_by[b.new],
            "wheel": b.wheel_check[b.new],
        },
        "commits": [_commit(c) for c in b.commits],
        "probed": b.probed,
        "changing": len(b.probes),
        "unattributed": [p.regime.id for p in b.unattributed],
        "probes": [_probe(p) for p in b.probes],
        "environments": b.builds,
        "search": b.search,
    }


def _who(p: ProbeBisection) -> Text:
    if not p.transitions:
        return Text(f"not attributed: {p.problem or 'no commit found'}", style="bold red")
    parts = [t.commit.label() + ("" if t.final else " (then changed again)") for t in p.transitions]
    return Text(", then ".join(parts) if len(parts) > 1 else parts[0])


def bisect_table(b: Bisection) -> Group:
    lines: list = []
    for release, commit in ((b.old, b.old_commit), (b.new, b.new_commit)):
        check = b.wheel_check[release]
        lines.append(
            Text(
                f"{release}: {commit.short} ({b.found_by[release]}); wheel: "
                f"{'same files as the commit' if check == WHEEL_SAME else check}"
            )
        )
    table = Table(
        title=f"bisect coreai-torch {b.old} → {b.new}: {len(b.probes)} of {b.probed} "
        f"probes change, over {len(b.commits)} first-parent commits",
        title_justify="left",
    )
    for col in ("probe", "release step", "changed by"):
        table.add_column(col, overflow="fold")
    for p in b.probes:
        table.add_row(p.regime.id, str(p.release.shipped), _who(p))
    lines.append(table)
    prs: dict[str, int] = {}
    for p in b.probes:
        for t in p.transitions:
            prs[t.commit.label()] = prs.get(t.commit.label(), 0) + 1
    if prs:
        lines.append(Text("per commit: " + "; ".join(f"{k}: {n} probe(s)" for k, n in prs.items())))
    if b.unattributed:
        lines.append(
            Text(
                f"{len(b.unattributed)} changing probe(s) could not be attributed", style="bold red"
            )
        )
    return Group(*lines)


def _who_plain(p: ProbeBisection) -> str:
    return _who(p).plain


def bisect_markdown(b: Bisection) -> str:
    """The same document as the table, for a release page or a ticket: the two releases'
    commits and how they were found, one row per changing probe, the count per commit."""
    lines = [
        f"## bisect coreai-torch {md_text(b.old)} → {md_text(b.new)}",
        "",
        f"{len(b.probes)} of {b.probed} probes change, over {len(b.commits)} "
        f"first-parent commits of {md_text(b.repo)}.",
        "",
    ]
    for release, commit in ((b.old, b.old_commit), (b.new, b.new_commit)):
        check = b.wheel_check[release]
        lines.append(
            f"- {md_line(release)}: {md_code(commit.short)} ({md_text(b.found_by[release])}); "
            f"wheel: {'same files as the commit' if check == WHEEL_SAME else md_text(check)}"
        )
    lines += ["", "| probe | release step | changed by |", "|---|---|---|"]
    lines += [
        f"| {md_text(p.regime.id)} | {p.release.shipped} | {md_text(_who_plain(p))} |"
        for p in b.probes
    ]
    prs: dict[str, int] = {}
    for p in b.probes:
        for t in p.transitions:
            prs[t.commit.label()] = prs.get(t.commit.label(), 0) + 1
    if prs:
        lines += [
            "",
            "per commit: " + "; ".join(f"{md_text(k)}: {n} probe(s)" for k, n in prs.items()),
        ]
    if b.unattributed:
        lines += [
            "",
            f"**{len(b.unattributed)} changing probe(s) could not be attributed**: "
            + ", ".join(md_text(p.regime.id) for p in b.unattributed),
        ]
    return "\n".join(lines) + "\n"
