"""The roles and their default models: the one place that says which model a role gets when
nothing is configured (Context, Settings, the CLI and the eval harness all read it).

The choice is measured (bench/models/results.md): the most accurate embedded model per role that
keeps a question under a minute on a 2-core CPU.
"""

from __future__ import annotations

ROLES = ("planner", "executor", "manager", "judge")

DEFAULT_MODELS: dict[str, str] = {
    "planner": "llamacpp:qwen-coder-1.5b",
    "executor": "llamacpp:qwen-coder-1.5b",
    "manager": "llamacpp:qwen-coder-1.5b",
    "judge": "llamacpp:qwen-coder-1.5b",
}
#: The spec of the planner role, for docs and error messages.
DEFAULT_MODEL = DEFAULT_MODELS["planner"]


def default_model(role: str) -> str:
    """The default spec of one role."""
    if role not in DEFAULT_MODELS:
        raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
    return DEFAULT_MODELS[role]


def setup_models() -> list[str]:
    """The embedded models the defaults need (what set-up fetches)."""
    from mia.graph.models.spec import parse_model_spec

    names = []
    for spec in DEFAULT_MODELS.values():
        parsed = parse_model_spec(spec)
        if parsed.embedded and parsed.model not in names:
            names.append(parsed.model)
    return names
