"""Typed settings of mia, read once from the environment and `.env` (the environment wins).

The one owner of configuration: the memory layer's fields (data dir, namespace, Chroma, embedder)
are defined in `mia.memory.config.MemorySettings`, this class adds the graph's (role models,
device, llama.cpp, API keys), and the app uses it as is. Values are passed down explicitly (the
Context defaults, the model loader's keys, the store's Chroma address); nothing is written back
into os.environ.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator

from mia.graph.models.defaults import ROLES, default_model
from mia.graph.models.errors import BackendError
from mia.memory.config import MemorySettings, env_alias, one_line


class Settings(MemorySettings):
    """All configuration of mia. Field names are lower-case; environment names are the aliases."""

    planner_model: str = Field(default_model("planner"), validation_alias=env_alias("MIA_PLANNER_MODEL"))
    executor_model: str = Field(default_model("executor"), validation_alias=env_alias("MIA_EXECUTOR_MODEL"))
    manager_model: str = Field(default_model("manager"), validation_alias=env_alias("MIA_MANAGER_MODEL"))
    judge_model: str = Field(default_model("judge"), validation_alias=env_alias("MIA_JUDGE_MODEL"))
    captioner_model: str = Field(
        "",
        validation_alias=env_alias("MIA_CAPTIONER_MODEL"),
        description="vision model for image captions (empty: none)",
    )
    device: str = Field("auto", validation_alias=env_alias("MIA_DEVICE"), description="auto | cpu | cuda | cuda:N")
    llamacpp_threads: int | None = Field(
        None,
        ge=1,
        validation_alias=env_alias("MIA_LLAMACPP_THREADS"),
        description="llama.cpp CPU threads (empty: all cores)",
    )
    llamacpp_build: Literal["auto", "prebuilt", "native"] = Field(
        "auto",
        validation_alias=env_alias("MIA_LLAMACPP_BUILD"),
        description="auto: the native llama.cpp build for this CPU when `mia models build-native` made one, "
        "else the prebuilt wheel; prebuilt; native (required)",
    )
    llamacpp_verbose: bool = Field(
        False, validation_alias=env_alias("MIA_LLAMACPP_VERBOSE"), description="let llama.cpp log to stderr"
    )
    llamacpp_repack: Literal["auto", "on", "off"] = Field(
        "auto",
        validation_alias=env_alias("MIA_LLAMACPP_REPACK"),
        description="llama.cpp's weight repacking (its CPU extra buffer types): auto (off on this CPU's native "
        "build, on for the prebuilt wheel: servers.repack_weights), on, off",
    )
    llamacpp_spec: Literal["off", "ngram-simple", "ngram-map-k", "ngram-mod"] = Field(
        "off",
        validation_alias=env_alias("MIA_LLAMACPP_SPEC"),
        description="llama.cpp's draftless speculative decoding (drafts copied from the context, verified in one "
        "batch): off, ngram-simple, ngram-map-k, ngram-mod; off by default: slower on a 2-core CPU, and a "
        "verified batch may round a greedy reply differently (bench/models/speculative.md)",
    )
    llamacpp_spec_n: int | None = Field(
        None,
        ge=1,
        validation_alias=env_alias("MIA_LLAMACPP_SPEC_N"),
        description="the n-gram speculation's lookup length in tokens (empty: llama.cpp's own)",
    )
    llamacpp_spec_m: int | None = Field(
        None,
        ge=1,
        validation_alias=env_alias("MIA_LLAMACPP_SPEC_M"),
        description="the n-gram speculation's longest draft in tokens (empty: llama.cpp's own)",
    )
    openai_api_key: SecretStr | None = Field(None, validation_alias=env_alias("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=env_alias("OPENAI_BASE_URL"))
    anthropic_api_key: SecretStr | None = Field(None, validation_alias=env_alias("ANTHROPIC_API_KEY"))
    google_api_key: SecretStr | None = Field(None, validation_alias=env_alias("GOOGLE_API_KEY"))
    tavily_api_key: SecretStr | None = Field(None, validation_alias=env_alias("TAVILY_API_KEY"))
    model_server_api_key: SecretStr | None = Field(
        None,
        validation_alias=env_alias("MIA_MODEL_SERVER_API_KEY"),
        description="the key `mia serve-model` requires and the openai-compatible backend sends (falls back to OPENAI_API_KEY)",
    )

    @field_validator("planner_model", "executor_model", "manager_model", "judge_model", mode="before")
    @classmethod
    def _blank_model_is_default(cls, value: object, info: Any) -> object:
        if isinstance(value, str) and not value.strip():
            return default_model(info.field_name.removesuffix("_model"))
        return value

    @field_validator("device", mode="after")
    @classmethod
    def _check_device(cls, value: str) -> str:
        v = value.strip().lower() or "auto"
        if v not in ("auto", "cpu") and not v.startswith("cuda"):
            raise ValueError("MIA_DEVICE must be auto, cpu, cuda or cuda:N")
        return v

    @field_validator(
        "openai_api_key", "anthropic_api_key", "google_api_key", "tavily_api_key", "model_server_api_key", mode="after"
    )
    @classmethod
    def _blank_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value().strip() else None

    @field_validator(
        "llamacpp_threads",
        "llamacpp_verbose",
        "llamacpp_repack",
        "llamacpp_spec",
        "llamacpp_spec_n",
        "llamacpp_spec_m",
        mode="before",
    )
    @classmethod
    def _blank_is_default(cls, value: object, info: Any) -> object:
        if isinstance(value, str) and not value.strip():
            return {"llamacpp_verbose": False, "llamacpp_repack": "auto", "llamacpp_spec": "off"}.get(info.field_name)
        lower = info.field_name in ("llamacpp_repack", "llamacpp_spec")
        return value.strip().lower() if lower and isinstance(value, str) else value

    @field_validator("openai_base_url", mode="after")
    @classmethod
    def _blank_url(cls, value: str | None) -> str | None:
        return value.strip() or None if value else None

    # ---- derived ---------------------------------------------------------------------------
    def role_models(self) -> dict[str, str]:
        """{role: spec} for the four roles."""
        return {role: getattr(self, f"{role}_model") for role in ROLES}

    def api_key(self, backend: str) -> str | None:
        """The key of an API backend (openai, anthropic, google_genai, openai-compatible), or None.
        An openai-compatible server (`mia serve-model`, vLLM) gets MIA_MODEL_SERVER_API_KEY, else
        OPENAI_API_KEY as before (set the first so your OpenAI key never goes to a self-hosted server)."""
        secret = {
            "openai": self.openai_api_key,
            "anthropic": self.anthropic_api_key,
            "google_genai": self.google_api_key,
            "openai-compatible": self.model_server_api_key or self.openai_api_key,
        }.get(backend)
        return secret.get_secret_value() if secret is not None else None

    def as_environ(self) -> dict[str, str]:
        """The settings under their environment names (secrets included, unset ones left out): the
        `env` mapping that the spec checks read, never exported to os.environ."""
        out: dict[str, str] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None or value is False:
                continue
            alias = field.validation_alias
            env_name = alias.choices[0] if isinstance(alias, AliasChoices) else None
            if not isinstance(env_name, str):  # every field is declared with env_alias()
                raise TypeError(f"setting {name!r} has no env_alias() name")
            out[env_name] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        return out


def read_settings() -> Settings:
    """The settings as the environment and `.env` say now. A bad value is a BackendError (a
    ValueError) in one line: like a missing key, it fails every question, so runs stop on it."""
    try:
        return Settings()
    except ValidationError as err:
        raise BackendError(one_line(err)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide Settings of a CLI run (read once; get_settings.cache_clear() re-reads)."""
    return read_settings()
