"""Reliability IV, part 5: a trace of a user's builder is bounded and leaves nothing behind.

The builders are foreign code the test writes (`trace --allow-code` of a registry target in a
module of its own): one that never returns, one that forks a child holding the inherited stdout
and stderr and then raises, one that starts a `setsid` grandchild (out of the process group)
and raises, one that takes a 2 MB keyword argument, and one that raises with a 5 MB message.
The supervisor (`inventory.trace.trace_worker`: a child subreaper in its own process group,
options in a file) answers each in one line within its stated limit (a bounded one: the 5 MB
message is cut where every line is formatted), and no process the builder started survives
the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from cli import Ran, one_clean_line, spawn
from registries import evil_registry

BUILDERS = """\
import os, subprocess, sys, time
from types import SimpleNamespace

def _keep(proc):
    with open(os.environ["HOSTILE_PIDS"], "a") as f:
        f.write(f"{proc.pid}\\n")

def hang(**_):
    time.sleep(3600)

def fork_and_raise(**_):
    _keep(subprocess.Popen(["sleep", "1000"]))  # inherits stdout and stderr
    raise ValueError("the builder broke")

def setsid_and_raise(**_):
    _keep(subprocess.Popen(["sleep", "1000"], start_new_session=True))
    raise RuntimeError("after a setsid grandchild")

def huge_message(**_):
    raise ValueError("m" * 5_000_000)

def big(**kwargs):
    import torch
    assert len(kwargs["blob"]) == 2_000_000
    return SimpleNamespace(module=torch.nn.Linear(2, 2), args=(torch.zeros(1, 2),), kwargs={},
                           dtype="float32", notes=[], packages=[])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def builders(env, tmp_path) -> dict[str, str]:
    env("0.4.0")  # the exporter's environment, whose decompositions a trace uses
    (tmp_path / "hostile_builders.py").write_text(BUILDERS)
    return {"PYTHONPATH": str(tmp_path), "HOSTILE_PIDS": str(tmp_path / "pids")}


def _trace(tmp_path: Path, builder: str, extra: dict[str, str]) -> tuple[Ran, list[int]]:
    registry = evil_registry(
        tmp_path, f'[bundles.evil.trace]\ntarget = "hostile_builders:{builder}"'
    )
    ran = spawn("trace", "evil", "--registry", str(registry), "--allow-code", "-q", **extra)
    pids_file = tmp_path / "pids"
    pids = [int(p) for p in pids_file.read_text().split()] if pids_file.exists() else []
    return ran, pids


def test_a_builder_that_never_returns_is_ended_at_the_stated_timeout(builders, tmp_path):
    ran, _ = _trace(tmp_path, "hang", {**builders, "INVENTORY_TRACE_TIMEOUT": "3"})
    assert ran.returncode == 2
    assert one_clean_line(ran) == (
        "error: tracing evil failed: the builder did not answer "
        "within 3 s (INVENTORY_TRACE_TIMEOUT)"
    )


@pytest.mark.parametrize(
    "builder, line",
    [
        ("fork_and_raise", "ValueError: the builder broke"),
        ("setsid_and_raise", "RuntimeError: after a setsid grandchild"),
    ],
)
def test_a_builder_that_raises_answers_at_once_and_leaves_no_process(
    builders, tmp_path, builder, line
):
    """The child it forked holds the worker's stdout and stderr (the run used to wait on it
    forever), or escaped the process group with setsid (it used to outlive the run)."""
    started = time.monotonic()
    ran, pids = _trace(tmp_path, builder, builders)
    took = time.monotonic() - started
    assert ran.returncode == 2
    assert one_clean_line(ran) == f"error: tracing evil failed: {line}"
    assert took < 600  # answered, not waited on (the child sleeps 1000 s); no timing claim
    assert pids and not [p for p in pids if _alive(p)]


def test_a_2_mb_keyword_argument_travels_in_a_file(builders, tmp_path, monkeypatch):
    """Options used to go on the worker's argv: "Argument list too long", exit 4."""
    from inventory.registry import load_registry
    from inventory.trace.service import trace_target
    from oracle.catalog.releases import load_catalog

    for key, value in builders.items():
        monkeypatch.setenv(key, value)
    registry = evil_registry(tmp_path, '[bundles.evil.trace]\ntarget = "hostile_builders:big"')
    [bundle] = load_registry(registry)
    result = trace_target(bundle, load_catalog(), allow_code=True, build={"blob": "x" * 2_000_000})
    assert result.aten_ops and result.dtype == "float32"
    assert os.environ["PYTHONPATH"] == str(tmp_path)


def test_a_builder_raising_a_5_mb_message_is_one_bounded_line(builders, tmp_path):
    """The builder's message was printed whole: one line of 5 MB. It is bounded where every
    line for the user is formatted (`inventory.user_text`), the whole of it kept in a log."""
    ran, _ = _trace(tmp_path, "huge_message", builders)
    assert ran.returncode == 2
    line = one_clean_line(ran)
    assert len(line) < 1000, len(line)
    assert line.startswith("error: tracing evil failed: ValueError: mmm") and line.endswith("mmm")
    log = Path(line.split("; full text in ", 1)[1].split(")", 1)[0])
    assert log.read_text().strip() == "tracing evil failed: ValueError: " + "m" * 5_000_000
