"""Errors raised while resolving or loading a model backend.

They all derive from one `BackendError(ValueError)` so callers (the CLI, settings validation, the
model server) can catch configuration mistakes in one place and show the message as is: every
message says what to do next.
"""

from __future__ import annotations


class BackendError(ValueError):
    """A model spec cannot be turned into a working chat model."""


class UnknownBackendError(BackendError):
    """The spec string does not name a known backend."""


class MissingAPIKeyError(BackendError):
    """A hosted backend needs an API key that is not set.

    `env_var` names the variable, so callers can point the user at it.
    """

    def __init__(self, env_var: str, spec: str) -> None:
        self.env_var = env_var
        self.spec = spec
        super().__init__(
            f"{env_var} is not set, but the model {spec!r} needs it. "
            f"Set {env_var} in the environment or in .env (see .env.example), "
            f"or pick a local model such as 'local:smollm2'."
        )


class ModelFileNotFoundError(BackendError):
    """A local model folder, adapter folder or GGUF file does not exist."""


class BackendNotInstalledError(BackendError):
    """The backend needs an optional package that is not installed."""


class ContextLengthError(BackendError):
    """A prompt does not fit the model's context window; refused before any token is generated.

    `prompt_tokens` and `limit` let an API turn it into a 400 that states the limit (the model
    server does, as OpenAI, vLLM and llama.cpp's server do).
    """

    def __init__(self, prompt_tokens: int, limit: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.limit = limit
        super().__init__(
            f"This model's maximum context length is {limit} tokens, but the prompt has {prompt_tokens} tokens. "
            f"Shorten the messages."
        )
