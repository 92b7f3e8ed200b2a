"""Every misconfiguration fails at once, before loading anything, with a message that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.graph.models import (
    BackendError,
    MissingAPIKeyError,
    ModelFileNotFoundError,
    UnknownBackendError,
    check_model_spec,
    load_chat_model,
)


@pytest.mark.parametrize(
    ("spec", "var"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic:claude-x", "ANTHROPIC_API_KEY"),
        ("google_genai:gemini-2.5-flash", "GOOGLE_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(spec: str, var: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        load_chat_model(spec)
    assert info.value.env_var == var
    assert var in str(info.value) and ".env" in str(info.value)


def test_blank_key_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "   ")
    with pytest.raises(MissingAPIKeyError):
        check_model_spec("openai:gpt-4o-mini")


def test_openai_with_key_builds_a_chat_model_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_chat_model("openai:gpt-4o-mini", max_tokens=5)
    assert type(model).__name__ == "ChatOpenAI"
    assert model.model_name == "gpt-4o-mini" and model.stream_usage


def test_unknown_backend() -> None:
    with pytest.raises(UnknownBackendError, match="no backend named 'gguf'"):
        load_chat_model("gguf:/x.gguf")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("hf:/nonexistent/model", "config.json missing"),
        ("llamacpp:/nonexistent/m.gguf", "No GGUF file"),
    ],
)
def test_absent_model_file(spec: str, fragment: str) -> None:
    with pytest.raises(ModelFileNotFoundError, match=fragment):
        load_chat_model(spec)


def test_absent_adapter(smollm2_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelFileNotFoundError, match="No LoRA adapter"):
        load_chat_model(f"hf:{smollm2_dir}+{tmp_path / 'missing'}")


def test_missing_optional_package_is_a_backend_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "xllamacpp" else real(n, *a))
    with pytest.raises(BackendError, match="pip install xllamacpp"):
        load_chat_model("llamacpp:smollm2")


def test_unfetched_embedded_model_says_how_to_fetch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MIA_DATA_DIR", str(tmp_path))
    with pytest.raises(ModelFileNotFoundError, match="mia models fetch qwen-coder-1.5b"):
        load_chat_model("llamacpp:qwen-coder-1.5b")
    with pytest.raises(ModelFileNotFoundError, match="mia models fetch qwen-coder-0.5b"):
        load_chat_model("local:qwen-coder-0.5b")


def test_bad_device(monkeypatch: pytest.MonkeyPatch, smollm2_dir: Path) -> None:
    monkeypatch.setenv("MIA_DEVICE", "tpu")
    with pytest.raises(BackendError, match="MIA_DEVICE"):
        load_chat_model(f"hf:{smollm2_dir}")
