"""Renderers for `scan`: JSON in the versioned envelope, and the terminal text."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.scan import BundleScan, Entry, RegistryLink, ScanReport

_STATUS_STYLE = {
    "agree": "green",
    "disagree": "bold red",
    "cannot-tell": "yellow",
    "not-traced": "dim",
    "info": "cyan",
}
_TOP_OPS = 12


def _short(op: str) -> str:
    return op.removeprefix("coreai.")


def _shape(t: dict[str, Any]) -> str:
    shape = t.get("shape")
    kind = t.get("kind")
    if shape is None:
        return f"{t.get('name') or '-'} ({kind or 'unranked'})"
    dims = ", ".join(str(d) for d in shape)
    return f"{t.get('name') or '-'} {'state ' if kind == 'state' else ''}{t['dtype']} [{dims}]"


def _io(items: list[dict[str, Any]]) -> str:
    """Tensors one by one; state-write tokens counted, not listed."""
    tokens = [t for t in items if t.get("kind") == "token"]
    text = "; ".join(_shape(t) for t in items if t.get("kind") != "token")
    if tokens:
        text += f"{'; ' if text else ''}{len(tokens)} state-write token(s)"
    return text or "none"


def scan_dict(s: BundleScan) -> dict[str, Any]:
    return {
        "path": s.path,
        "name": s.name,
        "error": s.error,
        "metadata": s.metadata,
        "producer": s.producer,
        "producer_core": s.producer_core,
        "asset_version": s.asset_version,
        "created": s.created,
        "integrity": s.integrity,
        "reader": s.reader,
        "attempts": s.attempts,
        "core_metadata": s.core_metadata,
        "entries": [asdict(e) for e in s.entries],
        "composite_bodies": s.composite_bodies,
        "weights": s.weights,
        "notes": s.notes,
        "exporter": s.exporter,
        "files": s.files,
        "loads": [
            {
                "core": o.core,
                "runtime": o.runtime,
                "outcome": o.outcome,
                "stage": o.stage or None,
                "error": o.error or None,
                "signal": o.signal or None,
                "log": o.files.get("log"),
            }
            for o in s.loads
        ],
    }


def link_dict(link: RegistryLink) -> dict[str, Any]:
    return {
        "bundle": link.bundle,
        "scans": link.scans,
        "matched_by": link.matched_by,
        "files_missing": link.files_missing,
        "findings": [asdict(f) for f in link.findings],
        "cannot_establish": link.cannot_establish,
    }


def scan_record(report: ScanReport) -> dict[str, Any]:
    return {
        "bundles": [scan_dict(s) for s in report.scans],
        "registry": report.registry,
        "links": [link_dict(link) for link in report.links] if report.links is not None else None,
        "disagreements": report.disagreements,
        "errors": [s.error for s in report.errors],
        "not_loading": [
            {
                "bundle": s.name,
                "path": s.path,
                "deployment": list(s.deployment),
                "deployment_source": s.deployment_source,
                "runtimes": [{"core": o.core, "outcome": o.outcome} for o in s.not_loading],
            }
            for s in report.not_loading
        ],
    }


def _composites(e: Entry) -> list[str]:
    out = []
    for c in e.composites:
        bodies = len(c.bodies)
        text = (
            f"{c.kind} x{c.call_sites} call site{'s' if c.call_sites != 1 else ''}, "
            f"{bodies} bod{'y' if bodies == 1 else 'ies'}"
        )
        if c.nested:
            text += f", {c.nested} more inside other composites"
        dtypes = sorted({d for b in c.bodies for d in b["inputs"][:1]})
        if dtypes:
            text += f" ({'/'.join(dtypes)} in)"
        out.append(text)
    return out


def _ops(ops: dict[str, int]) -> str:
    items = list(ops.items())
    text = ", ".join(f"{_short(op)} {n}" for op, n in items[:_TOP_OPS])
    if len(items) > _TOP_OPS:
        rest = sum(n for _op, n in items[_TOP_OPS:])
        text += f", {len(items) - _TOP_OPS} more kinds ({rest} ops)"
    return text or "none"


def _row(grid: Table, label: str, value: str, style: str = "") -> None:
    grid.add_row(Text(label, style="dim"), Text(value, style=style))


def scan_block(s: BundleScan) -> Group:
    title = Text(s.name, style="bold")
    title.append(f"  {s.path}", style="dim")
    if not s.ok:
        return Group(title, Text(f"  error: {s.error}", style="red"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    created = s.created or "no creationDate"
    producer = s.producer or "none (coreai-core 1.0.0b1 era)"
    _row(grid, "producer", producer, "" if s.producer else "yellow")
    if s.exporter:
        _row(grid, "exporter", s.exporter)
    _row(grid, "asset", f"version {s.asset_version or '?'}, created {created}")
    _row(grid, "integrity", s.integrity)
    reader = s.reader
    _row(grid, "read with", f"coreai-core {reader['core']} ({reader['env']}): {reader['why']}")
    for attempt in s.attempts:
        _row(grid, "  failed", attempt, "yellow")
    w = s.weights
    dtypes = ", ".join(f"{k} {v}" for k, v in sorted((w.get("dtypes") or {}).items()))
    _row(
        grid,
        "weights",
        f"{w.get('fingerprint')}  ({w.get('constants')} tensors, "
        f"{w.get('bytes')} bytes{'; ' + dtypes if dtypes else ''})",
    )
    for e in s.entries:
        _row(grid, "entry", e.name, "bold")
        _row(grid, "  inputs", _io(e.inputs))
        _row(grid, "  outputs", _io(e.outputs))
        dynamic = "; ".join(e.dynamic) if e.dynamic else "none at the interface"
        if e.dynamic_results:
            dynamic += f"; {e.dynamic_results} op(s) with a dynamic result"
        _row(grid, "  dynamic", dynamic)
        composites = _composites(e)
        _row(grid, "  composites", "; ".join(composites) if composites else "none")
        _row(
            grid,
            "  ops",
            _ops({k: v for k, v in e.ops.items() if not k.endswith((".constant", ".output"))}),
        )
    for o in s.loads:
        style = "" if o.loads else ("dim" if o.outcome == "not-run" else "bold red")
        _row(
            grid, "loads" if o is s.loads[0] else "", f"coreai-core {o.core}: {o.describe()}", style
        )
    for note in s.notes:
        _row(grid, "note", note, "yellow")
    return Group(title, grid)


def link_block(link: RegistryLink) -> Group:
    if link.bundle is None:
        reason = next(iter(link.matched_by.values()), "")
        return Group(Text(f"{', '.join(link.scans)}: no registry entry ({reason})", style="yellow"))
    how = "; ".join(f"{p.rsplit('/', 1)[-1]} by {h}" for p, h in link.matched_by.items())
    head = Text(f"{link.bundle}", style="bold")
    head.append(f"  matched: {how}", style="dim")
    table = Table(show_header=True, show_lines=False, box=None, pad_edge=False)
    for col, ratio in (
        ("", 1),
        ("subject", 1),
        ("traced / recorded", 2),
        ("scanned", 2),
        ("why", 4),
    ):
        table.add_column(col, overflow="fold", ratio=ratio)
    for f in link.findings:
        table.add_row(
            Text(f.status, style=_STATUS_STYLE.get(f.status, "")),
            f.subject,
            f.traced,
            f.scanned,
            f.reason,
        )
    parts: list[Any] = [head, table]
    if link.files_missing:
        parts.append(Text(f"  not scanned: {', '.join(link.files_missing)}", style="dim"))
    parts.append(Text("  a scan cannot establish:", style="dim"))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in link.cannot_establish:
        grid.add_row(Text("    -", style="dim"), Text(line, style="dim"))
    parts.append(grid)
    return Group(*parts)


def scan_text(report: ScanReport) -> Group:
    parts: list[Any] = []
    for s in report.scans:
        parts += [scan_block(s), Text("")]
    if report.links is not None:
        parts.append(Text(f"against the registry {report.registry}", style="bold underline"))
        for link in report.links:
            parts += [link_block(link), Text("")]
    ok = sum(1 for s in report.scans if s.ok)
    summary = f"{ok} of {len(report.scans)} bundle(s) read"
    for s in report.not_loading:
        parts.append(
            Text(
                f"{s.name} does not load on a deployment runtime ("
                f"{s.deployment_source}): "
                + ", ".join(f"coreai-core {o.core} {o.outcome}" for o in s.not_loading),
                style="bold red",
            )
        )
    if report.scans:
        summary += f"; {len(report.not_loading)} of them not loading on a deployment runtime"
    if report.links is not None:
        summary += f"; {report.disagreements} disagreement(s) with the registry"
    parts.append(Text(summary))
    return Group(*parts)


def scan_markdown(report: ScanReport) -> str:
    """For a ticket: one row per bundle (producer, exporter, weights, each runtime's answer),
    what does not load where it is deployed, the registry's disagreements; each bundle's whole
    reading (entry points, ops, composites) behind `<details>`, as the terminal prints it."""
    from inventory.report.text import html_text, md_code, md_text

    ok = sum(1 for s in report.scans if s.ok)
    out = [
        "# Scan of shipped bundles",
        "",
        f"**{ok} of {len(report.scans)} bundle(s) read; {len(report.not_loading)} not loading "
        f"on a deployment runtime**",
        "",
        "| bundle | producer | exporter | weights | loads |",
        "|---|---|---|---|---|",
    ]
    for s in report.scans:
        if not s.ok:
            out.append(f"| {md_text(s.name)} | - | - | - | error: {md_text(s.error or '')} |")
            continue
        loads = "; ".join(f"{o.core} {o.outcome}" for o in s.loads) or "not tried"
        out.append(
            f"| {md_text(s.name)} | {md_text(s.producer or 'none (coreai-core 1.0.0b1 era)')} | "
            f"{md_text(s.exporter or '-')} | {md_code(s.weights.get('fingerprint'), cell=True)} | "
            f"{md_text(loads)} |"
        )
    out.append("")
    out += [
        f"- **{md_text(s.name)}** does not load on a deployment runtime "
        f"({md_text(s.deployment_source)}): "
        + ", ".join(f"coreai-core {md_text(o.core)} {md_text(o.describe())}" for o in s.not_loading)
        for s in report.not_loading
    ]
    if report.links is not None:
        out += [
            "",
            f"## Against the registry {md_code(report.registry)}",
            "",
            f"{report.disagreements} disagreement(s).",
            "",
            "| bundle | status | subject | traced / recorded | scanned | why |",
            "|---|---|---|---|---|---|",
        ]
        for link in report.links:
            name = md_text(link.bundle or ", ".join(link.scans))
            out += [
                f"| {name} | {f.status} | {md_text(f.subject)} | {md_text(f.traced)} | "
                f"{md_text(f.scanned)} | {md_text(f.reason)} |"
                for f in link.findings
            ]
    for s in report.scans:
        out += [
            "",
            f"<details><summary>{html_text(s.name)}</summary>",
            "",
            *_fenced(_plain(scan_block(s)).rstrip()),
            "",
            "</details>",
        ]
    return "\n".join(out) + "\n"


def _fenced(text: str) -> list[str]:
    """A fenced code block holding `text` verbatim: fenced by more backticks than any run in it,
    so a line of the text cannot close it."""
    import re

    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def _plain(renderable: Any) -> str:
    import io

    from rich.console import Console

    console = Console(width=120, file=io.StringIO(), record=True, markup=False, emoji=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())
