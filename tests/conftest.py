"""Shared fixtures: real converter environments, built once per test session and reused.

Environments live in INVENTORY_CACHE (CI gives each run a fresh one), so the first session on a
machine builds them from the package registry exactly as a user's first run does. A test that
needs an environment asks for it through `env` or `converter_envs`; no test relies on an earlier
test file having built one. Under CI (`CI=true`, set by `.ci/run`) an environment that cannot be
built fails the run; elsewhere (say, offline) the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from doubles import faults
from suite_envs import need_env

from oracle.catalog.releases import load_catalog, version_key
from oracle.clients import worker_pool
from oracle.clients.worker_pool import Pool
from oracle.envs.environment import Env
from oracle.infra.paths import envs_dir

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"

# The fault doubles (tests/helpers/doubles/faults.py): INVENTORY_FAULT and INVENTORY_WORKER_FAULT,
# read by test code only, act in this process; a process a test starts gets them with
# `faults.fault_env`.
faults.install()


def pytest_configure(config: pytest.Config) -> None:
    """The suite computes its answers on result stores it controls: a test that makes no store
    of its own writes to the suite's bare store (tests/golden/answers.py `stores`: never a
    whole-program check, which would change `plan` and the pipeline records' answers), never to
    the user's; the converter environments stay the user's, shared. Set before any test runs
    (and inherited by xdist's workers and every process a test starts)."""
    import answers

    os.environ["INVENTORY_CACHE"] = str(answers.stores()[answers.BARE])
    os.environ.pop("INVENTORY_STORE", None)


# ---- the two tiers ----------------------------------------------------------------------------
# A test is `slow` when it needs a converter environment: it asks for one of these fixtures,
# directly or through another fixture, and is marked here, never by file. (A test that needs no
# environment but builds and exports a whole upstream model is marked by hand, saying so.) So
# `-m "not slow"` (scripts/test --fast) needs no environment, and the check at the end of such
# a session makes the marker honest: a fast session that built an environment fails, naming
# what appeared.
ENV_FIXTURES = frozenset({"env", "converter_envs", "newest_env", "pool", "matrix"})


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m deselection reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if ENV_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        item.add_marker(pytest.mark.xdist_group(_group(item, fixtures)))


def _group(item: pytest.Item, fixtures: set[str]) -> str:
    """Under `pytest -n 2 --dist loadgroup` (CI) a group runs in one process: the tests that
    read the answer matrix or the stand-in traces share that process's one computation, and
    the other tests of a file share its module fixtures; groups spread over the processes."""
    for shared in ("matrix", "traced"):
        if shared in fixtures:
            return shared
    return item.nodeid.split("::", 1)[0]


def _fast_session(config: pytest.Config) -> bool:
    return " ".join(str(config.getoption("markexpr", "")).split()) == "not slow"


def _envs_now() -> set[str]:
    root = envs_dir()
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_ENVS_BEFORE] = _envs_now()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _fast_session(session.config):
        return
    before = session.config.stash[_ENVS_BEFORE]
    built = sorted(_envs_now() - before)
    if built:
        session.config.get_terminal_writer().line(
            f"fast tier: a test not marked slow built converter environments ({', '.join(built)}"
            f" in {envs_dir()}): it must ask for the `env` fixture",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_ENVS_BEFORE = pytest.StashKey[set[str]]()


# ---- one converter service per test process ---------------------------------------------------
# Every pool a test's run makes in this process (an in-process `invoke`, the matrix, a test's own
# Pool) hands its live idle workers on to the next pool that needs one of the same kind in the
# same environment, whatever its store (`worker_pool.shared_workers`): a worker is started
# (torch and the converter imported, about 7 CPU-s) once per process, not once per run, and it
# still converts on the real converter; it puts each run's temp files and log in that run's
# store. A test that must see what a run does with workers of its own (the first worker's start,
# a start that fails, its workers gone when its run ends) is marked `own_workers`:
# CONTRIBUTING.md says when. A process a test starts (`spawn`, `start`) has its own workers.
# pytest sets PYTEST_CURRENT_TEST per test: a worker started in one test is the same worker.
_PER_TEST = frozenset({"PYTEST_CURRENT_TEST"})
# Idle workers kept at once, the oldest closed first: each holds torch and the converter (about
# 0.5 GB, docs/measurements.md), and CI runs two test processes on a machine of 24 GB; 12 hold a
# run's probe workers for every release and its runtimes' asset workers.
_KEEP_AT_MOST = 12


# INVENTORY_TEST_OWN_WORKERS=1: every test as if marked `own_workers` (the matrix still shares
# within itself): what the suite cost before, measured on the same machine state.
_ALL_OWN = "INVENTORY_TEST_OWN_WORKERS"


@pytest.fixture(scope="session", autouse=True)
def _shared_workers() -> Iterator[None]:
    if os.environ.get(_ALL_OWN) == "1":
        yield
        return
    with worker_pool.shared_workers(ignoring=_PER_TEST, most=_KEEP_AT_MOST):
        yield


@pytest.fixture(autouse=True)
def _own_workers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `own_workers` runs outside the shared workers: its pools start their own
    and close them with the run, as a process of its own would."""
    if request.node.get_closest_marker("own_workers") is None:
        yield
        return
    with worker_pool.own_workers():
        yield


_STARTS = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)  # before its fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTS] = worker_pool.started()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Each test's worker start-ups in this process, fixtures included, as the junit property
    `worker_starts` (`scripts/test-budget` sums them): where the suite still pays for cold
    workers."""
    if call.when == "teardown" and _STARTS in item.stash:
        item.user_properties.append(("worker_starts", worker_pool.started() - item.stash[_STARTS]))
    return (yield)


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def env(catalog) -> Callable[[str], Env]:
    """env("0.4.1") -> the ready environment for that release. The first request makes every
    release's environment ready, all side by side after the shared torch (a session that needs
    one needs them all soon, and a build mostly waits on downloads and the disk)."""
    versions = sorted(catalog.releases, key=version_key)
    built: dict[str, Env] = {}

    def get(version: str) -> Env:
        if not built:
            built[versions[0]] = need_env(versions[0], catalog)  # installs the shared torch
            with ThreadPoolExecutor(max_workers=max(1, len(versions) - 1)) as pool:
                built.update(
                    zip(
                        versions[1:],
                        pool.map(lambda v: need_env(v, catalog), versions[1:]),
                        strict=True,
                    )
                )
        if version not in built:
            built[version] = need_env(version, catalog)  # not in the catalog: its error
        return built[version]

    return get


@pytest.fixture()
def scratch_cache(tmp_path, monkeypatch, env, catalog):
    """An empty cache that borrows the real shared torch (so no 700 MB install per test)."""
    real_torch = envs_dir() / f"torch-{catalog.torch}"
    env("0.4.2")  # make sure the shared torch exists
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / real_torch.name).symlink_to(real_torch)
    return tmp_path


