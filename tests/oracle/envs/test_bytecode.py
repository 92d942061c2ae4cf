"""The warm-ups run in the background: a worker waits for its environment's (one built ahead of
time) but starts beside the held torch's, an environment's waits for the held torch's, and each
is stopped before its folder is removed. The warm-up script is replaced here by a test double
(a script that sleeps, then says a line and exits): the real one needs a converter environment
(`tests/oracle/envs/test_envs.py` checks the bytecode it leaves)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from oracle.envs import bytecode

_DOUBLE = """
import os, sys, time
time.sleep(float(os.environ.get("SLEEP", "1")))
open(os.environ["MARK"], "w").write(os.environ["TMPDIR"])
print("first line")
print("warm-up stopped: the double's last line")
sys.exit(3)
"""


@pytest.fixture
def double(tmp_path, monkeypatch):
    script = tmp_path / "warm_up_double.py"
    script.write_text(_DOUBLE)
    monkeypatch.setattr(bytecode, "_WARM_UP", script)
    monkeypatch.setenv("MARK", str(tmp_path / "mark"))
    return tmp_path


def _python(tmp_path: Path) -> Path:
    # a distinct key per test: the warm-ups are keyed by the environment's python
    link = tmp_path / "bin" / "python"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    return link


def test_a_worker_waits_for_its_environment_s_warm_up_whose_outcome_is_logged(double):
    python, log = _python(double), double / "build.log"
    bytecode.start(python, log)
    bytecode.wait(python)  # returns once the warm-up has finished and its line is written
    assert (double / "mark").exists()
    assert log.read_text() == (
        "# bytecode of a worker's imports written (exit 3) "
        "warm-up stopped: the double's last line\n"
    )
    # its own TMPDIR (the runtime compiles assets there), removed after it
    assert not Path((double / "mark").read_text()).exists()


def test_a_warm_up_is_stopped_before_its_environment_is_removed(double, monkeypatch):
    monkeypatch.setenv("SLEEP", "60")
    python, log = _python(double), double / "build.log"
    bytecode.start(python, log)
    warm = bytecode._running[str(python)]
    assert warm.thread is not None
    deadline = time.monotonic() + 30
    while warm.proc is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc = warm.proc
    assert proc is not None
    started = time.monotonic()
    bytecode.stop(python)
    assert proc.returncode == -9 and time.monotonic() - started < 30
    assert not Path(warm.tmp).exists() and not (double / "mark").exists()
    warm.thread.join(timeout=30)
    bytecode.wait(python)  # nothing to wait for once stopped


def test_an_environment_s_warm_up_starts_once_the_held_torch_s_has_finished(double, monkeypatch):
    # begun beside it, it compiled the same torch files again (each environment built side by
    # side did)
    held = double / "torch-site"
    held.mkdir()
    monkeypatch.setattr(bytecode, "_WARM_UP_TORCH", bytecode._WARM_UP)  # the double, both
    monkeypatch.setenv("SLEEP", "2")
    python, log = _python(double), double / "build.log"
    bytecode.start_held(held, double / "torch.log")
    bytecode.start(python, log, held=held)
    time.sleep(1)
    assert bytecode._running[str(python)].proc is None  # waiting for the held torch's
    bytecode.wait(python)
    torch_done = (double / "torch.log").stat().st_mtime
    assert bytecode._running[str(python)].proc is not None
    # it ran after the held torch's warm-up had written its line, and wrote its own
    assert log.stat().st_mtime - torch_done >= 1.5
    assert log.read_text().startswith("# bytecode of a worker's imports written (exit 3)")


def test_a_warm_up_stopped_while_it_waits_for_the_held_torch_s_never_starts(double, monkeypatch):
    held = double / "torch-site"
    held.mkdir()
    monkeypatch.setattr(bytecode, "_WARM_UP_TORCH", bytecode._WARM_UP)
    monkeypatch.setenv("SLEEP", "2")
    python = _python(double)
    bytecode.start_held(held, double / "torch.log")
    bytecode.start(python, double / "build.log", held=held)
    warm = bytecode._running[str(python)]
    bytecode.stop(python)  # its environment is removed before it could start
    assert warm.thread is not None
    warm.thread.join(timeout=30)
    assert warm.proc is None and not (double / "build.log").exists()
    bytecode.wait(held)


def test_a_worker_starts_beside_the_held_torch_s_warm_up_not_after_it(double, monkeypatch):
    # waiting for it held every worker back 20 s and more after its environment was ready
    # (`scripts/bench --cold`'s timeline); a worker beside it uses what it has written
    held = double / "torch-site"
    held.mkdir()
    monkeypatch.setattr(bytecode, "_WARM_UP_TORCH", bytecode._WARM_UP)
    monkeypatch.setenv("SLEEP", "3")
    bytecode.start_held(held, double / "torch.log")
    started = time.monotonic()
    bytecode.before_worker(_python(double))
    assert time.monotonic() - started < 1.5
    warm = bytecode._running[str(held)].thread
    assert warm is not None and warm.is_alive()  # the warm-up goes on
    bytecode.wait(held)  # a command that builds ahead waits for it before it ends
    assert (
        (double / "torch.log")
        .read_text()
        .startswith("# bytecode of the held torch's imports written (exit 3)")
    )


def test_a_worker_still_waits_for_its_environment_s_own_warm_up(double, monkeypatch):
    monkeypatch.setenv("SLEEP", "2")
    python = _python(double)
    bytecode.start(python, double / "build.log")
    started = time.monotonic()
    bytecode.before_worker(python)
    assert time.monotonic() - started >= 1.5
    assert (double / "build.log").read_text().startswith("# bytecode of a worker's imports")
