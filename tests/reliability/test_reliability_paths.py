"""Reliability III, part 2: no registry or fixes field reaches a path outside the store.

A bundle named `../../../../outside/evil` made `verify` write its result outside
`$INVENTORY_CACHE`, and an instance `dtype = "../../../../outside/dt"` made `plan` store a load
check outside it. Every string field of a registry bundle and of a fix record is tried here with
`../` and an absolute path: the loader refuses it (exit 2), or every store path the loaded data
can reach (probe results, load checks, the asset probe, the whole-bundle record, environments)
lies inside the store. And the store itself refuses to build anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from cli import invoke

from inventory.errors import USER_ERRORS, ExitCode
from inventory.instances import instance_spec
from inventory.kind_answers import asset_spec
from inventory.registry import load_registry
from inventory.verify import forms, parts
from oracle.catalog.fixes import load_fixes
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env, env_path
from oracle.infra.paths import StorePathError, in_store, safe_name
from oracle.load_check import check_dir
from oracle.store import result_store as store

BUNDLE: dict[str, Any] = {
    "files": ["x.aimodel"],
    "dtype": "float16",
    "note": "n",
    "exporter": {
        "converter": "0.4.1",
        "core": "1.0.0b2",
        "source": "s",
        "torch": "2.9.0",
        "torch_source": "t",
    },
    "pipeline": {"decompositions": "coreai", "shapes": "static", "export": "e"},
    "recipe": {
        "repository": "r",
        "path": "conversion/x.py",
        "builder": {
            "path": "conversion/x.py",
            "call": "Model",
            "adapter": "inventory.trace.recipes.mimi:build",
        },
    },
    "trace": {"decompositions": "d", "notes": "n", "origin": "recipe"},
    "standin": {"target": "inventory.trace.targets.mimi:build", "notes": "n"},
    "verify": {"form": "full", "why": "w"},
    "fingerprints": ["f"],
    "instances": [
        {
            "kind": "pad",
            "dtype": "float16",
            "source": "s",
            "modules": ["m"],
            "producers": [""],
            "params": {"mode": "constant", "pad": [1, 1], "input_shape": [1, 2, 3]},
        }
    ],
}
FIX: dict[str, Any] = {
    "id": "77",
    "title": "t",
    "ships_in": "0.4.2",
    "kind": "lowering",
    "upstream": "u",
    "checked": "c",
    "constructs": ["pad"],
    "aliases": ["78"],
}


def hostile(tmp_path: Path) -> list[str]:
    return ["../../../../outside/evil", str(tmp_path / "outside" / "evil"), "..", "/"]


def string_fields(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The key path of every string leaf (list items included)."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_fields(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_fields(item, (*path, i))


def replaced(document: Any, path: tuple[Any, ...], new: str) -> Any:
    if not path:
        return new
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[path[0]] = replaced(document[path[0]], path[1:], new)
    return copy


def env(version: str, core: str = "1.0.0b2") -> Env:
    return Env(
        version,
        core,
        env_path(version),
        env_path(version) / "bin" / "python",
        {"coreai-torch": version, "coreai-core": core},
        (),
    )


def assert_inside(path: Path, store_root: Path) -> None:
    assert path.resolve().is_relative_to(store_root), path
    assert ".." not in path.relative_to(store_root).parts, path


def store_paths_of_registry(path: Path) -> list[Path]:
    """Every store folder the registry's data can name."""
    out: list[Path] = []
    old, new = env("0.4.1"), env("0.4.2")
    for bundle in load_registry(path):
        specs = [instance_spec(bundle, i) for i in bundle.instances] + [asset_spec(bundle)]
        for spec in specs:
            out += [store.result_dir(spec, old, new), check_dir(spec, old, {})]
        try:
            form = forms.compared_form(bundle)
            forms.run_form(bundle)
        except USER_ERRORS:
            continue  # a verify form the data cannot make is refused before any path
        build = parts.build_folder(bundle, form, None, True)
        sides = (parts.side_folder(bundle, build, old), parts.side_folder(bundle, build, new))
        out += [
            build,
            *sides,
            parts.pair_folder(bundle, *sides, old.converter, new.converter),
            parts.run_folder(bundle, "0" * 20, build.name, new),
            parts.cut_folder(bundle, build, new, f"{old.converter}->{new.converter}", [], 0),
            parts.cut_side_folder(bundle, "0" * 20, new),
        ]
    return out


