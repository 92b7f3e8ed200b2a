"""The chat-model providers LangChain's `init_chat_model` knows, and what to install for each.

LangChain keeps its provider table in `langchain.chat_models.base._BUILTIN_PROVIDERS` (provider
-> module, class, constructor). It is private, but it is the one list of what `init_chat_model`
accepts (any other name is a ValueError there), so it is read here rather than copied: a new
LangChain release brings its new providers with it. It is imported only when a spec names a
provider that is not one of MIA's own backends.
"""

from __future__ import annotations

#: pip requirements that are MIA extras rather than the bare integration package.
EXTRAS = {"anthropic": "mia-agent[anthropic]", "google_genai": "mia-agent[google]"}


def chat_providers() -> dict[str, str]:
    """provider -> the module `init_chat_model` imports for it ({} when LangChain has no table)."""
    try:
        from langchain.chat_models import base
    except ImportError:  # pragma: no cover - langchain is a dependency
        return {}
    table = getattr(base, "_BUILTIN_PROVIDERS", None) or {}
    return {name: entry[0] for name, entry in table.items()}


def requirement(provider: str) -> str:
    """What to `pip install` for a provider: MIA's extra, or its langchain-<provider> package."""
    if provider in EXTRAS:
        return EXTRAS[provider]
    module = chat_providers().get(provider, f"langchain_{provider}")
    return module.split(".", 1)[0].replace("_", "-")
