"""Every exception class of `oracle/` and `inventory/` is classified: a user error derives from
one of the two roots the command line maps to exit code 2 (`OracleUserError`, `InventoryError`),
or it is named below as internal, with the reason. A new class that is neither fails here, so a
user error can never become an internal error (exit 4) by being left out of a list."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import typer
from cli import invoke, one_line
from layers import COREAI_ALLOWED

import inventory
import oracle
from inventory.errors import USER_ERRORS, ExitCode, InventoryError
from inventory.terminal import answering
from oracle.errors import OracleUserError

ROOTS = (InventoryError, OracleUserError)

# Exceptions that are not the user's to fix: an outcome contained and reported as such, a signal
# caught by its own module, or a defect (exit 4 is the right answer if one ever escapes).
INTERNAL = {
    # a record verify wrote, read back by a format from the JSON document, is not in the form
    # its to_json writes: a bug of the writer, never the user's input (exit 4, one line)
    "inventory.verify.decode.RecordError": "a writer's bug: its own record read back malformed",
    # a worker's answer not in its kind's form (a field missing or mistyped), found where the
    # answer is read once: a defect of a worker script or its client (exit 4, one line)
    "oracle.executors.answers.AnswerError": "a worker's bug: its answer is not in its form",
    # a worker died (native abort, killed) or did not answer in time: the converter's crash or
    # hang, contained as an outcome of the run (a finding, or inconclusive), never bad input
    "oracle.clients.worker_pool.WorkerFailure": (
        "a converter crash or hang, contained as an outcome"
    ),
    # in the asset worker (in a converter environment): no input can be made for the asset (a
    # dynamic axis); returned as the run's outcome (stage "inputs"), never raised further
    "oracle.workers.asset_worker.CannotRun": "the asset worker's own limit, reported as an outcome",
    # a page or file that is not there: the project is not listed; caught in package_index
    "oracle.envs.package_index._Absent": "a signal inside package_index",
    # a fetch from the remote tier ended because the run is being stopped (SIGTERM, Ctrl-C): it
    # ends a job's thread while the main thread unwinds from the signal, never reaches a user
    "oracle.store.remote_reads.RemoteStopped": "a signal: the run is stopping",
    # a part of the whole-program check not stored yet (read-only reads); caught by its callers
    "inventory.verify.chain.Missing": "a signal: not stored yet",
    # a registry sweep read from the store alone lacks a comparison; caught by `sweep_steps`,
    # which says the step's changes were not looked for
    "inventory.sweep.NotStored": "a signal: not stored yet",
    # the CycloneDX document did not validate: a defect of the renderer, not of the input
    "inventory.report.cyclonedx_report.BomError": "a defect of the renderer",
}


def _modules() -> list[str]:
    """Every module of both packages, imported. Only in-environment code (the modules that may
    import coreai) may fail to import here; any other failure fails the test."""
    names, failed = [], {}
    for package in (oracle, inventory):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # noqa: BLE001 - named below unless in-environment
                failed[info.name] = f"{type(exc).__name__}: {exc}"
                continue
            names.append(info.name)
    assert set(failed) <= set(COREAI_ALLOWED), failed
    return names


def _exception_classes() -> dict[str, type[BaseException]]:
    """`module.Class` -> every exception class a module of both packages defines."""
    found = {}
    for name in _modules():
        for obj in vars(importlib.import_module(name)).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


CLASSES = _exception_classes()


def test_the_command_line_maps_the_two_roots_and_nothing_else():
    assert USER_ERRORS == ROOTS
    assert not issubclass(InventoryError, OracleUserError)
    assert not issubclass(OracleUserError, InventoryError)


def test_every_exception_class_is_a_user_error_or_named_internal():
    unclassified = sorted(
        name for name, cls in CLASSES.items() if not issubclass(cls, ROOTS) and name not in INTERNAL
    )
    assert not unclassified, (
        f"{unclassified}: derive each from OracleUserError (oracle/) or "
        "InventoryError (inventory/), or name it in INTERNAL with why"
    )


def test_the_internal_list_names_only_classes_that_exist_and_are_not_user_errors():
    assert set(INTERNAL) <= set(CLASSES), set(INTERNAL) - set(CLASSES)
    both = sorted(n for n in INTERNAL if issubclass(CLASSES[n], ROOTS))
    assert not both, f"{both}: user errors, yet named internal"


def test_the_oracle_derives_from_its_root_and_never_from_the_inventorys():
    for name, cls in CLASSES.items():
        if name.startswith("oracle.") and name not in INTERNAL:
            assert issubclass(cls, OracleUserError), name
            assert not issubclass(cls, InventoryError), name


def test_the_walk_sees_the_classes_it_must():
    # the classes callers catch by name: a walk that lost them would classify nothing
    for name in (
        "oracle.catalog.releases.EnvError",
        "oracle.store.result_store.StoreError",
        "oracle.catalog.fixes.FixError",
        "oracle.catalog.schema.DataFileError",
        "oracle.catalog.conformance.ConformanceError",
        "oracle.envs.package_index.SourceError",
        "inventory.errors.UsageError",
        "inventory.scan.model.BundleError",
        "inventory.trace.trust.UntrustedCode",
        "inventory.trace.recipes.RecipeError",
    ):
        assert name in CLASSES, name


def _answered(exc: BaseException) -> int:
    try:
        with answering("plan"):
            raise exc
    except typer.Exit as stop:
        return stop.exit_code
    raise AssertionError("answering let the error through")


@pytest.mark.parametrize("name", sorted(n for n in CLASSES if n not in INTERNAL))
def test_each_user_error_is_one_line_and_exit_2(name, capsys):
    assert _answered(CLASSES[name]("bad input [/x] to fix")) == ExitCode.USAGE
    assert capsys.readouterr().err.splitlines() == ["error: bad input [/x] to fix"]


@pytest.mark.parametrize("name", sorted(n for n in INTERNAL if n in CLASSES))
def test_an_internal_error_that_escapes_is_exit_4(name, capsys):
    assert _answered(CLASSES[name]("broken")) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: internal error ({CLASSES[name].__name__}): broken"]


@pytest.mark.parametrize(
    ("args", "variables", "said"),
    [
        # an environment variable the tool cannot use: the oracle's SettingError
        (("envs", "list"), {"INVENTORY_INSTALLER": "conda"}, "INVENTORY_INSTALLER='conda'"),
        # a catalog file that is not there: the oracle's EnvError
        (
            ("plan", "--to", "0.4.2", "-q"),
            {"INVENTORY_CATALOG": "{tmp}/none.toml"},
            "INVENTORY_CATALOG",
        ),
        # a bundle the registry does not hold: the inventory's RegistryError
        (
            ("affected", "--fix", "40", "--bundle", "nope", "-q"),
            {},
            "'nope' is not in the registry",
        ),
    ],
)
def test_a_bad_input_from_either_root_exits_2_with_one_line(args, variables, said, tmp_path):
    proc = invoke(*args, **{k: v.format(tmp=tmp_path) for k, v in variables.items()})
    assert proc.returncode == ExitCode.USAGE, (proc.returncode, proc.stderr)
    line = one_line(proc)
    assert line.startswith("error: ") and said in line, line
