"""Release discovery (`inventory envs discover`), a user's catalog (`--catalog`,
`INVENTORY_CATALOG`) and a discovered release accepted by the commands that name one.

The fast tests read package sources the test writes itself: a find-links folder and a simple-API
index folder holding wheel archives with only a METADATA file (enough for discovery, which reads
nothing else). The slow test downloads the real coreai-torch wheels into a find-links folder once
(`pip download`, as the environments' set-up reaches the registry), discovers 0.4.3 from it with
0.4.3 removed from a copy of the catalog, and answers a plan with that copy as with the packaged
catalog.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from cli import invoke

from oracle.catalog.releases import CATALOG_FILE, DISCOVERED, USER, EnvError, load_catalog, recorded
from oracle.catalog.wheel_metadata import derive
from oracle.envs import package_index, pip_config
from oracle.envs.discovery import discover
from oracle.envs.installer import python_with_pip
from oracle.envs.pip_config import Sources
from oracle.infra.paths import cache_root, envs_dir, store_root

ROOT = Path(__file__).resolve().parents[3]

# Requires-Dist lines as the published 0.4.3 wheel's METADATA has them (abridged: a few of its
# extras); the facts discovery reads.
METADATA_043 = """Metadata-Version: 2.4
Name: coreai-torch
Version: 0.4.3
Requires-Python: >=3.11
Requires-Dist: coreai-core==1.0.0b3
Requires-Dist: ml-dtypes
Requires-Dist: numpy<2.5
Requires-Dist: torch>=2.8.0
Requires-Dist: rich<16.0,>=13.0
Requires-Dist: coremltools; extra == "test"
Requires-Dist: mlx; sys_platform == "darwin" and extra == "test"
Requires-Dist: torch==2.13.0; extra == "test"
"""


def metadata(version: str, core: str = "coreai-core==1.0.0b3", name: str = "coreai-torch") -> str:
    return (
        METADATA_043.replace("0.4.3", version)
        .replace("coreai-core==1.0.0b3", core)
        .replace("Name: coreai-torch", f"Name: {name}")
    )


def wheel(folder: Path, version: str, text: str | None = None) -> Path:
    """A wheel archive holding only its dist-info METADATA."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"coreai_torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"coreai_torch-{version}.dist-info/METADATA",
            text if text is not None else metadata(version),
        )
    return path


def catalog_without(tmp_path: Path, version: str) -> Path:
    """A copy of the packaged catalog with one release's table removed."""
    text = CATALOG_FILE.read_text()
    start = text.index(f'[converters."{version}"]')
    end = text.find("[converters.", start + 1)
    copy = tmp_path / "converters.toml"
    copy.write_text(text[:start] + (text[end:] if end != -1 else ""))
    return copy


# ---- the metadata ---------------------------------------------------------------------------


def test_the_core_pin_and_requirements_are_read_from_the_metadata():
    d = derive(METADATA_043)
    assert (d.version, d.core, d.torch, d.problem) == ("0.4.3", "1.0.0b3", "torch>=2.8.0", "")
    # an extra's requirement (a marker naming `extra`) is never part of an environment
    assert "coremltools" not in " ".join(d.requires) and "torch==2.13.0" not in d.requires
    assert d.others == ("numpy<2.5", "rich<16.0,>=13.0")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (metadata("0.4.9", "coreai-core>=1.0.0b3"), "not one coreai-core release"),
        (metadata("0.4.9", "numpy"), "declares no coreai-core requirement"),
        (metadata("0.5.0rc1"), "not a release the catalog can name"),
        (metadata("0.4.9", name="other-package"), "not coreai-torch"),
    ],
)
def test_a_runtime_that_cannot_be_derived_is_said_never_guessed(text, problem):
    d = derive(text)
    assert d.core is None and problem in d.problem


# ---- the package sources --------------------------------------------------------------------


def test_releases_are_listed_from_find_links_and_a_simple_index(tmp_path):
    links = tmp_path / "links"
    wheel(links, "0.4.2")
    wheel(links, "0.4.3")
    (links / "coreai_torch-0.4.3.tar.gz").write_bytes(b"")  # an sdist is not read
    index = tmp_path / "simple" / "coreai-torch"
    made = wheel(tmp_path / "files", "0.4.4")
    sha = hashlib.sha256(made.read_bytes()).hexdigest()
    yanked = wheel(tmp_path / "files", "0.4.5")
    index.mkdir(parents=True)
    (index / "index.html").write_text(
        f'<html><body><a href="{made.as_uri()}#sha256={sha}">{made.name}</a>'
        f'<a href="{yanked.as_uri()}" data-yanked="">{yanked.name}</a></body></html>'
    )
    sources = Sources(((tmp_path / "simple").as_uri(),), (str(links),))
    found, problems = package_index.listed(sources)
    assert problems == []
    assert sorted(found) == ["0.4.2", "0.4.3", "0.4.4"]  # 0.4.5 is yanked
    assert found["0.4.4"][0].sha256 == sha
    text, digest = package_index.metadata(found["0.4.4"][0], sources)
    assert derive(text).version == "0.4.4" and digest == sha


