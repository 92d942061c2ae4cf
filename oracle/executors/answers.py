"""A worker's answer to a call, read once where it reaches the caller (`Session.calls`): one
checked decode per kind of answer, then a frozen type the caller reads.

The wire stays as the worker writes it (a JSON object per answer, `oracle/workers/`): the
executors carry it between machines as it is, and a caller that stores an answer (a converted
side, a cut) stores `wire`, the worker's own form, so the stored files do not change. What a
caller reads, it reads from the typed fields. An answer not in its kind's form (a field missing
or of another type) is one `AnswerError` naming the worker and the field: a defect of a worker
script or of its client, never a KeyError where the value is first used, and never stored.

Every answer has the same envelope: `ok`; on failure its `stage` and `error` (a worker that
died or did not answer is `stage: worker`, `calls.worker_failure`); `environment_fault` where
the call asked whether the environment itself is at fault; `wall_seconds`, the call's own time
(absent where it never ran: a job no node of a cluster could run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
A = TypeVar("A")

# how one kind of answer is read: the wire form in, its type out (or AnswerError)
Decode = Callable[[dict[str, Any]], A]


class AnswerError(ValueError):
    """A worker's answer not in the form of its kind: a defect of the worker script or of the
    client reading it (one line, exit 4), never the user's input nor the converter's outcome."""


# ---- the checked reads -------------------------------------------------------------------------


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _type_name(value: object) -> str:
    return _kind_name(type(value)) if value is not None else "null"


def _field(record: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    if name not in record:
        raise AnswerError(f"{what}: no field {name!r}")
    value = record[name]
    # a JSON boolean is never a number, though Python's bool is an int
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise AnswerError(
            f"{what}: field {name!r} is {_type_name(value)}, expected {_kind_name(kind)}"
        )
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _str(record: dict[str, Any], name: str, what: str) -> str:
    value: str = _field(record, name, str, what)
    return value


def _bool(record: dict[str, Any], name: str, what: str) -> bool:
    value: bool = _field(record, name, bool, what)
    return value


def _int(record: dict[str, Any], name: str, what: str) -> int:
    value: int = _field(record, name, int, what)
    return value


def _number(record: dict[str, Any], name: str, what: str) -> float:
    return float(_field(record, name, (int, float), what))


def _object(record: dict[str, Any], name: str, what: str) -> dict[str, Any]:
    value: dict[str, Any] = _field(record, name, dict, what)
    return value


def _strings(record: dict[str, Any], name: str, what: str) -> tuple[str, ...]:
    values: list[Any] = _field(record, name, list, what)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise AnswerError(f"{what}: {name}[{i}] is {_type_name(value)}, expected string")
    return tuple(values)


def _counts(record: dict[str, Any], name: str, what: str) -> dict[str, int]:
    """An object of whole numbers (locations by kind, constants by dtype)."""
    values = _object(record, name, what)
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise AnswerError(f"{what}: {name}[{key!r}] is {_type_name(value)}, expected number")
    return dict(values)


def _optional(
    record: dict[str, Any], name: str, read: Callable[[dict[str, Any], str, str], T], what: str
) -> T | None:
    """A field that may be absent or null."""
    if record.get(name) is None:
        return None
    return read(record, name, what)


def _items(
    record: dict[str, Any], name: str, read: Callable[[dict[str, Any], str], T], what: str
) -> tuple[T, ...]:
    """An array of objects, each read by `read(item, what)`."""
    values: list[Any] = _field(record, name, list, what)
    out = []
    for i, value in enumerate(values):
        where = f"{what}, {name}[{i}]"
        if not isinstance(value, dict):
            raise AnswerError(f"{where}: is {_type_name(value)}, expected object")
        out.append(read(value, where))
    return tuple(out)


# ---- the envelope ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Envelope:
    """What every answer carries, whatever its kind."""

    ok: bool
    stage: str | None  # on failure: where it failed ("worker": it died or did not answer)
    error: str | None  # on failure: its one line
    environment_fault: str | None  # the environment cannot run the worker (`Call.faults`)
    wall_seconds: float | None  # None: the call never ran here

    @classmethod
    def of(cls, wire: dict[str, Any], what: str) -> Envelope:
        ok = _bool(wire, "ok", what)
        return cls(
            ok=ok,
            stage=None if ok else _str(wire, "stage", what),
            error=None if ok else _str(wire, "error", what),
            environment_fault=_optional(wire, "environment_fault", _str, what),
            wall_seconds=_optional(wire, "wall_seconds", _number, what),
        )

    @property
    def died(self) -> bool:
        """The worker died (a native abort, killed) or did not answer in time."""
        return self.stage == "worker"


def _read(wire: object, what: str) -> tuple[dict[str, Any], Envelope]:
    if not isinstance(wire, dict):
        raise AnswerError(f"{what}: is {_type_name(wire)}, expected object")
    return wire, Envelope.of(wire, what)


# ---- a whole program converted (`program_worker.py`, op convert_program) ----------------------


@dataclass(frozen=True)
class ProgramFiles:
    emitted: str
    emitted_located: str
    shipped: str
    located: str
    nodes: str
    asset: str
    log: str

    @classmethod
    def of(cls, record: dict[str, Any], what: str) -> ProgramFiles:
        files = _object(record, "files", what)
        where = f"{what}, files"
        return cls(
            **{name: _str(files, name, where) for name in cls.__dataclass_fields__},
        )


@dataclass(frozen=True)
class ProgramAnswer:
    WHAT = "the program worker's answer"

    envelope: Envelope
    files: ProgramFiles | None  # None unless it converted
    wire: dict[str, Any]  # the worker's own form, what a side stores

    @classmethod
    def decode(cls, wire: dict[str, Any]) -> ProgramAnswer:
        record, envelope = _read(wire, cls.WHAT)
        if not envelope.ok:
            return cls(envelope, None, record)
        # read here so a stored side never holds an answer its readers cannot read
        _bool(record, "emitted_is_optimized", cls.WHAT)
        _bool(record, "emitted_before_rewrite", cls.WHAT)
        _object(record, "seconds", cls.WHAT)
        return cls(envelope, ProgramFiles.of(record, cls.WHAT), record)


# ---- an asset run (`asset_worker.py`, op run) ---------------------------------------------------


@dataclass(frozen=True)
class FunctionRun:
    """One function of an asset, as the runtime loaded (and, when executed, ran) it."""

    name: str
    outputs: tuple[str, ...]
    inputs_file: str | None  # the seeded inputs it was fed (absent: not executed)
    outputs_file: str | None  # what it returned (absent: not executed)

    @classmethod
    def of(cls, record: dict[str, Any], what: str, executed: bool) -> FunctionRun:
        # an executed function was fed and returned, both stored
        file = _str if executed else lambda r, n, w: _optional(r, n, _str, w)
        return cls(
            name=_str(record, "name", what),
            outputs=_strings(record, "outputs", what),
            inputs_file=file(record, "inputs_file", what),
            outputs_file=file(record, "outputs_file", what),
        )


@dataclass(frozen=True)
class AssetRun:
    WHAT = "the asset worker's run"

    envelope: Envelope
    functions: tuple[FunctionRun, ...]  # empty unless it loaded
    log: str | None  # None: the worker never got to write one (it died)

    @classmethod
    def decode(cls, wire: dict[str, Any]) -> AssetRun:
        record, envelope = _read(wire, cls.WHAT)
        log = _optional(record, "log", _str, cls.WHAT)
        if not envelope.ok:
            return cls(envelope, (), log)
        executed = _bool(record, "executed", cls.WHAT)
        functions = _items(
            record, "functions", lambda f, where: FunctionRun.of(f, where, executed), cls.WHAT
        )
        return cls(envelope, functions, log)


# ---- an asset re-saved (`asset_worker.py`, ops strip and restamp) -------------------------------


@dataclass(frozen=True)
class Stripped:
    """Every location of an asset made a debuginfo location, counted before and after."""

    locations_before: dict[str, int]
    locations_after: dict[str, int]
    ops: int
    block_args: int
    op_ids_kept: int


@dataclass(frozen=True)
class Resaved:
    WHAT = "the asset worker's re-save"

    envelope: Envelope
    stripped: Stripped | None  # op strip, when it succeeded

    @classmethod
    def decode(cls, wire: dict[str, Any]) -> Resaved:
        record, envelope = _read(wire, cls.WHAT)
        if not envelope.ok or "locations_before" not in record:  # a restamp counts nothing
            return cls(envelope, None)
        what = cls.WHAT
        stripped = Stripped(
            _counts(record, "locations_before", what),
            _counts(record, "locations_after", what),
            _int(record, "ops", what),
            _int(record, "block_args", what),
            _int(record, "op_ids_kept", what),
        )
        return cls(envelope, stripped)


# ---- regions cut out of a program (`cut_worker.py`, op cut) -------------------------------------


@dataclass(frozen=True)
class CutMade:
    id: str
    ok: bool
    error: str | None  # why this cut could not be made

    @classmethod
    def of(cls, record: dict[str, Any], what: str) -> CutMade:
        ok = _bool(record, "ok", what)
        if ok:
            _object(record, "files", what)  # its program, inputs and reference
        return cls(_str(record, "id", what), ok, None if ok else _str(record, "error", what))


@dataclass(frozen=True)
class CutAnswer:
    WHAT = "the cut worker's answer"

    envelope: Envelope
    cuts: tuple[CutMade, ...]  # empty unless the program was cut
    wire: dict[str, Any]  # the worker's own form, what the cuts' record stores

    @classmethod
    def decode(cls, wire: dict[str, Any]) -> CutAnswer:
        record, envelope = _read(wire, cls.WHAT)
        if not envelope.ok:
            return cls(envelope, (), record)
        return cls(envelope, _items(record, "cuts", CutMade.of, cls.WHAT), record)


# ---- a bundle read (`scan_worker.py`, op read) ---------------------------------------------


@dataclass(frozen=True)
class WeightsRead:
    """The weights' fingerprint as a core reads them (what `scan` and `repair` compare)."""

    fingerprint: str
    constants: int
    bytes: int
    dtypes: dict[str, int]
    inline: int
    resources: int
    unresolved_resources: int

    @classmethod
    def of(cls, record: dict[str, Any], what: str) -> WeightsRead:
        weights = _object(record, "weights", what)
        where = f"{what}, weights"
        return cls(
            _str(weights, "fingerprint", where),
            _int(weights, "constants", where),
            _int(weights, "bytes", where),
            _counts(weights, "dtypes", where),
            _int(weights, "inline", where),
            _int(weights, "resources", where),
            _int(weights, "unresolved_resources", where),
        )


@dataclass(frozen=True)
class BundleRead:
    WHAT = "the scan worker's read"

    envelope: Envelope
    weights: WeightsRead | None  # None unless it read the bundle
    wire: dict[str, Any]  # the worker's own form, what `scan` reports from

    @classmethod
    def decode(cls, wire: dict[str, Any]) -> BundleRead:
        record, envelope = _read(wire, cls.WHAT)
        if not envelope.ok:
            return cls(envelope, None, record)
        _object(record, "versions", cls.WHAT)
        _object(record, "metadata", cls.WHAT)
        _items(record, "graphs", lambda graph, where: _str(graph, "name", where), cls.WHAT)
        return cls(envelope, WeightsRead.of(record, cls.WHAT), record)
