"""`load_chat_model(spec)`: one string per role -> a LangChain chat model."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from mia.graph.models.defaults import DEFAULT_MODEL
from mia.graph.models.check import check_model_spec, gguf_for
from mia.graph.models.device import resolve_device
from mia.graph.models.errors import BackendError, BackendNotInstalledError, UnknownBackendError
from mia.graph.models.settings import read_settings
from mia.graph.models.spec import ModelSpec


def _sampling(temperature: float | None, max_tokens: int | None, top_p: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if temperature is not None:
        out["temperature"] = temperature
    if max_tokens is not None:
        out["max_tokens"] = max_tokens
    if top_p is not None:
        out["top_p"] = top_p
    return out


def load_chat_model(
    spec: str | ModelSpec = DEFAULT_MODEL,
    *,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    top_p: float | None = None,
    device: str | None = None,
    **kwargs: Any,
) -> BaseChatModel:
    """Build the chat model a spec names. Fails at once (BackendError subclasses) on a bad spec,
    a missing key, file or package. Local weights load lazily on first use, once per process."""
    parsed = check_model_spec(spec)
    if not parsed.has_model:
        raise UnknownBackendError(
            f"{parsed.raw!r} names no chat model: it is a memory-manager setting "
            "(trajectories stored as extractive workflows, without a model call)"
        )
    settings = read_settings()
    sampling = _sampling(temperature, max_tokens, top_p)
    if parsed.backend in ("local", "hf"):
        from mia.graph.models.local import LocalChatModel

        if parsed.backend == "local":
            from mia.graph.models.convert import ensure_converted

            path, adapter = str(ensure_converted(parsed.model)), None
        else:
            path, adapter = parsed.model, parsed.adapter
        from mia.graph.models.weights import check_adapter_dir, check_model_dir

        folder = check_model_dir(path)
        if parsed.backend == "hf":
            from mia.graph.models.vision import VisionChatModel, is_vision_model

            if is_vision_model(folder):  # a vision-language model: the captioner or a multimodal executor
                if adapter:
                    raise BackendError(f"{parsed.raw}: LoRA adapters on local vision models are not supported")
                return VisionChatModel(
                    model_name=parsed.raw, model_path=str(folder), device=resolve_device(device), **sampling, **kwargs
                )
        return LocalChatModel(
            model_name=parsed.raw,
            model_path=str(folder),
            adapter_path=str(check_adapter_dir(adapter)) if adapter else None,
            device=resolve_device(device),
            **sampling,
            **kwargs,
        )
    if parsed.backend == "llamacpp":
        from mia.graph.models.llamacpp import LlamaCppChatModel

        gguf, lora = gguf_for(parsed)
        return LlamaCppChatModel(
            model_name=parsed.raw, model_path=str(gguf), adapter_path=str(lora) if lora else None, **sampling, **kwargs
        )
    if parsed.backend == "openai-compatible":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=parsed.model,
            base_url=parsed.base_url,
            api_key=settings.api_key("openai-compatible") or "not-needed",
            stream_usage=True,
            **sampling,
            **kwargs,
        )
    from langchain.chat_models import init_chat_model

    from mia.graph.models.providers import provider_sampling

    # Any other init_chat_model provider (ollama:, groq:, mistralai:, ...) goes through as it is.
    # The keys we know are passed explicitly (environment or .env, through the settings); other
    # provider packages read their own variable (GROQ_API_KEY, ...) from the environment.
    extra: dict[str, Any] = {}
    if settings.api_key(parsed.backend):
        extra["api_key"] = settings.api_key(parsed.backend)
    if parsed.backend == "openai":
        extra["stream_usage"] = True
        if settings.openai_base_url:
            extra["base_url"] = settings.openai_base_url
    try:
        return init_chat_model(
            parsed.model,
            model_provider=parsed.backend,
            **provider_sampling(parsed.backend, sampling),
            **extra,
            **kwargs,
        )
    except ImportError as err:  # check_model_spec catches the usual case
        raise BackendNotInstalledError(f"{parsed.raw}: {err}") from err
    except (ValueError, TypeError) as err:  # the provider's own check (a missing key, a bad option)
        raise BackendError(
            f"{parsed.raw}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        ) from err