def test_a_wheel_whose_hash_is_not_the_listed_one_is_refused(tmp_path):
    made = wheel(tmp_path / "files", "0.4.4")
    listed = package_index.WheelFile("0.4.4", made.name, made.as_uri(), "0" * 64, "an index")
    with pytest.raises(package_index.SourceError, match="is not the"):
        package_index.metadata(listed, Sources((), ()))


def test_an_unreachable_source_is_a_problem_and_none_readable_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    sources = Sources(("http://127.0.0.1:9/simple",), (), timeout=5)
    found, problems = package_index.listed(sources)
    assert found == {} and len(problems) == 1 and "127.0.0.1:9" in problems[0]
    monkeypatch.setattr("oracle.envs.discovery.package_sources", lambda: sources)
    with pytest.raises(EnvError, match="no package source could be read"):
        discover(load_catalog())


# ---- discovered releases in the catalog ---------------------------------------------------


def test_a_discovered_release_is_recorded_and_joins_the_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    links = tmp_path / "links"
    wheel(links, "0.4.2")
    wheel(links, "0.4.9")
    wheel(links, "0.5.0", metadata("0.5.0", "coreai-core>=1"))
    monkeypatch.setattr("oracle.envs.discovery.package_sources", lambda: Sources((), (str(links),)))
    result = discover(load_catalog(discovered=False))
    by = {f.derived.version: f for f in result.found}
    assert sorted(by) == ["0.4.9", "0.5.0"] and "0.4.2" in result.known
    assert by["0.4.9"].record and not by["0.5.0"].record  # no entry: nothing recorded
    release = load_catalog().release("0.4.9")
    assert (release.core, release.extra, release.source) == ("1.0.0b3", (), DISCOVERED)
    assert "0.5.0" not in load_catalog().releases
    # an entry that no longer follows from the METADATA beside it is refused, in one line
    entry = Path(by["0.4.9"].record) / "entry.toml"
    entry.write_text(entry.read_text().replace("1.0.0b3", "1.0.0b1"))
    with pytest.raises(EnvError, match="does not follow from the METADATA beside it"):
        recorded()


def test_a_user_catalog_extends_overrides_or_replaces_the_packaged_one(tmp_path, monkeypatch):
    extra = tmp_path / "extra.toml"
    extra.write_text(
        '[converters."0.4.9"]\ncore = "1.0.0b3"\n\n'
        '[converters."0.4.2"]\ncore = "1.0.0b3"\nextra = ["numpy<2"]\n'
    )
    monkeypatch.setenv("INVENTORY_CATALOG", str(extra))
    catalog = load_catalog()
    assert catalog.release("0.4.9").source == USER and catalog.release("0.4.0").core == "1.0.0b1"
    assert (catalog.release("0.4.2").core, catalog.release("0.4.2").extra) == (
        "1.0.0b3",
        ("numpy<2",),
    )
    monkeypatch.setenv("INVENTORY_CATALOG", str(catalog_without(tmp_path, "0.4.3")))
    assert "0.4.3" not in load_catalog(discovered=False).releases


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[converters."0.4.9"]\ncores = "1.0.0b3"\n', "unknown key 'cores'"),
        ('[converters."v0.4.9"]\ncore = "1.0.0b3"\n', "a release is digits and dots"),
        ('[converters."0.4.9"]\ncore = 3\n', "core must be a non-empty string"),
        ('[torch]\nversion = "2.13.0"\n', "lacks 'converters'"),
    ],
)
def test_a_bad_user_catalog_is_one_line_and_exit_2(tmp_path, text, said):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    ran = invoke("plan", "--to", "0.4.2", "--catalog", str(bad), "-q")
    assert ran.returncode == 2 and said in ran.stderr and str(bad) in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    missing = invoke("plan", "--to", "0.4.2", "-q", INVENTORY_CATALOG=str(tmp_path / "none"))
    assert missing.returncode == 2 and "INVENTORY_CATALOG" in missing.stderr


