"""Cheap checks that a spec can work (keys set, files present, packages installed), without
loading anything. Used by load_chat_model, check_role_models and `mia doctor`."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mia.graph.models.errors import (
    BackendError,
    BackendNotInstalledError,
    MissingAPIKeyError,
    ModelFileNotFoundError,
    UnknownBackendError,
)
from mia.graph.models.embedded import embedded, is_assembled
from mia.graph.models.paths import is_converted
from mia.graph.models.providers import chat_providers
from mia.graph.models.providers import requirement as provider_requirement
from mia.graph.models.settings import Settings, read_settings
from mia.graph.models.spec import ModelSpec, parse_model_spec
from mia.graph.models.weights import check_adapter_dir, check_model_dir

#: API key variable per hosted backend.
API_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google_genai": "GOOGLE_API_KEY"}
#: (python module, pip requirement) per backend that needs an optional package.
PACKAGES = {
    "openai": ("langchain_openai", "langchain-openai"),
    "openai-compatible": ("langchain_openai", "langchain-openai"),
    "anthropic": ("langchain_anthropic", "mia-agent[anthropic]"),
    "google_genai": ("langchain_google_genai", "mia-agent[google]"),
    "llamacpp": ("xllamacpp", "xllamacpp"),
    "local": ("torch", "'mia-agent[local]'"),
    "hf": ("torch", "'mia-agent[local]'"),
}


@dataclass(frozen=True)
class SpecStatus:
    """What `mia doctor` shows for one spec."""

    spec: str
    ok: bool
    detail: str


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_package(backend: str) -> None:
    """Raise BackendNotInstalledError when the backend's optional package is missing."""
    if backend in PACKAGES:
        module, requirement = PACKAGES[backend]
    elif backend in (providers := chat_providers() or {}):  # any other init_chat_model provider
        module, requirement = providers[backend].split(".", 1)[0], provider_requirement(backend)
    else:  # MIA's own backends without a package, or LangChain without its table (checked at load)
        return
    if not _installed(module):
        raise BackendNotInstalledError(
            f"The {backend!r} backend needs the Python package {module!r}: pip install {requirement}"
        )


def _embedded_gguf(name: str, base: Path | None = None) -> Path:
    model = embedded(name)
    if not is_assembled(model, base):
        raise ModelFileNotFoundError(
            f"The embedded model {name!r} is not set up ({model.path(base)} is missing): "
            f"run `mia models fetch {name}` (scripts/setup.sh does it for the defaults)."
        )
    return model.path(base)


def gguf_for(spec: ModelSpec) -> tuple[Path, Path | None]:
    """(GGUF, GGUF LoRA or None) of a llamacpp spec. The model is an embedded name or a path; the
    adapter is a GGUF LoRA file or a PEFT adapter folder (converted to GGUF once, beside it)."""
    if spec.embedded:
        gguf = _embedded_gguf(spec.model)
    else:
        gguf = Path(spec.model).expanduser()
        if not gguf.is_file():
            raise ModelFileNotFoundError(f"No GGUF file at {gguf.resolve()}: check the path in {spec.raw!r}.")
    if not spec.adapter:
        return gguf.resolve(), None
    adapter = Path(spec.adapter).expanduser().resolve()
    if adapter.is_dir():
        from mia.graph.models.lora_gguf import ensure_lora_gguf

        return gguf.resolve(), ensure_lora_gguf(check_adapter_dir(adapter), gguf)
    if not adapter.is_file():
        raise ModelFileNotFoundError(f"No LoRA adapter at {adapter}: a GGUF LoRA file or a PEFT adapter folder.")
    return gguf.resolve(), adapter


def _data_base(env: Mapping[str, str | None] | None) -> Path | None:
    """MIA_DATA_DIR from `env` when set there (None: the default data folder)."""
    value = env.get("MIA_DATA_DIR") if env else None
    return Path(value).expanduser() if value else None


def check_model_spec(spec: str | ModelSpec, env: Mapping[str, str | None] | None = None) -> ModelSpec:
    """Raise the BackendError that loading `spec` would hit; return the parsed spec otherwise.

    `env` defaults to the environment plus the settings (which may come from `.env`).
    """
    parsed = parse_model_spec(spec)
    if not parsed.has_model:
        return parsed
    env = {**os.environ, **read_settings().as_environ()} if env is None else env
    if parsed.backend in API_KEYS and not (env.get(API_KEYS[parsed.backend]) or "").strip():
        raise MissingAPIKeyError(API_KEYS[parsed.backend], parsed.raw)
    require_package(parsed.backend)
    base = _data_base(env)
    if parsed.backend == "local" and not is_converted(embedded(parsed.model).converted_dir(base)):
        _embedded_gguf(parsed.model, base)
    if parsed.backend == "llamacpp" and parsed.embedded:
        _embedded_gguf(parsed.model, base)
    if parsed.backend == "hf":
        check_model_dir(parsed.model)
        if parsed.adapter:
            check_adapter_dir(parsed.adapter)
    if parsed.backend == "llamacpp" and not parsed.embedded:
        gguf_for(parsed)
    return parsed


def check_role_spec(role: str, spec: str | ModelSpec, env: Mapping[str, str | None] | None = None) -> ModelSpec:
    """check_model_spec for one role: only the memory manager may be `extractive` (no model)."""
    parsed = check_model_spec(spec, env)
    if not parsed.has_model and role != "manager":
        raise UnknownBackendError(f"{parsed.raw!r} is a memory-manager setting; the {role} needs a chat model")
    return parsed


def spec_status(spec: str, env: Mapping[str, str | None] | None = None) -> SpecStatus:
    """check_model_spec as a (ok, human detail) pair, for reports."""
    try:
        parsed = check_model_spec(spec, env)
    except MissingAPIKeyError as err:
        return SpecStatus(spec, False, f"{err.env_var} is not set")
    except BackendNotInstalledError as err:
        return SpecStatus(spec, False, "not installed: " + str(err).split(": ", 1)[-1])
    except BackendError as err:
        return SpecStatus(spec, False, str(err).splitlines()[0])
    if not parsed.has_model:
        detail = "no model: extractive workflows"
    elif parsed.backend == "local":
        base = _data_base(env)
        done = is_converted(embedded(parsed.model).converted_dir(base))
        detail = "ready (de-quantised)" if done else "GGUF found; de-quantised on first use"
    elif parsed.backend in API_KEYS:
        detail = f"{API_KEYS[parsed.backend]} set"
    elif parsed.backend == "openai-compatible":
        detail = f"server {parsed.base_url} (not contacted)"
    elif parsed.backend == "llamacpp":
        detail = f"GGUF {gguf_for(parsed)[0]}"
    elif parsed.backend not in ("local", "hf"):
        detail = f"{provider_requirement(parsed.backend)} installed (key not checked)"
    else:
        detail = "model files found"
    return SpecStatus(spec, True, detail)


def check_role_models(settings: Settings, roles: tuple[str, ...] | None = None) -> None:
    """Fail before any work starts if a role's backend lacks its key, files or package.

    Raises the first BackendError (MissingAPIKeyError names the variable to set), prefixed with the
    role and its variable.
    """
    env = {**os.environ, **settings.as_environ()}
    for role, spec in settings.role_models().items():
        if roles is not None and role not in roles:
            continue
        try:
            check_role_spec(role, spec, env)
        except BackendError as err:
            err.args = (f"MIA_{role.upper()}_MODEL={spec!r}: {err}",)
            raise
