"""Who samples a question's n plans for the GRPO step: the learner's torch copy, or the served planner.

Why the served planner: on a 2-core CPU the learner's fp32 copy generates Qwen-1.5B at about 2
tokens/s; sampling 16 plans of up to 128 tokens took 509-551 s of a 982-1,396 s batch
(results/ttl-2wiki). llama.cpp serves the same weights (the learner trains the de-quantised GGUF,
`mia models fetch --convert`) with the same adapter (each published version is converted and swapped
in), at llama.cpp's speed, on its parallel slots. The distribution is the learner's: plain
temperature sampling (no top-k, top-p or presence penalty, as `PlannerPolicy.sample`) from weights
that differ only by the adapter's fp16 storage and llama.cpp's arithmetic. The prompt goes in as
the learner's own ids and the sampled ids come back (the executor stage's episodes are sampled the
same way: training/served_react.py), so the GRPO step scores the very tokens sampled with the
learner's own forward pass, as it does for torch samples. (Until 2026-12-07 the server applied its
own chat template and the reply was re-tokenised: the same text, not always the same ids.)

It is used only while the served planner holds the learner's weights: the learner publishes every
update it makes and is reset to the served version on a rollback, so between batches the two agree.
Where they do not (a step whose publication failed, a served adapter swapped by hand), sampling from
the server would train on another policy's plans, so the learner's copy samples instead (`holds`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mia.training.online.policy import SampledPlan
from mia.training.online.stopping import ShouldStop, check_stop


#: (messages, n, max_new_tokens, temperature, should_stop=None, stop=()) -> n plans: the signature of
#: `PlannerPolicy.sample`, which `ServedSampler` shares.
PlanSampler = Callable[..., list[SampledPlan]]

log = logging.getLogger(__name__)


def holds(served: Any, policy: Any) -> bool:
    """Whether the served model serves the learner's current weights: no step since they were saved
    or loaded, and the served GGUF LoRA converted from that adapter folder (`ensure_lora_gguf` writes
    it inside the folder), or no adapter on either side."""
    if policy.unsaved:
        return False
    served_path = getattr(served, "adapter_path", None)
    if policy.adapter_folder is None or served_path is None:
        return policy.adapter_folder is None and served_path is None
    return Path(served_path).resolve().parent == Path(policy.adapter_folder).resolve()


class ServedSampler:
    """n plans from the served planner's chat model (a llama.cpp one), from the learner's own prompt
    ids, in llama.cpp's sampled ids (`served_react.complete`: the GGUF and the learner share one
    vocabulary). A plan that ended (its end token or a stop string, which the server leaves out)
    ends with the learner's end token, so the step learns where plans end, as with torch samples;
    one cut at `max_new_tokens` does not."""

    def __init__(self, served: Any, policy: Any, concurrency: int = 4) -> None:
        self.served, self.policy, self.concurrency = served, policy, max(1, concurrency)

    def _one(self, prompt_ids: list[int], params: dict[str, Any]) -> SampledPlan:
        from mia.training.served_react import complete, finished

        tokenizer = self.policy.tokenizer
        new, text, finish = complete(self.served, tokenizer, prompt_ids, **params)
        return SampledPlan(text.strip(), prompt_ids, finished(new, finish, tokenizer))

    def __call__(
        self,
        messages: list[dict[str, str]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        should_stop: ShouldStop | None = None,
        stop: Sequence[str] = (),
    ) -> list[SampledPlan]:
        check_stop(should_stop)
        if not holds(self.served, self.policy):
            log.warning("the served planner does not hold the learner's weights: the learner samples this question")
            return list(
                self.policy.sample(messages, n, max_new_tokens, temperature, should_stop=should_stop, stop=stop)
            )
        prompt_ids = list(self.policy.prompt_ids(messages))  # once a question
        params = {"max_tokens": max_new_tokens, "temperature": temperature, "top_p": 1.0, "stop": list(stop)}
        with ThreadPoolExecutor(max_workers=min(self.concurrency, n), thread_name_prefix="mia-sample") as pool:
            plans = list(pool.map(lambda _: self._one(prompt_ids, params), range(n)))
        check_stop(should_stop)
        return plans


def served_sampling(served: Any) -> bool:
    """Whether the served planner can sample for the learner: a llama.cpp chat model (its adapter
    follows the learner's published versions)."""
    from mia.graph.models.llamacpp import LlamaCppChatModel

    return isinstance(served, LlamaCppChatModel)