@pytest.fixture(scope="session")
def converter_envs(env, catalog) -> dict[str, Env]:
    """Every supported release's environment, oldest first."""
    return {v: env(v) for v in sorted(catalog.releases, key=version_key)}


@pytest.fixture(scope="session")
def newest_env(converter_envs) -> Env:
    """The newest release's environment (where coreai-torch's own table and ops come from)."""
    return list(converter_envs.values())[-1]


@pytest.fixture()
def pool(tmp_path) -> Iterator[Pool]:
    """A pool of the test's own: a pool is one run's (`Pool`), and what a run remembers (a
    runtime that aborted on its assets is not asked again, `Pool.failures`) must not reach the
    next test, whose attempts would then depend on the order the tests ran in. Its workers are
    the session's warm ones all the same (`shared_workers`): a test starts none it need not."""
    with Pool(tmp_path / "worker-logs") as p:
        yield p


@pytest.fixture(scope="session")
def json_schema() -> Callable[[dict[str, Any]], None]:
    """check(document): validate a `--json` document against schemas/<command>.schema.json
    (schemas/error.schema.json when it carries an error)."""
    from jsonschema import Draft202012Validator

    # each schema alone: a reader validating one command's output holds that one file
    validators: dict[str, Draft202012Validator] = {}

    def check(document: dict[str, Any]) -> None:
        # the error envelope carries no result; a document with its result and an error (scan:
        # the bundles it could not read) is its command's
        failed = document.get("error") is not None and document.get("result") is None
        name = "error" if failed else document["command"]
        name = name.replace(" ", "-")  # `cache du`: schemas/cache-du.schema.json
        if name not in validators:
            schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
            Draft202012Validator.check_schema(schema)
            validators[name] = Draft202012Validator(schema)
        errors = sorted(validators[name].iter_errors(document), key=lambda e: list(e.path))
        assert not errors, "\n".join(
            f"{name}.schema.json: /{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:10]
        )

    return check


@pytest.fixture(scope="session")
def traced(catalog, converter_envs) -> Callable[..., Any]:
    """traced(bundle, build=None) -> the trace of the bundle's project target (its stand-in),
    made once per session: sam3's full stand-in takes about a minute and is read by both the
    stand-in check and the verify-miniature check."""
    from inventory.trace.service import trace_target

    made: dict[tuple[str, str], Any] = {}

    def get(bundle: Any, build: dict[str, Any] | None = None) -> Any:
        key = (bundle.name, json.dumps(build, sort_keys=True))
        if key not in made:
            made[key] = trace_target(bundle, catalog, build=build)
        return made[key]

    return get


@pytest.fixture(scope="session")
def matrix(converter_envs) -> Any:
    """The headline answers, computed once per session through the real CLI (in this process)
    and the real converters, one run after another, a store's runs sharing their warm workers,
    in an order that repeats no conversion (tests/golden/answers.py `compute`, `lanes`):
    `sweep --registry` per step, every `plan` and consecutive `release-notes`, the library
    sweep of 0.4.1 -> 0.4.2, every `affected`. Tests read them with
    `matrix.run_cli(args)` (the same cached run); the golden test compares them with the
    snapshot. Returns the `answers` module."""
    import answers

    answers.compute()
    return answers
