"""The body every reporting command shares: flags checked, then the work under a progress line,
then the result in the chosen format and its warnings on stderr."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from inventory.options import Execution, check_number, check_release
from inventory.output import OutputFormat, Renderer, render
from inventory.report.formats import check_supported
from inventory.terminal import fit_width, out, progress, warn
from oracle.envs import python_ok
from oracle.infra import Progress

T = TypeVar("T")


def ready(*releases: tuple[str, str | None], tolerance: float | None = None) -> None:
    """Before any input is read: each release flag names a release, a tolerance is a finite
    number above 0, and this Python can run the converters."""
    for flag, value in releases:
        check_release(flag, value)
    check_number("--tolerance", tolerance, 0, inclusive=False)
    python_ok()


def registry_file_for(registry: bool, registry_file: Path | None) -> Path:
    """The registry `--registry` reads; `--registry-file` without `--registry` would be read by
    nothing, so it is refused rather than ignored."""
    from inventory.errors import UsageError
    from inventory.registry import DEFAULT_REGISTRY

    if registry_file is not None and not registry:
        raise UsageError(
            f"--registry-file {registry_file} is read only with --registry: add "
            "--registry to probe the shipped instances it lists"
        )
    return registry_file or DEFAULT_REGISTRY


def use_executor(name: str, address: str | None, jobs: int | None = None) -> None:
    """The executor every session of this run uses (`--executor`, and `--jobs` for the local
    one), checked now: a missing extra, an unreachable cluster or a `--jobs` below 1 is one line
    and exit 2, before any work. What befalls the run's machinery (a cluster node lost) is a
    warning line on stderr, even with `-q`."""
    from oracle.executors import choose

    choose(
        name.strip().lower(),
        (address or "").strip() or None,
        notice=lambda line: warn([line]),
        jobs=jobs,
    )


def use_store(value: str | None) -> None:
    """The result store every session of this run uses (`--store`, INVENTORY_STORE), checked
    now: a local folder that cannot be one, a URL of another scheme, a missing extra or a
    bucket that cannot be reached is one line and exit 2, before any work. What the remote tier
    fails at mid-run (a fetch, a publish) is a warning line on stderr, even with `-q`."""
    from oracle.infra import check_cache, store_root
    from oracle.store import location as store_location

    store_location.choose(value, on_notice=lambda line: warn([line]))
    if store_location.local_setting():
        check_cache(store_root(), "--store")


def use_execution(e: Execution) -> None:
    """`use_executor` and `use_store` of a command's `Execution` options."""
    use_executor(e.executor, e.ray_address, e.jobs)
    use_store(e.store)


def run(quiet: bool, work: Callable[[Progress], T]) -> T:
    """`work` with a progress line on stderr (none when `quiet`)."""
    with progress(not quiet) as report_progress:
        return work(report_progress)


def show(
    renderer: Renderer[T],
    fmt: OutputFormat,
    result: T,
    warnings: Sequence[str] = (),
    error: str | None = None,
    to: Path | None = None,
) -> T:
    """The result in `fmt` (its warnings, and an error that ends the run with exit 2, in the
    JSON envelope), on standard output or written to `to` (`--output`), then the warnings on
    stderr."""
    check_supported(renderer.command, fmt, renderer.forms)
    fit_width()
    render(renderer, result, fmt, out, warnings, error, to=to)
    warn(warnings)
    return result


def report(
    renderer: Renderer[T],
    fmt: OutputFormat,
    quiet: bool,
    work: Callable[[Progress], T],
    warnings: Callable[[T], Sequence[str]] = lambda _: (),
    to: Path | None = None,
) -> T:
    """`run` then `show`: the result is returned for the exit code."""
    result = run(quiet, work)
    return show(renderer, fmt, result, warnings(result), to=to)
