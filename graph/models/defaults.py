"""The roles and their default models: the one place that says which model a role gets when
nothing is configured (Context, Settings, the CLI and the eval harness all read it).

Why these (bench/models/results.md, bench/e2e/, bench/memory/manager*.md): on a 2-core CPU,
Qwen-1.5B reads prompts at about 43 tokens/s. The roles whose output decides the answer (planner,
executor, judge) get it. The memory manager gets no model (`extractive`): on 16 real agent
trajectories both embedded Qwen models copied the compression prompt's worked example into 31 of
32 first outputs; with a template instead, 10 of 16 outputs were usable by the validator, but
most of the 0.5B's replayed the transcript or the prompt, and each compression cost 36-39 s a
question (mean). The extractive workflow is built from the trajectory itself: faithful, and free.
A capable manager (a hosted model, a vLLM-served one) is one setting away: MIA_MANAGER_MODEL.
"""

from __future__ import annotations

ROLES = ("planner", "executor", "manager", "judge")
#: Roles with no default model: used only when configured (the captioner needs a vision model,
#: and no embedded model can see images).
OPTIONAL_ROLES = ("captioner",)

DEFAULT_MODELS: dict[str, str] = {
    "planner": "llamacpp:qwen-coder-1.5b",
    "executor": "llamacpp:qwen-coder-1.5b",
    "manager": "extractive",  # spec.EXTRACTIVE: no model, see above
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
