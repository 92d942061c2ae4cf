"""Reading a stored result (oracle.store.result_store.read_record) hashes its evidence files only
when they
changed since they were last found intact: a warm answer reads dozens of results, and hashing
every file on every read was most of its time (`affected --fix 40` warm: 0.64 s -> 0.35 s
median here, `scripts/bench`). An edited file is still found damaged."""

from __future__ import annotations

import os

from oracle.store import result_store as store


def stored(tmp_path):
    folder = tmp_path / "result"
    folder.mkdir()
    (folder / "shipped.mlir").write_text("coreai.add\n")
    (folder / "outputs.safetensors").write_bytes(b"\x00\x01")
    store.write_record(folder, {"verdict": "same-program"})
    return folder


def test_a_second_read_of_unchanged_files_hashes_nothing(tmp_path, monkeypatch):
    folder = stored(tmp_path)
    assert (store.read_record(folder) or {}).get("verdict") == "same-program"
    assert (folder / store.VERIFIED).is_file()
    hashed = []

    def manifest(f):
        hashed.append(f)
        return {}

    monkeypatch.setattr(store, "manifest", manifest)
    assert (store.read_record(folder) or {}).get("verdict") == "same-program"
    assert hashed == []
    # the stamp is never evidence: the manifest of the folder is what was stored
    monkeypatch.undo()
    assert store.manifest(folder) == (store.read_record(folder) or {}).get("files_sha256")


def test_an_edited_file_is_hashed_again_and_found_damaged(tmp_path):
    folder = stored(tmp_path)
    assert store.read_record(folder) is not None
    path = folder / "outputs.safetensors"
    path.write_bytes(b"\x00\x02")  # same size: only its time and content changed
    assert store.read_record(folder) is None
    # a file whose time is set back still differs in size from what the stamp holds
    path.write_bytes(b"\x00\x01\x02")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    assert store.read_record(folder) is None
