"""Model backends: one spec string per role -> a LangChain chat model.

    from mia.graph.models import load_chat_model, parse_model_spec, ModelSpec
    model = load_chat_model("llamacpp:qwen-coder-1.5b", temperature=0.0, max_tokens=256)

Spec strings: llamacpp:<embedded>|<gguf>[+<adapter>], local:<embedded>, hf:<dir>[+<adapter>],
openai:<m>, anthropic:<m>, google_genai:<m>, openai-compatible:<m>@<base-url>. Heavy modules
(torch, transformers, xllamacpp) load only when a local model is built or used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mia.graph.models.check import SpecStatus, check_model_spec, spec_status
from mia.graph.models.errors import (
    BackendError,
    BackendNotInstalledError,
    ContextLengthError,
    MissingAPIKeyError,
    ModelFileNotFoundError,
    UnknownBackendError,
)
from mia.graph.models.spec import BACKENDS, ModelSpec, parse_model_spec

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.models.local import LocalChatModel
    from mia.graph.models.loader import load_chat_model

__all__ = [
    "BACKENDS", "BackendError", "BackendNotInstalledError", "ContextLengthError", "LocalChatModel", "MissingAPIKeyError",
    "ModelFileNotFoundError", "ModelSpec", "SpecStatus", "UnknownBackendError", "check_model_spec",
    "load_chat_model", "parse_model_spec", "spec_status",
]


def __getattr__(name: str) -> Any:
    if name == "load_chat_model":
        from mia.graph.models.loader import load_chat_model

        return load_chat_model
    if name == "LocalChatModel":
        from mia.graph.models.local import LocalChatModel

        return LocalChatModel
    raise AttributeError(f"module 'mia.graph.models' has no attribute {name!r}")
