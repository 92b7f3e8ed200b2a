"""Model backends: one spec string per role -> a LangChain chat model.

    from mia.graph.models import load_chat_model, parse_model_spec, ModelSpec
    model = load_chat_model("llamacpp:qwen-coder-1.5b", temperature=0.0, max_tokens=256)

Spec strings: llamacpp:<embedded>|<gguf>[+<adapter>], local:<embedded>, hf:<dir>[+<adapter>],
openai:<m>, anthropic:<m>, google_genai:<m>, openai-compatible:<m>@<base-url>. Heavy modules
(torch, transformers, xllamacpp) load only when a local model is built or used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:  # pragma: no cover
    from mia.graph.models.check import SpecStatus, check_model_spec, check_role_spec, spec_status
    from mia.graph.models.errors import (
        BackendError,
        BackendNotInstalledError,
        ContextLengthError,
        MissingAPIKeyError,
        ModelFileNotFoundError,
        UnknownBackendError,
    )
    from mia.graph.models.local import LocalChatModel
    from mia.graph.models.loader import load_chat_model
    from mia.graph.models.spec import BACKENDS, EXTRACTIVE, ModelSpec, parse_model_spec

# Everything lazy: `import mia.graph.models.defaults` (the CLI's role list) must not load the backends.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "check": ["SpecStatus", "check_model_spec", "check_role_spec", "spec_status"],
        "errors": [
            "BackendError",
            "BackendNotInstalledError",
            "ContextLengthError",
            "MissingAPIKeyError",
            "ModelFileNotFoundError",
            "UnknownBackendError",
        ],
        "spec": ["BACKENDS", "EXTRACTIVE", "ModelSpec", "parse_model_spec"],
        "loader": ["load_chat_model"],
        "local": ["LocalChatModel"],
    },
)
