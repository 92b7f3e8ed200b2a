"""Settings: every documented variable is read from the environment and from .env (one class, in
the lowest layers), values are passed down without touching os.environ, and check_role_models
fails at once with the variable to set."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mia.app.settings import Settings, check_role_models

ENV_KEYS = [
    "MIA_DATA_DIR",
    "MIA_PLANNER_MODEL",
    "MIA_EXECUTOR_MODEL",
    "MIA_MANAGER_MODEL",
    "MIA_JUDGE_MODEL",
    "MIA_DEVICE",
    "MIA_EMBEDDING_MODEL",
    "MIA_CHROMA_MODE",
    "MIA_CHROMA_HOST",
    "MIA_CHROMA_PORT",
    "MIA_MEMORY_NAMESPACE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "TAVILY_API_KEY",
    "MIA_LLAMACPP_THREADS",
    "MIA_LLAMACPP_VERBOSE",
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    yield monkeypatch


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert s.data_dir == Path("~/.local/share/mia").expanduser()
    assert s.role_models() == {
        "planner": "llamacpp:qwen-coder-1.5b",
        "executor": "llamacpp:qwen-coder-1.5b",
        "manager": "extractive",
        "judge": "llamacpp:qwen-coder-1.5b",
    }
    assert (s.device, s.embedding_model, s.chroma_mode, s.memory_namespace) == (
        "auto",
        "minilm",
        "persistent",
        "default",
    )
    assert s.openai_api_key is None and s.openai_base_url is None
    check_role_models(s)  # the offline default is usable


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
    check_role_models(s, roles=("judge",))
    with pytest.raises(ValueError, match="mia models fetch qwen-coder-1.5b"):  # nothing fetched in that data dir
        check_role_models(s, roles=("planner",))


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
        check_role_models(Settings())
    assert info.value.env_var == "ANTHROPIC_API_KEY"
    assert "MIA_EXECUTOR_MODEL" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    check_role_models(Settings(), roles=("planner",))  # other roles are fine


def test_validate_rejects_bad_specs_and_files(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mia.graph.models import ModelFileNotFoundError, UnknownBackendError

    with pytest.raises(UnknownBackendError, match="MIA_PLANNER_MODEL"):
        check_role_models(Settings(planner_model="gpt4"))
    with pytest.raises(ModelFileNotFoundError, match="MIA_MANAGER_MODEL"):
        check_role_models(Settings(manager_model=f"hf:{tmp_path / 'nope'}"))


def test_key_from_dotenv_reaches_the_lower_layers_without_touching_os_environ(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mia.graph.models import check_model_spec, load_chat_model
    from mia.memory import config

    (tmp_path / ".env").write_text(
        "OPENAI_API_KEY=sk-from-dotenv\nMIA_PLANNER_MODEL=openai:gpt-4o-mini\n"
        f"MIA_DATA_DIR={tmp_path / 'dotenv-data'}\nMIA_CHROMA_HOST=chroma.internal\n"
    )
    before = dict(os.environ)
    s = Settings()
    check_role_models(s, roles=("planner",))  # the key in .env counts
    check_model_spec("openai:gpt-4o-mini")  # ...for the lower layers too, read from the settings
    model = load_chat_model("openai:gpt-4o-mini")  # built without network; the key passed explicitly
    assert model.openai_api_key.get_secret_value() == "sk-from-dotenv"
    assert config.data_dir() == tmp_path / "dotenv-data" and config.chroma_host() == "chroma.internal"
    assert dict(os.environ) == before  # nothing was written back
    clean_env.setenv("OPENAI_API_KEY", "sk-real-env")
    assert Settings().openai_api_key.get_secret_value() == "sk-real-env"  # the environment wins over .env


def test_one_definition_of_each_default(clean_env: pytest.MonkeyPatch) -> None:
    """The data dir and the Chroma address have one default, whichever layer asks."""
    from mia.graph.context import Context
    from mia.graph.models.paths import data_dir as models_data_dir
    from mia.graph.tools.index_cache import data_dir as index_data_dir
    from mia.memory import config

    home = Path("~/.local/share/mia").expanduser()
    assert Settings().data_dir == config.data_dir() == models_data_dir() == index_data_dir() == home
    assert Context().resolved_data_dir() == home
    assert Settings().chroma_host == config.chroma_host() == config.DEFAULT_CHROMA_HOST


def test_bad_values_are_rejected(clean_env: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from mia.app.settings import read_settings

    clean_env.setenv("MIA_CHROMA_MODE", "sideways")
    with pytest.raises(ValueError, match="MIA_CHROMA_MODE must be 'persistent' or 'http'"):
        read_settings()
    clean_env.delenv("MIA_CHROMA_MODE")
    clean_env.setenv("MIA_DEVICE", "tpu")
    with pytest.raises(ValidationError, match="MIA_DEVICE"):
        Settings()