def test_a_release_in_no_catalog_names_envs_discover():
    ran = invoke("plan", "--to", "0.4.9", "-q")
    assert ran.returncode == 2 and "inventory envs discover" in ran.stderr


# ---- end to end on the real wheels ----------------------------------------------------------


@pytest.fixture(scope="session")
def published_wheels(catalog) -> Path:
    """A find-links folder of every catalog release's published wheel, downloaded once into the
    cache (the registry is reached as the environments' set-up reaches it)."""
    folder = cache_root() / "test-wheels"
    for version in sorted(catalog.releases):
        if any(folder.glob(f"coreai_torch-{version}-*.whl")):
            continue
        # an environment built by uv has no pip: the interpreter it was made from has
        proc = subprocess.run(
            [
                python_with_pip(),
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-q",
                "-d",
                str(folder),
                f"coreai-torch=={version}",
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(f"CI: coreai-torch {version}'s wheel cannot be downloaded: {why}")
            pytest.skip(f"coreai-torch {version}'s wheel cannot be downloaded here: {why}")
    return folder


# A result folder's key (`results/<stem>-<key>`): a digest of the pins of both environments, so
# a release under other pins answers from results of its own.
RESULT_KEY = re.compile(r"(results/[\w.+-]+?)-[0-9a-f]{20}\b")


def _answers(value: object) -> object:
    """An answer without where its results are stored: every result folder named without its
    key, and whether it was read from the store left out."""
    if isinstance(value, dict):
        return {k: _answers(v) for k, v in value.items() if k != "cached"}
    if isinstance(value, list):
        return [_answers(v) for v in value]
    if isinstance(value, str):
        return RESULT_KEY.sub(r"\1-KEY", value)
    return value


def _evidence(value: object) -> set[str]:
    """Every result folder an answer names."""
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k == "evidence" and isinstance(v, str)}
        lists = [v for k, v in value.items() if k == "evidence" and isinstance(v, list)]
        found |= {e for v in lists for e in v}
        return found.union(*(_evidence(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_evidence(v) for v in value))
    return set()


def test_a_release_removed_from_the_catalog_is_discovered_and_plans_the_same(
    env, published_wheels, tmp_path, json_schema
):
    env("0.4.3")  # every release's environment (a plan converts in them)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    copy = catalog_without(tmp_path, "0.4.3")
    stores = {"INVENTORY_CACHE": str(cache), "INVENTORY_STORE": str(store_root())}
    # the find-links folder alone: no index is read
    sources = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(published_wheels), **stores}
    pip_config.read.cache_clear()
    try:
        found = invoke("envs", "discover", "--catalog", str(copy), "--json", "-q", **sources)
    finally:
        pip_config.read.cache_clear()
    assert found.returncode == 0, found.stderr
    envelope = json.loads(found.stdout)
    json_schema(envelope)
    doc = envelope["result"]
    assert [f["release"] for f in doc["found"]] == ["0.4.3"]
    [f] = doc["found"]
    assert (f["core"], f["torch"]) == ("1.0.0b3", "torch>=2.8.0") and "numpy<2.5" in f["bounded"]
    assert doc["in_catalog"] == ["0.4.0", "0.4.1", "0.4.2"]
    listed = invoke("envs", "list", "--catalog", str(copy), **stores)
    line = next(ln for ln in listed.stdout.splitlines() if ln.startswith("coreai-torch-0.4.3:"))
    assert "discovered" in line
    plans = [
        invoke(
            "plan",
            "--to",
            "0.4.3",
            "--bundle",
            "mimi",
            "--bundle",
            "sam3",
            "--json",
            "-q",
            *extra,
            **stores,
        )
        for extra in ((), ("--catalog", str(copy)))
    ]
    assert [p.returncode for p in plans] == [1, 1], [p.stderr for p in plans]
    packaged, discovered = (json.loads(p.stdout)["result"]["bundles"] for p in plans)
    assert _answers(packaged) == _answers(discovered)
    # the discovered entry pins no extra (the packaged one pins numpy<2.5): its environment is
    # its own, built from the machine's package sources as every environment is, and the results
    # of 0.4.3 are keyed by its pins, so they are its own too (those of 0.4.0-0.4.2 are shared)
    own, shared = (
        [
            {e for e in _evidence(answer) if ("0.4.3" in Path(e).name) is mine}
            for answer in (packaged, discovered)
        ]
        for mine in (True, False)
    )
    assert own[0] and own[1] and not own[0] & own[1]
    assert shared[0] == shared[1]
    assert list(envs_dir().glob("coreai-torch-0.4.3-pins-*/inventory-env.json"))
