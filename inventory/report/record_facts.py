"""What a bundle's JSON record holds that the terminal table says and the reports built from the
record (HTML, CycloneDX) must say as well: whether its exporter is assumed, and each runtime a
measurement moved to because another refused it. Read from the record in one place, so the two
reports cannot read it two ways."""

from __future__ import annotations

from typing import Any

from inventory.answer_types import detour


def exporter_assumed(b: dict[str, Any]) -> bool:
    """The registry records no exporter and the answer assumed one (`plan` and `verify` say so
    in `exporter_assumed`; `affected` by an `exporter_recorded` of unknown)."""
    if "exporter_assumed" in b:
        return bool(b["exporter_assumed"])
    return b.get("exporter_recorded") == "unknown" and b.get("exporter") not in (None, "unknown")


def exporter_label(b: dict[str, Any]) -> str:
    """`0.4.1`, or `0.4.0 (assumed)` as the table writes it."""
    return f"{b.get('exporter')}{' (assumed)' if exporter_assumed(b) else ''}"


def detours(b: dict[str, Any]) -> list[str]:
    """`measured on <runtime> after <runtime>: <why it was left>` for each runtime the bundle's
    probes were measured on after another refused them (an `affected` bundle's record)."""
    found = {
        (p["runtime"], attempt)
        for p in b.get("probes") or []
        if p.get("runtime")
        for attempt in p.get("runtime_attempts") or []
    }
    return [detour(runtime, attempt) for runtime, attempt in sorted(found)]
