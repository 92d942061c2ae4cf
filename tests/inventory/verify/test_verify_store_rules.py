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


def _archive(path, model: bytes, serialization_id: bytes) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("program/models/model.json", model)
        z.writestr("program/.data/serialization_id", serialization_id)


def test_a_cut_saved_again_by_another_process_keys_its_conversions_alike(tmp_path):
    """torch.export's archive of one program differs each time it is saved (a random
    serialization id, the provenance's graph ids: object addresses); the digest that keys a
    cut's conversions leaves those out, and nothing else."""
    from inventory.verify.whole import file_digest, program_digest

    model = '{"from_node": "[{\\"graph_id\\": %d, \\"name\\": \\"bn\\"}]", "graph_id": %d}'
    a, b, c = tmp_path / "a.pt2", tmp_path / "b.pt2", tmp_path / "c.pt2"
    _archive(a, (model % (139768720761296, 1)).encode(), b"1257750808027923320815591667698456")
    _archive(b, (model % (139932686067856, 2)).encode(), b"1257750808027923320818321826603554")
    _archive(c, (model % (139768720761296, 1)).encode().replace(b"bn", b"ln"), b"12577")
    assert file_digest(a) != file_digest(b)
    assert program_digest(a) == program_digest(b)
    assert program_digest(a) != program_digest(c)  # another node's name is another program
