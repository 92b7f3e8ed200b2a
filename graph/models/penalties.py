"""Anti-repetition for the in-process backends (small models loop: "1. 1. 2. 2. ..." or one line
over and over).

Two knobs, both over the *generated* tokens only, so that copying names from the prompt into a
query is never penalised:
- `presence_penalty` (OpenAI/vLLM semantics, the paper's executor uses 1.1): subtract it from the
  logit of every token already generated;
- `no_repeat_ngram_size` n: a token that would repeat an n-gram already generated is banned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Defaults of the local backends (LocalChatModel, LlamaCppChatModel); measured in docs/graph.md.
LOCAL_PRESENCE_PENALTY = 1.1
LOCAL_NO_REPEAT_NGRAM = 4


def banned_next_tokens(generated: Sequence[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram already present in `generated`."""
    if n <= 0 or len(generated) < n:
        return set()
    if n == 1:
        return set(generated)
    prefix = tuple(generated[len(generated) - n + 1 :])
    return {generated[i + n - 1] for i in range(len(generated) - n + 1) if tuple(generated[i : i + n - 1]) == prefix}


def penalise(scores: Any, generated: Sequence[int], presence: float, no_repeat_ngram: int) -> Any:
    """Apply both penalties in place to one row of logits (a numpy array or a torch tensor)."""
    if presence and generated:
        scores[sorted(set(generated))] -= presence
    banned = banned_next_tokens(generated, no_repeat_ngram)
    if banned:
        scores[sorted(banned)] = float("-inf")
    return scores


def hf_logits_processor(n_prompt: int, presence: float, no_repeat_ngram: int) -> Any:
    """A transformers LogitsProcessor applying `penalise` to the tokens after the prompt."""
    from transformers import LogitsProcessor

    class _GeneratedOnly(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            for row in range(input_ids.shape[0]):
                penalise(scores[row], input_ids[row, n_prompt:].tolist(), presence, no_repeat_ngram)
            return scores

    return _GeneratedOnly()
