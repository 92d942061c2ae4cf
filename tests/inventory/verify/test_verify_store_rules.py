"""What a whole-program check stores and what it measures again: a deterministic outcome is a
result; a worker's death, a timeout or a fault of the machine (a full disk, memory) is not."""

from __future__ import annotations

from inventory.verify import parts


def test_a_converter_refusal_is_stored_but_a_full_disk_is_not():
    refused = {"ok": False, "stage": "convert", "error": "RuntimeError: unsupported op"}
    full_disk = {
        "ok": False,
        "stage": "save",
        "error": "OSError: [Errno 28] No space left on device",
    }
    died = {"ok": False, "stage": "worker", "error": "the worker died"}
    assert parts.repeatable(refused)
    assert not parts.repeatable(full_disk)
    assert not parts.repeatable(died)
    assert parts.repeatable({"ok": True})


def test_a_runtime_abort_is_stored_a_timeout_or_the_machine_is_not():
    abort = {"ok": False, "stage": "worker", "error": "worker died: SIGABRT"}
    timeout = {"ok": False, "stage": "worker", "error": "did not answer within 0.5 s"}
    oom = {"ok": False, "stage": "run", "error": "MemoryError: "}
    assert parts.run_repeats(abort)
    assert not parts.run_repeats(timeout)
    assert not parts.run_repeats(oom)
    assert parts.run_repeats({"ok": False, "stage": "run", "error": "ValueError: bad input"})
