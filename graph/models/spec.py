"""Parsing of model spec strings (`local:smollm2`, `hf:<dir>+<adapter>`, `ollama:llama3`, ...).

MIA's own backends are listed in BACKENDS; any other `provider:model` whose provider LangChain's
`init_chat_model` knows is passed through to it.

Pure string handling, no heavy imports, so the CLI and settings validation can check a spec
without loading anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mia.graph.models.embedded import registry
from mia.graph.models.errors import UnknownBackendError
from mia.graph.models.providers import is_provider

#: Backend prefixes, with a one-line form for error messages and docs.
BACKENDS: dict[str, str] = {
    "local": "local:<embedded> (an embedded model through transformers, de-quantised once; trainable)",
    "hf": "hf:<model-dir> or hf:<model-dir>+<lora-adapter-dir> (any local causal LM)",
    "openai": "openai:<model> (needs OPENAI_API_KEY)",
    "anthropic": "anthropic:<model> (needs ANTHROPIC_API_KEY and the extra 'anthropic')",
    "google_genai": "google_genai:<model> (needs GOOGLE_API_KEY and the extra 'google')",
    "openai-compatible": "openai-compatible:<model>@<base-url> (any OpenAI-compatible server)",
    "llamacpp": "llamacpp:<embedded>|<gguf-path>[+<lora.gguf>|+<peft-adapter-dir>] (llama.cpp in-process)",
}
#: The memory manager without a model: each trajectory is stored as the deterministic extractive
#: workflow (its plan, queries, answer and verdict; memory/compression.py). Only the manager
#: role takes it.
EXTRACTIVE = "extractive"
#: The form of every other LangChain provider (passed to init_chat_model as it is).
PROVIDER_FORM = (
    "<provider>:<model> (any init_chat_model provider, e.g. ollama:llama3, groq:llama-3.1-8b-instant, "
    "mistralai:mistral-small-latest; needs its langchain-<provider> package and its key)"
)
_COMPAT = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: which backend, which model, and the optional adapter or base URL."""

    backend: str
    model: str
    adapter: str | None = None
    base_url: str | None = None
    raw: str = ""

    def __str__(self) -> str:
        return self.raw or f"{self.backend}:{self.model}"

    @property
    def has_model(self) -> bool:
        """Names a chat model (False for the model-less `extractive` memory manager)."""
        return self.backend != EXTRACTIVE

    @property
    def embedded(self) -> bool:
        """Names one of the embedded models (embedded.toml) rather than a path."""
        return self.backend in ("local", "llamacpp") and self.model in registry()

    @property
    def is_local(self) -> bool:
        """Runs in this process on weights from disk (no network, no key)."""
        return self.backend in ("local", "hf", "llamacpp")

    @property
    def trainable(self) -> bool:
        """Has transformers weights a LoRA can be trained on: an embedded model (on llama.cpp too:
        training uses its de-quantised weights and llama.cpp serves the adapter) or an hf: folder.
        The one answer to "can this model learn here?" (training, test-time learning)."""
        return self.backend == "hf" or self.embedded


def _unknown(spec: str, why: str) -> UnknownBackendError:
    forms = "\n  ".join([*BACKENDS.values(), PROVIDER_FORM, f"{EXTRACTIVE} (the memory manager only: no model)"])
    return UnknownBackendError(f"Unknown model spec {spec!r}: {why}. Valid forms:\n  {forms}")


def parse_model_spec(spec: str | ModelSpec) -> ModelSpec:
    """Parse a spec string; raise UnknownBackendError (listing the valid forms) when it is not one."""
    if isinstance(spec, ModelSpec):
        return spec
    text = (spec or "").strip()
    if text == EXTRACTIVE:
        return ModelSpec(EXTRACTIVE, EXTRACTIVE, raw=text)
    backend, sep, rest = text.partition(":")
    backend, rest = backend.strip(), rest.strip()
    if not sep:
        raise _unknown(text, "expected '<backend>:<model>'")
    if backend not in BACKENDS and not is_provider(backend):
        raise _unknown(text, f"no backend named {backend!r}")
    if not rest:
        raise _unknown(text, f"the backend {backend!r} needs a model after the colon")
    if backend == "local":
        if rest not in registry():
            raise _unknown(text, f"the embedded models are {', '.join(registry())}")
        return ModelSpec("local", rest, raw=text)
    if backend in ("hf", "llamacpp"):
        model, plus, adapter = rest.rpartition("+") if "+" in rest else (rest, "", "")
        if plus and (not model or not adapter):
            raise _unknown(text, f"write {backend}:<model>+<adapter> with both parts")
        return ModelSpec(backend, model, adapter or None, raw=text)
    if backend == "openai-compatible":
        match = _COMPAT.match(rest)
        if not match:
            raise _unknown(text, "write openai-compatible:<model>@<http(s)://host:port/v1>")
        return ModelSpec("openai-compatible", match["model"], base_url=match["url"], raw=text)
    return ModelSpec(backend, rest, raw=text)
