"""Spec strings: every documented form parses; anything else is a clear UnknownBackendError."""

from __future__ import annotations

import pytest

from mia.graph.models import (
    BackendError,
    MissingAPIKeyError,
    ModelFileNotFoundError,
    ModelSpec,
    UnknownBackendError,
    parse_model_spec,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local:smollm2", ModelSpec("local", "smollm2", raw="local:smollm2")),
        ("hf:/m/base", ModelSpec("hf", "/m/base", raw="hf:/m/base")),
        ("hf:/m/base+/a/lora", ModelSpec("hf", "/m/base", "/a/lora", raw="hf:/m/base+/a/lora")),
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini", raw="openai:gpt-4o-mini")),
        ("anthropic:claude-x", ModelSpec("anthropic", "claude-x", raw="anthropic:claude-x")),
        (
            "google_genai:gemini-2.5-flash",
            ModelSpec("google_genai", "gemini-2.5-flash", raw="google_genai:gemini-2.5-flash"),
        ),
        (
            "openai-compatible:qwen@mini@http://127.0.0.1:8000/v1",
            ModelSpec(
                "openai-compatible",
                "qwen@mini",
                base_url="http://127.0.0.1:8000/v1",
                raw="openai-compatible:qwen@mini@http://127.0.0.1:8000/v1",
            ),
        ),
        ("llamacpp:/x/m.gguf", ModelSpec("llamacpp", "/x/m.gguf", raw="llamacpp:/x/m.gguf")),
        ("llamacpp:smollm2", ModelSpec("llamacpp", "smollm2", raw="llamacpp:smollm2")),
        (
            "llamacpp:qwen-coder-1.5b+/a/lora",
            ModelSpec("llamacpp", "qwen-coder-1.5b", "/a/lora", raw="llamacpp:qwen-coder-1.5b+/a/lora"),
        ),
        ("local:qwen-coder-0.5b", ModelSpec("local", "qwen-coder-0.5b", raw="local:qwen-coder-0.5b")),
    ],
)
def test_documented_forms_parse(text: str, expected: ModelSpec) -> None:
    assert parse_model_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("gpt-4o", "expected '<backend>:<model>'"),
        ("fake:echo", "no backend named 'fake'"),
        ("openai:", "needs a model"),
        ("local:llama70b", "the embedded models are smollm2, qwen-coder-0.5b, qwen-coder-1.5b"),
        ("llamacpp:/m.gguf+", "both parts"),
        ("hf:/m/base+", "both parts"),
        ("openai-compatible:qwen", "openai-compatible:<model>@"),
    ],
)
def test_bad_specs_name_the_valid_forms(text: str, fragment: str) -> None:
    with pytest.raises(UnknownBackendError) as info:
        parse_model_spec(text)
    message = str(info.value)
    assert fragment in message
    assert "local:<embedded>" in message and "openai-compatible:<model>@<base-url>" in message


def test_error_hierarchy() -> None:
    for cls in (UnknownBackendError, MissingAPIKeyError, ModelFileNotFoundError):
        assert issubclass(cls, BackendError)
    assert issubclass(BackendError, ValueError)


def test_extractive_is_a_manager_setting_not_a_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from mia.app.settings import Settings, check_role_models
    from mia.graph.models import EXTRACTIVE, check_role_spec, load_chat_model, spec_status

    spec = parse_model_spec(EXTRACTIVE)
    assert spec.backend == "extractive" and not spec.has_model and not spec.is_local and not spec.trainable
    assert parse_model_spec("llamacpp:qwen-coder-0.5b").has_model
    assert check_role_spec("manager", " extractive ").raw == "extractive"
    assert spec_status(EXTRACTIVE).ok and "no model" in spec_status(EXTRACTIVE).detail
    with pytest.raises(UnknownBackendError, match="the planner needs a chat model"):
        check_role_spec("planner", "extractive")
    with pytest.raises(UnknownBackendError, match="names no chat model"):
        load_chat_model("extractive")
    monkeypatch.setenv("MIA_JUDGE_MODEL", "extractive")
    with pytest.raises(UnknownBackendError, match="MIA_JUDGE_MODEL='extractive'.*memory-manager setting"):
        check_role_models(Settings())
    monkeypatch.setenv("MIA_JUDGE_MODEL", "llamacpp:qwen-coder-1.5b")
    monkeypatch.setenv("MIA_MANAGER_MODEL", "extractive")
    check_role_models(Settings())
