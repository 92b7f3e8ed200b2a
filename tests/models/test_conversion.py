"""The one-time GGUF conversion is safe when several processes (here: threads) race for it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mia.graph.models import convert
from mia.graph.models.embedded import embedded
from mia.graph.models.paths import is_converted


def smollm2_dir(base: Path) -> Path:
    return embedded("smollm2").converted_dir(base)


@pytest.fixture(autouse=True)
def _gguf(tmp_path: Path, data_dir: Path) -> None:
    """A data dir whose models/ holds the SmolLM2 GGUF (a link), as `mia models fetch` leaves it."""
    model = embedded("smollm2")
    (tmp_path / "models").mkdir()
    model.path(tmp_path).symlink_to(model.path(data_dir).resolve())


def _fake_convert(calls: list[int]):
    def run(gguf: Path, out: Path) -> None:
        calls.append(1)
        out.mkdir(parents=True)
        time.sleep(0.2)  # long enough for the others to pile up on the lock
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(b"x")

    return run


def test_concurrent_conversion_runs_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(convert, "convert_gguf", _fake_convert(calls))
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(convert.ensure_converted("smollm2", tmp_path))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]
    assert results == [smollm2_dir(tmp_path)] * 4 and is_converted(results[0])
    leftovers = [p.name for p in (tmp_path / "models").iterdir() if ".tmp-" in p.name]
    assert leftovers == []


def test_failed_conversion_leaves_nothing_half_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(gguf: Path, out: Path) -> None:
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        raise RuntimeError("disk full")

    monkeypatch.setattr(convert, "convert_gguf", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        convert.ensure_converted("smollm2", tmp_path)
    assert not smollm2_dir(tmp_path).exists()
    assert [p for p in (tmp_path / "models").iterdir() if ".tmp-" in p.name] == []
    # a later run succeeds
    calls: list[int] = []
    monkeypatch.setattr(convert, "convert_gguf", _fake_convert(calls))
    assert is_converted(convert.ensure_converted("smollm2", tmp_path)) and calls == [1]


def test_missing_gguf_is_a_clear_error(tmp_path: Path) -> None:
    from mia.graph.models import ModelFileNotFoundError

    embedded("smollm2").path(tmp_path).unlink()
    with pytest.raises(ModelFileNotFoundError, match="mia models fetch smollm2"):
        convert.ensure_converted("smollm2", tmp_path)
