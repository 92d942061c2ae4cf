"""Value conditions (`conditions.toml`) and their check against a real checkpoint.

A checkpoint is read tensor by tensor with safetensors' lazy reader: only the tensors a condition
names are loaded, never the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle.catalog.schema import DataFileError, Fields, unique
from oracle.infra.checkpoint import WeightsError
from oracle.infra.tomlfile import read_toml

CONDITIONS_FILE = Path(__file__).with_name("conditions.toml")
__all__ = ["Condition", "ConditionCheck", "check", "load_conditions"]


@dataclass(frozen=True)
class Condition:
    construct: str
    name: str
    when: str
    tensor_suffix: str
    below: float = -math.inf
    above: float = math.inf
    params: dict[str, Any] = field(default_factory=dict)  # the probe override that realises it


@dataclass(frozen=True)
class ConditionCheck:
    holds: bool
    detail: str
    weights: str


_KEYS = ("construct", "name", "when", "tensor_suffix", "below", "above", "params")


def load_conditions(path: Path = CONDITIONS_FILE) -> dict[str, list[Condition]]:
    """Every condition by construct, each value checked (oracle.catalog.schema), one line
    otherwise."""
    data = read_toml(path, DataFileError)
    fields = Fields(path, DataFileError)
    fields.keys(data, ("condition",), "the file")
    out: dict[str, list[Condition]] = {}
    names: list[tuple[str, str]] = []
    for where, raw in fields.tables(data, "condition"):
        fields.keys(raw, _KEYS, where)
        if "below" not in raw and "above" not in raw:
            fields.problem(f"{where} needs 'below' or 'above' (the threshold it checks)")
        cond = Condition(
            fields.kind(raw, "construct", where),
            fields.line(raw, "name", where),
            fields.line(raw, "when", where),
            fields.text(raw, "tensor_suffix", where),
            fields.number(raw, "below", where, -math.inf) if "below" in raw else -math.inf,
            fields.number(raw, "above", where, math.inf) if "above" in raw else math.inf,
            dict(fields.table(raw, "params", where)),
        )
        names.append((where, f"{cond.construct}/{cond.name}"))
        out.setdefault(cond.construct, []).append(cond)
    unique(fields, names, "condition")
    return out


def check(condition: Condition, weights: Path) -> ConditionCheck:
    # numpy and safetensors only when a checkpoint is read: the CLI starts without them.
    import numpy as np
    from safetensors import SafetensorError, safe_open

    try:
        handle = safe_open(str(weights), framework="np")
    except (OSError, SafetensorError) as exc:
        raise WeightsError(f"{weights}: not a readable safetensors file ({exc})") from None
    outside = total = tensors = nan = inf = 0
    lowest, highest = np.inf, -np.inf
    with handle as f:
        for name in f.keys():  # noqa: SIM118 - safe_open handles are not mappings
            if not name.endswith(condition.tensor_suffix):
                continue
            values = f.get_tensor(name).astype(np.float64)
            tensors += 1
            total += values.size
            # ±inf is an ordinary value here (above any `above`, below any `below`); NaN is
            # compared with nothing (every comparison is False) and is counted on its own.
            outside += int(((values < condition.below) | (values > condition.above)).sum())
            nan += int(np.isnan(values).sum())
            inf += int(np.isinf(values).sum())
            real = values[~np.isnan(values)]
            if real.size:
                lowest, highest = min(lowest, real.min()), max(highest, real.max())
    if tensors == 0:
        raise WeightsError(
            f"{weights}: no tensor named *{condition.tensor_suffix}; cannot "
            f"check whether {condition.when}"
        )
    suffix = condition.tensor_suffix
    if nan and not outside:
        # Not "does not hold": a NaN statistic makes the module output NaN in torch itself,
        # under any converter, so no value threshold on it decides anything; nor "holds":
        # re-exporting cannot repair it. The checkpoint is broken, and the answer says so.
        raise WeightsError(
            f"{weights}: {suffix} has {nan} NaN of {total} values; the module "
            f"then outputs NaN in torch itself, so whether {condition.when} "
            f"cannot be decided (the checkpoint is broken, not its export)"
        )
    ranged = f"range {lowest:.3g} .. {highest:.3g}" if lowest <= highest else "no values"
    odd = [f"{n} {what}" for n, what in ((nan, "NaN"), (inf, "inf")) if n]
    detail = (
        f"{outside} of {total} {suffix} values in {tensors} tensors meet it "
        f"({'; '.join([ranged, *odd])})"
    )
    return ConditionCheck(outside > 0, detail, str(weights))