def test_every_registry_string_field_with_dotdot_or_an_absolute_path_stays_in_the_store(
    tmp_path, monkeypatch
):
    store_root = (tmp_path / "store").resolve()
    monkeypatch.setenv("INVENTORY_CACHE", str(store_root))
    fields = [("name",)] + [("field", *p) for p in string_fields(BUNDLE)]
    assert len(fields) > 30  # every leaf, not a sample
    accepted = refused = 0
    for field in fields:
        for value in hostile(tmp_path):
            if field == ("name",):
                document = {"bundles": {value: BUNDLE}}
            else:
                document = {"bundles": {"x": replaced(BUNDLE, field[1:], value)}}
            registry = tmp_path / "recipes.toml"
            registry.write_text(tomli_w.dumps(document))
            try:
                paths = store_paths_of_registry(registry)
            except USER_ERRORS as exc:
                assert "\n" not in str(exc)
                refused += 1
                continue
            accepted += 1
            for path in paths:
                assert_inside(path, store_root)
    assert accepted and refused  # both branches ran: the test can fail either way
    assert not (tmp_path / "outside").exists()


def test_every_fix_string_field_with_dotdot_or_an_absolute_path_stays_in_the_store(
    tmp_path, monkeypatch
):
    store_root = (tmp_path / "store").resolve()
    monkeypatch.setenv("INVENTORY_CACHE", str(store_root))
    accepted = refused = 0
    for field in string_fields(FIX):
        for value in hostile(tmp_path):
            fixes = tmp_path / "fixes.toml"
            fixes.write_text(tomli_w.dumps({"fix": [replaced(FIX, field, value)]}))
            try:
                (fix,) = load_fixes(fixes)
            except USER_ERRORS as exc:
                assert "\n" not in str(exc)
                refused += 1
                continue
            accepted += 1
            # what of a record reaches a path: its constructs (probe results) and its release
            # (an environment)
            assert_inside(env_path(fix.ships_in), store_root)
            for construct in fix.constructs:
                spec = ProbeSpec(construct, {})
                assert_inside(store.result_dir(spec, env("0.4.1"), env(fix.ships_in)), store_root)
    assert accepted and refused
    # ships_in and constructs, the fields that reach a path, never take such a value
    for field in (("ships_in",), ("constructs", 0)):
        for value in hostile(tmp_path):
            fixes.write_text(tomli_w.dumps({"fix": [replaced(FIX, field, value)]}))
            with pytest.raises(USER_ERRORS):
                load_fixes(fixes)


def test_the_issues_two_hostile_registries_are_refused_or_kept_in_the_store(tmp_path, monkeypatch):
    """The two cases of the issue, through the CLI where no converter is needed."""
    store_root = (tmp_path / "store").resolve()
    document = {
        "bundles": {"x": replaced(BUNDLE, ("instances", 0, "dtype"), "../../../../outside/dt")}
    }
    registry = tmp_path / "recipes.toml"
    registry.write_text(tomli_w.dumps(document))
    proc = invoke(
        "plan", "--to", "0.4.2", "--registry", str(registry), "-q", INVENTORY_CACHE=str(store_root)
    )
    assert proc.returncode == ExitCode.USAGE and "instance 1 dtype must be a probe dtype" in (
        proc.stderr
    )
    # a bundle name is free text (printed literally), so it is sanitised into the path
    monkeypatch.setenv("INVENTORY_CACHE", str(store_root))
    registry.write_text(tomli_w.dumps({"bundles": {"../../../../outside/evil": BUNDLE}}))
    paths = [p for p in store_paths_of_registry(registry) if p.name.startswith("verify-")]
    assert len(paths) == 7 and {p.parent for p in paths} == {store_root / "results"}
    assert {p.name.rsplit("-", 1)[0] for p in paths} == {
        "verify-build-_outside_evil",
        "verify-side-_outside_evil-0.4.1",
        "verify-side-_outside_evil-0.4.2",
        "verify-pair-_outside_evil-0.4.1-0.4.2",
        "verify-run-_outside_evil-1.0.0b2",
        "verify-cut-_outside_evil-0.4.1-0.4.2",
        "verify-cutside-_outside_evil-0.4.2",
    }


def test_a_name_from_data_becomes_one_harmless_path_component():
    assert safe_name("../../../../outside/evil") == "_outside_evil"
    assert safe_name("/etc/passwd") == "_etc_passwd"
    assert safe_name("..") == "_" and safe_name("") == "_" and safe_name(".hidden") == "hidden"
    assert safe_name("0.4.2") == "0.4.2" and safe_name("batch_norm") == "batch_norm"
    assert len(safe_name("a" * 500)) == 80


def test_the_store_refuses_to_build_outside_itself(tmp_path, monkeypatch):
    store_root = tmp_path / "store"
    monkeypatch.setenv("INVENTORY_CACHE", str(store_root))
    outside = tmp_path / "outside"
    for final in (outside / "r", store_root / "results" / ".." / ".." / "outside" / "r"):
        with pytest.raises(StorePathError, match="outside the store"), store.building(final):
            pass
    # a folder of the store that is a symlink out of it is outside too
    outside.mkdir()
    (store_root).mkdir()
    (store_root / "results").symlink_to(outside)
    with pytest.raises(StorePathError), store.building(store_root / "results" / "r"):
        pass
    assert list(outside.iterdir()) == []
    assert in_store(store_root / "envs" / "x") == store_root / "envs" / "x"
