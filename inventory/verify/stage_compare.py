"""Two sides' programs compared stage by stage: what a stored pair holds (`chain._Parts.pair`).
Its own module because the stored comparisons are keyed by the code that makes them
(`parts.COMPARING`): an edit elsewhere in verify leaves them as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inventory.verify.converted_side import ConvertedSide
from oracle.compare import compare_texts, normalise


def _stage(old: ConvertedSide, new: ConvertedSide, stage: str, work: Path) -> dict[str, Any]:
    if not old.ok or not new.ok:
        return {"identity": "cannot-convert"}
    if stage == "emitted" and (old.emitted_is_optimized or new.emitted_is_optimized):
        # a to_coreai() that returned the optimized program, not captured before its rewrite
        return {"identity": "not-comparable"}
    a, b = Path(old.files[stage]).read_text(), Path(new.files[stage]).read_text()
    (work / f"{stage}.old.normalised.mlir").write_text(normalise(a))
    (work / f"{stage}.new.normalised.mlir").write_text(normalise(b))
    result = compare_texts(
        a, b, f"{stage} coreai-torch {old.converter}", f"{stage} coreai-torch {new.converter}"
    )
    out: dict[str, Any] = {
        "normalised": {
            side: str(work / f"{stage}.{side}.normalised.mlir") for side in ("old", "new")
        }
    }
    if result.identical:
        return {**out, "identity": "identical", "changed_lines": 0}
    (work / f"{stage}.diff").write_text(result.diff)
    return {
        **out,
        "identity": "differs",
        "changed_lines": result.changed_lines,
        "diff": str(work / f"{stage}.diff"),
    }


def compared(old: ConvertedSide, new: ConvertedSide, work: Path) -> dict[str, Any]:
    """Both stages of two sides compared, the normalised texts and diffs kept in `work`."""
    return {
        "emitted": _stage(old, new, "emitted", work),
        "shipped": _stage(old, new, "shipped", work),
    }
