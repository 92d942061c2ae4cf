"""The output formats: one choice per run, and the forms a command has.

Modelled on pip-audit's `OutputFormatChoice`: a command picks one format (`--format`, or its
aliases `--json` and `--markdown`) and states the formats it has a form in (`forms(...)`, beside
its renderer); a format it has none in is refused before the run, with nothing imported, read or
built. Which writer renders a format is `inventory.output.writer_for`, the one switch.
"""

from __future__ import annotations

from enum import StrEnum

from inventory.errors import UsageError


class OutputFormat(StrEnum):
    """One member per format; each has one branch in `inventory.output.writer_for` (mypy holds
    the switch whole: a member without a branch fails the type check)."""

    TABLE = "table"  # the terminal rendering (rich)
    JSON = "json"  # the versioned envelope
    MARKDOWN = "markdown"
    HTML = "html"  # inventory/report/html_report.py
    CYCLONEDX = "cyclonedx"  # inventory/report/cyclonedx_report.py

    @classmethod
    def choose(
        cls,
        as_json: bool = False,
        markdown: bool = False,
        chosen: str | None = None,
        command: str | None = None,
        forms: frozenset[OutputFormat] | None = None,
    ) -> OutputFormat:
        """The one format of a run: `--format`, or its aliases `--json` and `--markdown`; two of
        them together are a usage error (never one silently winning), and so is a format not
        among the `forms` of `command` (checked here, before the run)."""
        fmt = cls._chosen(as_json, markdown, chosen)
        if command is not None:
            check_supported(command, fmt, BASIC if forms is None else forms)
        return fmt

    @classmethod
    def _chosen(cls, as_json: bool, markdown: bool, chosen: str | None) -> OutputFormat:
        given = [
            flag
            for flag, on in (
                ("--json", as_json),
                ("--markdown", markdown),
                (f"--format {chosen}", chosen is not None),
            )
            if on
        ]
        if len(given) > 1:
            raise UsageError(f"{' and '.join(given)}: give one output format")
        if chosen is not None:
            try:
                return cls(chosen.strip().lower())
            except ValueError:
                raise UsageError(
                    f"--format {chosen}: not a format (one of {', '.join(f.value for f in cls)})"
                ) from None
        if as_json:
            return cls.JSON
        if markdown:
            return cls.MARKDOWN
        return cls.TABLE


# every command has a terminal table and a JSON envelope
BASIC: frozenset[OutputFormat] = frozenset({OutputFormat.TABLE, OutputFormat.JSON})


def forms(*more: OutputFormat) -> frozenset[OutputFormat]:
    """The formats a command has a form in: the table and JSON, and `more`. Stated by the
    command (a constant beside its renderer), so that a refusal needs no writer imported."""
    return BASIC | frozenset(more)


def check_supported(command: str, fmt: OutputFormat, able: frozenset[OutputFormat]) -> None:
    """A format the command has no form in is a usage error, said before the run (no writer
    imported, nothing read or built)."""
    if fmt in able:
        return
    said = ", ".join(f.value for f in OutputFormat if f in able)
    raise UsageError(f"--format {fmt.value}: {command} has no {fmt.value} form (its forms: {said})")
