"""Typed settings for the whole app, read from the environment and `.env`.

Every variable in docs/architecture.md is a field here, named exactly as in the environment. The
lower layers (mia.graph, mia.memory) read the few they need straight from os.environ so they work
without the app; `apply_to_environ()` exports values that came from `.env` so they see them too.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mia.graph.models.defaults import ROLES, default_model


def _env(name: str) -> AliasChoices:
    return AliasChoices(name, name.lower())


class Settings(BaseSettings):
    """All configuration of mia. Field names are lower-case; environment names are the aliases."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True, case_sensitive=False
    )

    data_dir: Path = Field(Path("~/.local/share/mia"), validation_alias=_env("MIA_DATA_DIR"),
                           description="Where models, memory, indexes, checkpoints and adapters live.")
    planner_model: str = Field(default_model("planner"), validation_alias=_env("MIA_PLANNER_MODEL"))
    executor_model: str = Field(default_model("executor"), validation_alias=_env("MIA_EXECUTOR_MODEL"))
    manager_model: str = Field(default_model("manager"), validation_alias=_env("MIA_MANAGER_MODEL"))
    judge_model: str = Field(default_model("judge"), validation_alias=_env("MIA_JUDGE_MODEL"))
    device: str = Field("auto", validation_alias=_env("MIA_DEVICE"), description="auto | cpu | cuda | cuda:N")
    llamacpp_threads: int | None = Field(None, ge=1, validation_alias=_env("MIA_LLAMACPP_THREADS"),
                                         description="llama.cpp CPU threads (empty: all cores)")
    llamacpp_verbose: bool = Field(False, validation_alias=_env("MIA_LLAMACPP_VERBOSE"),
                                   description="let llama.cpp log to stderr")
    embedding_model: str = Field("minilm", validation_alias=_env("MIA_EMBEDDING_MODEL"))
    chroma_mode: Literal["persistent", "http"] = Field("persistent", validation_alias=_env("MIA_CHROMA_MODE"))
    chroma_host: str = Field("127.0.0.1", validation_alias=_env("MIA_CHROMA_HOST"))
    chroma_port: int = Field(8000, validation_alias=_env("MIA_CHROMA_PORT"))
    memory_namespace: str = Field("default", validation_alias=_env("MIA_MEMORY_NAMESPACE"))
    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=_env("OPENAI_BASE_URL"))
    anthropic_api_key: SecretStr | None = Field(None, validation_alias=_env("ANTHROPIC_API_KEY"))
    google_api_key: SecretStr | None = Field(None, validation_alias=_env("GOOGLE_API_KEY"))
    tavily_api_key: SecretStr | None = Field(None, validation_alias=_env("TAVILY_API_KEY"))

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("device", mode="after")
    @classmethod
    def _check_device(cls, value: str) -> str:
        v = value.strip().lower()
        if v not in ("auto", "cpu") and not v.startswith("cuda"):
            raise ValueError("MIA_DEVICE must be auto, cpu, cuda or cuda:N")
        return v

    @field_validator("openai_api_key", "anthropic_api_key", "google_api_key", "tavily_api_key", mode="after")
    @classmethod
    def _blank_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value().strip() else None

    @field_validator("llamacpp_threads", "llamacpp_verbose", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object, info: Any) -> object:
        if isinstance(value, str) and not value.strip():
            return False if info.field_name == "llamacpp_verbose" else None
        return value

    @field_validator("openai_base_url", mode="after")
    @classmethod
    def _blank_url(cls, value: str | None) -> str | None:
        return value.strip() or None if value else None

    # ---- derived ---------------------------------------------------------------------------
    def role_models(self) -> dict[str, str]:
        """{role: spec} for the four roles."""
        return {role: getattr(self, f"{role}_model") for role in ROLES}

    def as_environ(self) -> dict[str, str]:
        """The settings under their environment names (secrets included, unset ones left out)."""
        out: dict[str, str] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None or value is False:
                continue
            env_name = field.validation_alias.choices[0]  # type: ignore[union-attr]
            out[env_name] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        return out

    def apply_to_environ(self, *, override: bool = False) -> None:
        """Export the settings to os.environ (by default without overriding what is already set),
        so the lower layers, which read os.environ, see values that came from `.env`."""
        for key, value in self.as_environ().items():
            if override or key not in os.environ:
                os.environ[key] = value

    def validate_backends(self, roles: tuple[str, ...] | None = None) -> None:
        """Fail before any work starts if a role's backend lacks its key, files or package.

        Raises the first BackendError (MissingAPIKeyError names the variable to set), prefixed
        with the role and its variable.
        """
        from mia.graph.models import BackendError, check_model_spec

        env = {**os.environ, **self.as_environ()}
        for role, spec in self.role_models().items():
            if roles is not None and role not in roles:
                continue
            try:
                check_model_spec(spec, env)
            except BackendError as err:
                err.args = (f"MIA_{role.upper()}_MODEL={spec!r}: {err}",)
                raise


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide Settings (read once; call get_settings.cache_clear() after changing env)."""
    return Settings()
