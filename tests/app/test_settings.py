"""Settings: every documented variable is read from the environment and from .env, and
validate_backends fails at once with the variable to set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mia.app.settings import Settings

ENV_KEYS = [
    "MIA_DATA_DIR", "MIA_PLANNER_MODEL", "MIA_EXECUTOR_MODEL", "MIA_MANAGER_MODEL", "MIA_JUDGE_MODEL",
    "MIA_DEVICE", "MIA_EMBEDDING_MODEL", "MIA_CHROMA_MODE", "MIA_CHROMA_HOST", "MIA_CHROMA_PORT",
    "MIA_MEMORY_NAMESPACE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY",
    "TAVILY_API_KEY", "MIA_LLAMACPP_THREADS", "MIA_LLAMACPP_VERBOSE",
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    saved = dict(os.environ)  # apply_to_environ writes os.environ directly: restore it all afterwards
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    yield monkeypatch
    monkeypatch.undo()  # first: its undo would otherwise re-set values that apply_to_environ wrote
    os.environ.clear()
    os.environ.update(saved)


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert s.data_dir == Path("~/.local/share/mia").expanduser()
    assert s.role_models() == {"planner": "llamacpp:qwen-coder-1.5b", "executor": "llamacpp:qwen-coder-1.5b",
                               "manager": "llamacpp:qwen-coder-0.5b", "judge": "llamacpp:qwen-coder-1.5b"}
    assert (s.device, s.embedding_model, s.chroma_mode, s.memory_namespace) == ("auto", "minilm", "persistent", "default")
    assert s.openai_api_key is None and s.openai_base_url is None
    s.validate_backends()  # the offline default is usable


def test_environment_overrides(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("MIA_DATA_DIR", str(tmp_path / "d"))
    clean_env.setenv("MIA_JUDGE_MODEL", "openai:gpt-4o-mini")
    clean_env.setenv("MIA_CHROMA_MODE", "http")
    clean_env.setenv("MIA_CHROMA_PORT", "9001")
    clean_env.setenv("OPENAI_API_KEY", "sk-x")
    s = Settings()
    assert s.data_dir == tmp_path / "d" and s.judge_model == "openai:gpt-4o-mini"
    assert (s.chroma_mode, s.chroma_port) == ("http", 9001)
    assert s.openai_api_key.get_secret_value() == "sk-x" and "sk-x" not in repr(s)
    s.validate_backends(roles=("judge",))
    with pytest.raises(ValueError, match="mia models fetch qwen-coder-1.5b"):  # nothing fetched in that data dir
        s.validate_backends(roles=("planner",))


def test_dotenv_file_and_example_cover_every_key(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    example = (ROOT / ".env.example").read_text()
    for key in ENV_KEYS:
        assert f"\n{key}=" in example, f"{key} missing from .env.example"
    (tmp_path / ".env").write_text("MIA_PLANNER_MODEL=hf:/models/x\nTAVILY_API_KEY=tv-1\nOPENAI_API_KEY=\n")
    s = Settings()
    assert s.planner_model == "hf:/models/x" and s.tavily_api_key.get_secret_value() == "tv-1"
    assert s.openai_api_key is None  # blank means unset
    parsed = Settings(_env_file=ROOT / ".env.example")
    assert parsed.role_models()["planner"] == "llamacpp:qwen-coder-1.5b"


def test_validate_names_the_missing_variable(clean_env: pytest.MonkeyPatch) -> None:
    from mia.graph.models import MissingAPIKeyError

    clean_env.setenv("MIA_EXECUTOR_MODEL", "anthropic:claude-x")
    with pytest.raises(MissingAPIKeyError) as info:
        Settings().validate_backends()
    assert info.value.env_var == "ANTHROPIC_API_KEY"
    assert "MIA_EXECUTOR_MODEL" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    Settings().validate_backends(roles=("planner",))  # other roles are fine


def test_validate_rejects_bad_specs_and_files(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mia.graph.models import ModelFileNotFoundError, UnknownBackendError

    with pytest.raises(UnknownBackendError, match="MIA_PLANNER_MODEL"):
        Settings(planner_model="gpt4").validate_backends()
    with pytest.raises(ModelFileNotFoundError, match="MIA_MANAGER_MODEL"):
        Settings(manager_model=f"hf:{tmp_path / 'nope'}").validate_backends()


def test_key_from_dotenv_reaches_the_lower_layers(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\nMIA_PLANNER_MODEL=openai:gpt-4o-mini\n")
    s = Settings()
    s.validate_backends()  # the key in .env counts
    assert "OPENAI_API_KEY" not in os.environ
    s.apply_to_environ()
    assert os.environ["OPENAI_API_KEY"] == "sk-from-dotenv"
    clean_env.setenv("OPENAI_API_KEY", "sk-real-env")
    s.apply_to_environ()  # never overrides the real environment
    assert os.environ["OPENAI_API_KEY"] == "sk-real-env"


def test_bad_values_are_rejected(clean_env: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    clean_env.setenv("MIA_DEVICE", "tpu")
    with pytest.raises(ValidationError, match="MIA_DEVICE"):
        Settings()
