"""The chat-model providers LangChain's `init_chat_model` knows, and what to install for each.

LangChain keeps its provider table in `langchain.chat_models.base._BUILTIN_PROVIDERS` (provider
-> module, class, constructor) and offers no public accessor; `init_chat_model` is the only public
contract. The table is read here (never copied: a new LangChain release brings its providers with
it) so that a typo in a provider is caught when a spec is parsed and a missing package is named
before a run starts. Being private, it may go: then `chat_providers()` is None, every lower-case
identifier is accepted as a provider, and `init_chat_model` itself rejects an unknown one or names
the missing package when the role loads (loader.py turns both into one-line errors). It is imported
only when a spec names a provider that is not one of MIA's own backends.
"""

from __future__ import annotations

import re

#: pip requirements that are MIA extras rather than the bare integration package.
EXTRAS = {"anthropic": "mia-agent[anthropic]", "google_genai": "mia-agent[google]"}

#: Providers whose chat model names the reply's token limit otherwise: ChatOllama ignores a
#: `max_tokens` it does not have, so the limit a role asks for would be silently dropped.
MAX_TOKENS_FIELD = {"ollama": "num_predict"}


def provider_sampling(provider: str, sampling: dict) -> dict:
    """The sampling options under the names this provider's chat model takes."""
    field = MAX_TOKENS_FIELD.get(provider)
    if field is None or "max_tokens" not in sampling:
        return dict(sampling)
    renamed = {k: v for k, v in sampling.items() if k != "max_tokens"}
    renamed[field] = sampling["max_tokens"]
    return renamed


def chat_providers() -> dict[str, str] | None:
    """provider -> the module `init_chat_model` imports for it; None when LangChain has no table."""
    try:
        from langchain.chat_models import base
    except ImportError:  # pragma: no cover - langchain is a dependency
        return None
    table = getattr(base, "_BUILTIN_PROVIDERS", None)
    if not isinstance(table, dict):
        return None
    return {name: entry[0] for name, entry in table.items()}


#: What a provider name looks like; LangChain's table (or, without it, init_chat_model) says which exist.
PROVIDER_NAME = re.compile(r"[a-z][a-z0-9_]*")


def is_provider(name: str) -> bool:
    """A name init_chat_model accepts: in LangChain's table, or any well-formed name when it has none.
    LangChain is imported only for a well-formed name."""
    if not PROVIDER_NAME.fullmatch(name):
        return False
    table = chat_providers()
    return table is None or name in table


def requirement(provider: str) -> str:
    """What to `pip install` for a provider: MIA's extra, or its langchain-<provider> package."""
    if provider in EXTRAS:
        return EXTRAS[provider]
    module = (chat_providers() or {}).get(provider, f"langchain_{provider}")
    return module.split(".", 1)[0].replace("_", "-")
