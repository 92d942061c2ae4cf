"""A bundle's checkpoint (safetensors), read lazily by tensor name: an instance's own tensors.

The main process resolves, for one traced instance, which checkpoint tensors its probe takes (by
the module paths the registry records) and fingerprints each one; the fingerprints go into the
probe spec, so a result is keyed on the tensors' contents, never on the file's path. The worker
reads the same tensors by name and refuses any whose fingerprint differs. Nothing else of the
checkpoint is read and the model is never loaded. numpy and safetensors are imported only here,
when a checkpoint is read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.errors import OracleUserError


class WeightsError(OracleUserError):
    """A checkpoint cannot be read, or lacks what a probe needs; one line for the user."""


@dataclass(frozen=True)
class TensorSource:
    """Where a probe tensor comes from: a suffix under the instance's module (`module`) or under
    the module that feeds it (`producer`, e.g. a batch norm's depthwise conv)."""

    of: str  # "module" or "producer"
    suffix: str  # e.g. "running_var"
    required: bool = True


def fingerprint(array: Any) -> str:
    """sha256 of a tensor's dtype, shape and bytes (the same in the main process and a worker)."""
    import numpy as np

    array = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{array.dtype.str}{list(array.shape)}".encode())
    h.update(array.tobytes())
    return h.hexdigest()


class Checkpoint:
    """One safetensors file, opened lazily; tensors are read one at a time by name."""

    def __init__(self, path: Path) -> None:
        from safetensors import SafetensorError, safe_open

        self.path = path
        try:
            self._handle = safe_open(str(path), framework="np")
            self.names = frozenset(self._handle.keys())
        except (OSError, SafetensorError) as exc:
            raise WeightsError(f"{path}: not a readable safetensors file ({exc})") from None

    def find(self, module: str, suffix: str) -> str | None:
        """The tensor `module.suffix`, or the one tensor whose name ends with it (a checkpoint of
        a wrapper prefixes every name); None when there is none. Two candidates: an error."""
        exact = f"{module}.{suffix}" if module not in ("", "<top>") else suffix
        if exact in self.names:
            return exact
        hits = sorted(n for n in self.names if n.endswith("." + exact))
        if len(hits) > 1:
            raise WeightsError(
                f"{self.path}: {len(hits)} tensors end with {exact} "
                f"({', '.join(hits[:3])}...); cannot tell which is this module's"
            )
        return hits[0] if hits else None

    def shape(self, name: str) -> list[int]:
        return list(self._handle.get_slice(name).get_shape())

    def read(self, name: str) -> Any:
        try:
            return self._handle.get_tensor(name)
        except (TypeError, ValueError) as exc:  # e.g. bfloat16, which numpy cannot hold
            raise WeightsError(f"{self.path}: tensor {name} cannot be read ({exc})") from None

    def fingerprint(self, name: str) -> str:
        return fingerprint(self.read(name))


def nonfinite(array: Any) -> tuple[int, int]:
    """(NaN count, ±inf count) of a tensor; (0, 0) for a non-float one."""
    import numpy as np

    if not np.issubdtype(array.dtype, np.floating):
        return 0, 0
    return int(np.isnan(array).sum()), int(np.isinf(array).sum())


def refuse_nan(path: Path, name: str, array: Any, what: str) -> None:
    """A probe tensor holding NaN is refused in one line, saying so. Why not measured: a NaN
    statistic or weight makes the module's output NaN in torch itself, the fp32 reference every
    verdict is judged against, under any converter. Both programs then "agree" on NaN and the
    measurement reads as a pass (the error relative to a NaN |ref| is meaningless), and calling
    it a re-export finding would be as wrong: re-exporting cannot repair the checkpoint. The
    honest answer is that this checkpoint is broken, not its export."""
    nan, _inf = nonfinite(array)
    if nan:
        raise WeightsError(
            f"{path}: {name} has {nan} NaN of {array.size} values; {what} then "
            f"outputs NaN in torch itself, under any converter, so there is "
            f"nothing to measure a conversion against (the checkpoint is "
            f"broken, not its export)"
        )


def instance_tensors(
    checkpoint: Checkpoint, sources: dict[str, TensorSource], module: str, producer: str, what: str
) -> dict[str, dict[str, str]]:
    """{probe tensor: {"name", "sha256"}} for one module of a traced instance. A required tensor
    the checkpoint lacks is an error naming the module; an optional one is left out; one
    holding NaN is refused (`refuse_nan`)."""
    out: dict[str, dict[str, str]] = {}
    for target, source in sources.items():
        owner = module if source.of == "module" else producer
        if source.of == "producer" and not producer:
            continue  # this instance has no such producer (a batch norm without a conv)
        name = checkpoint.find(owner, source.suffix)
        if name is None:
            if source.required:
                raise WeightsError(
                    f"{checkpoint.path}: no tensor {owner}.{source.suffix} "
                    f"({what}); the registry records that module path"
                )
            continue
        array = checkpoint.read(name)
        refuse_nan(checkpoint.path, name, array, what)
        out[target] = {"name": name, "sha256": fingerprint(array)}
    return out


def load(path: str, tensors: dict[str, dict[str, str]]) -> dict[str, Any]:
    """In the worker: the named tensors as numpy arrays, each checked against its fingerprint."""
    checkpoint = Checkpoint(Path(path))
    out = {}
    for target, ref in tensors.items():
        array = checkpoint.read(ref["name"])
        if fingerprint(array) != ref["sha256"]:
            raise WeightsError(
                f"{path}: tensor {ref['name']} changed since the probe was planned (sha256 differs)"
            )
        out[target] = array
    return out
