"""Which extra of mia-agent brings a missing module, so an ImportError says what to install.

Why: the base install (`pip install mia-agent`) has no torch, transformers, trl, Studio or
PostgreSQL packages; a feature that needs one fails with `pip install 'mia-agent[EXTRA]'`
instead of a bare ModuleNotFoundError.
"""

from __future__ import annotations

#: top-level module -> the extra that installs it (see [project.optional-dependencies]).
MODULE_EXTRA: dict[str, str] = {
    "torch": "local",
    "transformers": "local",
    "peft": "local",
    "sentence_transformers": "local",
    "huggingface_hub": "local",
    "trl": "training",
    "datasets": "training",
    "accelerate": "training",
    "langgraph_api": "studio",
    "langgraph_cli": "studio",
    "langgraph_runtime_inmem": "studio",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "langchain_anthropic": "anthropic",
    "langchain_google_genai": "google",
}


def extra_for(module: str | None) -> str | None:
    """The extra that installs `module` (a dotted name is matched by its top-level package)."""
    if not module:
        return None
    if module.startswith("langgraph.checkpoint.postgres") or module.startswith("langgraph.store.postgres"):
        return "postgres"
    return MODULE_EXTRA.get(module.split(".")[0])


def missing_extra_message(err: ModuleNotFoundError) -> str | None:
    """A one-line hint for a module an extra provides, else None (a genuine bug: let it raise)."""
    extra = extra_for(err.name)
    if extra is None:
        return None
    return f"this needs the Python package {err.name!r}, which the '{extra}' extra installs: pip install 'mia-agent[{extra}]'"
