"""The roles and their default models: the one place that says which model a role gets when
nothing is configured (Context, Settings, the CLI and the eval harness all read it).

Why these (bench/models/results.md, bench/e2e/): on a 2-core CPU, Qwen-1.5B reads prompts at about
43 tokens/s and Qwen-0.5B at about 104. With 1.5B in every role the whole MIA loop took 212 s per
question (median of 5), a third of its prompt tokens and two thirds of its generated tokens in the
memory manager; the manager's output is validated and falls back to an extractive workflow, so it
gets the 2.4x faster 0.5B, while the roles whose output decides the answer (planner, executor,
judge) keep the 1.5B.
"""

from __future__ import annotations

ROLES = ("planner", "executor", "manager", "judge")
#: Roles with no default model: used only when configured (the captioner needs a vision model,
#: and no embedded model can see images).
OPTIONAL_ROLES = ("captioner",)

DEFAULT_MODELS: dict[str, str] = {
    "planner": "llamacpp:qwen-coder-1.5b",
    "executor": "llamacpp:qwen-coder-1.5b",
    "manager": "llamacpp:qwen-coder-0.5b",
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
