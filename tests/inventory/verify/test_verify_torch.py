"""The torch a whole program was built on, beside the one the registry says the recipe ran: a
field of the verify document (`torch`), and a `caveat` line in every format when they differ
(the programs compared are then not the ones the recipe exported). From the shipped registry's
bundles and a stored record's `build` as the build worker writes it; nothing is converted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from inventory.policy import load_policy
from inventory.registry import Bundle, load_registry
from inventory.report.html_report import verify_report
from inventory.report.verify_report import bundle_lines, verify_markdown
from inventory.verify import forms
from inventory.verify.built_module import BuiltModule
from inventory.verify.record import bundle_record, verify_record
from inventory.verify.service import BundleVerify, Verify, assembled


@pytest.fixture(scope="module")
def mimi() -> Bundle:
    return next(b for b in load_registry() if b.name == "mimi")


def checked(bundle: Bundle, built: str) -> BundleVerify:
    """The bundle's check as read from a stored record whose build ran on torch `built` (a
    record whose conversion failed: the build, and nothing after it)."""
    record: dict[str, Any] = {
        "error": "coreai-torch 0.4.3 could not convert it",
        "form": forms.compared_form(bundle).to_json(),
        "build": BuiltModule.from_part(
            {
                "params": 10,
                "wall_seconds": 1.0,
                "peak_mb": 1.0,
                "torch": built,
                "files": {"program": "b/program.pt2", "inputs": "b/main.inputs.safetensors"},
            },
            Path("b"),
        ),
    }
    return assembled(bundle, "0.4.1", False, "0.4.3", record, False, [], load_policy(), {}, [])


def formats(b: BundleVerify) -> dict[str, str]:
    check = Verify("0.4.3", (b,))
    page = verify_report(verify_record(check))
    return {
        "table": "\n".join(f"{label} {text}" for label, text in bundle_lines(b)),
        "markdown": verify_markdown(check),
        "html": "\n".join(n for view in page.bundles for n in view.notes),
    }


def test_a_program_built_on_another_torch_than_the_recipes_says_so_in_every_format(mimi):
    assert mimi.exporter.torch == "2.9.0"  # what the registry says the recipe ran
    b = checked(mimi, "2.13.0+cpu")
    torch = bundle_record(b)["torch"]
    assert torch["built"] == "2.13.0+cpu" and torch["recipe"] == "2.9.0"
    assert torch["same"] is False
    assert torch["recipe_source"] == mimi.exporter.torch_source
    # the registry's measured sensitivity ([bundles.mimi.exporter.torch_check]), in one line
    assert torch["sensitivity"].startswith(
        "9 of 9 probes give the same program under coreai-torch 0.4.1 with the recipe's torch "
        "and with 2.13.0 (scripts/torch-sensitivity --torch 2.9.0"
    )
    said = "built and exported on torch 2.13.0+cpu, not on the recipe's torch 2.9.0"
    for fmt, text in formats(b).items():
        assert said in text and torch["sensitivity"] in text, fmt
    assert dict(bundle_lines(b))["caveat"].startswith(said)
    # and it is no longer only a note
    assert not any("torch" in n for n in b.notes if "deviation" not in n)


def test_a_program_built_on_the_recipes_own_torch_says_that_and_no_caveat(mimi):
    b = checked(mimi, "2.9.0+cpu")  # the local label aside, the recipe's release
    assert bundle_record(b)["torch"]["same"] is True
    lines = dict(bundle_lines(b))
    assert "caveat" not in lines
    assert lines["torch"] == "built on torch 2.9.0+cpu, the recipe's (2.9.0)"


def test_a_recipe_whose_torch_is_not_recorded_is_said_so(mimi):
    unknown = replace(mimi, exporter=replace(mimi.exporter, torch="", torch_source=""))
    b = checked(unknown, "2.13.0+cpu")
    torch = bundle_record(b)["torch"]
    assert torch["recipe"] is None and torch["same"] is None
    assert dict(bundle_lines(b))["torch"] == (
        "built on torch 2.13.0+cpu; the registry records no torch for the recipe"
    )


def test_nothing_built_is_no_torch(mimi):
    record = {"error": "could not build", "form": forms.compared_form(mimi).to_json()}
    b = assembled(mimi, "0.4.1", False, "0.4.3", record, False, [], load_policy(), {}, [])
    assert bundle_record(b)["torch"] is None
    assert not {"torch", "caveat"} & set(dict(bundle_lines(b)))
