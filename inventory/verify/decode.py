"""The one checked read of a record verify wrote (its JSON form, read back by a format that
renders from the document): a missing or mistyped field is one `RecordError` naming the record
and the field, never a KeyError where the value is first used."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class RecordError(ValueError):
    """A record that is not in the form its `to_json` writes (a bug of the writer or of the
    document's producer, not the user's input)."""


def mapping(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise RecordError(f"{what}: expected an object, found {type(value).__name__}")
    return value


def field(record: dict[str, Any], name: str, kind: type[T], what: str) -> T:
    if name not in record:
        raise RecordError(f"{what}: no field {name!r}")
    value = record[name]
    if not isinstance(value, kind):
        raise RecordError(
            f"{what}: field {name!r} is {type(value).__name__}, expected {kind.__name__}"
        )
    return value


def optional(record: dict[str, Any], name: str, kind: type[T], what: str) -> T | None:
    """A field that is present and either null or of `kind`."""
    if name in record and record[name] is None:
        return None
    return field(record, name, kind, what)


def number(record: dict[str, Any], name: str, what: str) -> float | None:
    """A field that is absent, null or a number, kept as written (an int stays an int, so the
    JSON written from it again is the same)."""
    value = record.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(f"{what}: field {name!r} is {type(value).__name__}, expected a number")
    return value
