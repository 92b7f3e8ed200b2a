"""A training policy's samples generated on llama.cpp: the GGUF the policy's weights were
de-quantised from, with the policy's LoRA of the moment, token for token in the policy's ids (the
executor stage's episodes; the planner stage's plans, planner_stage.PlannerRollout).

Why: on a 2-core CPU a fp32 torch copy of Qwen2.5-Coder-1.5B generates about 2 tokens/s, and an
executor episode is several turns of up to 96 tokens, four episodes a step; llama.cpp generates the
same model's tokens several times faster, on parallel slots (the online learner samples its plans
the same way: training/online/sampling.py). The loop, its bookkeeping and the env mask stay
`ReactRunner`'s: this only replaces its batched `generate` (`ReactRunner(generate=...)`).

Exactness: the prompt goes in as the policy tokenizer's ids (no template on the server side), and
the new tokens come back as llama.cpp's own ids (the GGUF and the converted folder share one
vocabulary), so GRPO scores the very tokens that were sampled. Sampling is plain temperature
sampling with the budget's top_p (no top-k, min-p or penalties), the distribution TRL's loss
assumes. One seam: llama.cpp leaves a stop string out of the reply, so a turn that stopped at one
gets that closing tag back as the tokenizer writes it (`with_stop_tag`); a turn that ended with the
end token keeps it, one cut at the budget gets nothing.

Fidelity: a row's turn may come with the served executor's grammar (`ReactBudget.grammar`), which
llama.cpp applies as serving does, so the episodes are the turns the served executor can write. The
loss then scores the sampled tokens under the unconstrained policy (as constrained decoding in RL
does); without it the SFT executor, sampled freely, ended its first turn right after `</think>` on
every episode of the first Qwen smoke runs (results/training/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mia.training.react import STOP_STRINGS, TurnBatch

#: the opening tag of each stop string: a reply that stopped at one left that tag unclosed
_OPENERS = {stop: stop.replace("</", "<", 1) for stop in STOP_STRINGS}


def stopped_at(text: str) -> str | None:
    """The stop string a reply that llama.cpp stopped at a stop string (not at the end token)
    stopped at: the closing tag of the last tag it opened and left open; None when none is open."""
    open_at = {stop: text.rfind(opener) for stop, opener in _OPENERS.items()}
    stop, at = max(open_at.items(), key=lambda item: item[1])
    return stop if at >= 0 and stop not in text[at:] else None


def with_stop_tag(text: str, ids: list[int], finish: str, tokenizer: Any) -> list[int]:
    """The reply's token ids as `ReactRunner` keeps them: its stop string tokenised back on when
    llama.cpp stopped at one (the torch loop keeps the tokens that wrote it)."""
    eos = tokenizer.eos_token_id
    if finish != "stop" or (ids and ids[-1] == eos):
        return ids
    stop = stopped_at(text)
    return ids + tokenizer(stop, add_special_tokens=False)["input_ids"] if stop else ids


def closed_turn(ids: list[int], tokenizer: Any) -> list[int]:
    """A grammar-complete turn's ids as the torch loop keeps a turn that stopped at its closing
    tag: without the end-of-generation token llama.cpp adds once the grammar is complete (any of
    the model's, e.g. Qwen's `<|endoftext|>` where its chat turn ends with `<|im_end|>`)."""
    special = set(tokenizer.all_special_ids)
    end = len(ids)
    while end and ids[end - 1] in special:
        end -= 1
    return ids[:end]


def finished(ids: list[int], finish: str, tokenizer: Any) -> list[int]:
    """A free reply's ids as the torch policy ends one: a reply that ended (at its end-of-generation
    token or at a stop string) ends with the tokenizer's end token, whichever one llama.cpp wrote,
    so the step learns where replies end; one cut at the token budget does not."""
    ids = closed_turn(ids, tokenizer)
    eos = tokenizer.eos_token_id
    return [*ids, eos] if finish != "length" and eos is not None else ids


def complete(
    chat: Any,
    tokenizer: Any,
    ids: Sequence[int],
    max_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    stop: Sequence[str] = (),
    grammar: str | None = None,
) -> tuple[list[int], str, str]:
    """One completion of prompt token ids on a llama.cpp chat model's server, sampled plainly
    (temperature and top_p alone; greedy at temperature 0): (new token ids, text, finish reason).
    The ids are llama.cpp's own, read back from its log-probabilities, so a policy whose tokenizer
    shares the GGUF's vocabulary scores the very tokens sampled; the text and the ids leave out a
    stop string it hit (`aligned`)."""
    from mia.graph.models.llamacpp import check_response

    request: dict[str, Any] = {
        "prompt": list(ids),
        "max_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p if temperature > 0 else 1.0,
        "top_k": 0 if temperature > 0 else 1,
        "min_p": 0.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "repeat_penalty": 1.0,
        "stop": list(stop),
        "logprobs": 1,  # the sampled tokens' ids come back with their log-probabilities
        "cache_prompt": True,
    }
    if grammar:
        request["grammar"] = grammar
    choice = check_response(chat.backend.handle_completions(request))["choices"][0]
    new = [int(t["id"]) for t in (choice.get("logprobs") or {}).get("content") or []]
    text = str(choice.get("text") or "")
    return aligned(new, text, tokenizer), text, str(choice.get("finish_reason"))


def aligned(ids: list[int], text: str, tokenizer: Any) -> list[int]:
    """The sampled ids that wrote `text`: llama.cpp cuts a stop string from the text but drops as
    many ids as the stop string has tokens alone, which is too few when the model spelled it in
    pieces (`</tool_call>` written as `</`, `tool`, `_call`, `>` under a grammar left `</tool_call`'s
    ids in). Keeps the longest prefix of `ids` that decodes to a prefix of `text` and tokenises the
    rest, if any (then those few tokens are the tokenizer's, not the sampled ones)."""
    if tokenizer.decode(ids, skip_special_tokens=True) == text:
        return ids
    for end in range(len(ids), -1, -1):
        head = tokenizer.decode(ids[:end], skip_special_tokens=True)
        if text.startswith(head):
            rest = text[len(head) :]
            return ids[:end] + (tokenizer(rest, add_special_tokens=False)["input_ids"] if rest else [])
    return ids


def served_name(spec: str) -> str | None:
    """The embedded model whose GGUF llama.cpp can serve for a training base spec (`local:<name>`,
    `llamacpp:<name>[+adapter]`), or None (an HF folder: no GGUF of the same weights)."""
    from mia.graph.models.spec import parse_model_spec

    text = str(spec).strip()
    if Path(text).expanduser().is_dir():
        return None
    parsed = parse_model_spec(text)
    return parsed.model if parsed.embedded else None


class ServedGeneration:
    """`ReactRunner`'s generate on a llama.cpp server of `name`'s GGUF: one request a row, run on
    the server's parallel slots, stopping at `stop` (the ReAct turn's closing tags by default; none
    for a plan, which ends at the end token as TRL's own generation does). `follow(trainer)` saves
    the policy's LoRA into `adapter_dir` and serves it."""

    def __init__(
        self,
        name: str,
        tokenizer: Any,
        adapter_dir: Path | None = None,
        slots: int = 4,
        n_ctx: int = 8192,
        stop: Sequence[str] = STOP_STRINGS,
    ) -> None:
        from mia.graph.models import load_chat_model
        from mia.graph.models.llamacpp import LlamaCppChatModel

        self.tokenizer, self.adapter_dir, self.slots, self.stop = tokenizer, adapter_dir, max(1, slots), tuple(stop)
        chat = load_chat_model(f"llamacpp:{name}", n_parallel=self.slots, n_ctx=n_ctx)
        if not isinstance(chat, LlamaCppChatModel):  # what `llamacpp:` loads; narrowed for its server
            raise TypeError(f"llamacpp:{name} loaded {type(chat).__name__}, not a llama.cpp chat model")
        self.chat = chat

    def sync(self, adapter_dir: Path | None) -> None:
        """Serve this PEFT adapter folder (converted to a GGUF LoRA inside it), or the base (None)."""
        self.chat.set_adapter(adapter_dir)

    def follow(self, trainer: Any) -> ServedGeneration:
        """Serve a TRL trainer's LoRA as it is now: saved into `adapter_dir`, converted, swapped in
        (before each step's samples, so they come from the policy the step scores)."""
        from mia.training.trainer_setup import save_adapter

        if self.adapter_dir is None:
            raise ValueError("ServedGeneration.follow needs adapter_dir: the folder the policy's LoRA is saved to")
        save_adapter(trainer, self.adapter_dir)
        self.sync(self.adapter_dir)
        return self

    supports_grammar = True  # llama.cpp constrains a request to a GBNF grammar, as serving does

    def _one(self, ids: list[int], grammar: str | None, turns: TurnBatch) -> list[int]:
        # Under a grammar the grammar ends the turn (llama.cpp then allows only an end-of-generation
        # token): a stop string would cut its closing tag mid-way, ids and text alike.
        new, text, finish = complete(
            self.chat,
            self.tokenizer,
            ids,
            turns.max_new_tokens,
            turns.temperature if turns.sample else 0.0,
            turns.top_p,
            stop=() if grammar else self.stop,
            grammar=grammar,
        )
        if grammar:
            return closed_turn(new, self.tokenizer)
        if not self.stop:
            return finished(new, finish, self.tokenizer)
        return with_stop_tag(text, new, finish, self.tokenizer)

    def __call__(self, turns: TurnBatch) -> list[list[int]]:
        rows = turns.rows()
        with ThreadPoolExecutor(max_workers=min(self.slots, len(rows)), thread_name_prefix="mia-react") as pool:
            return list(pool.map(lambda row: self._one(row[0], row[1], turns), rows))


def served_generation(
    section: str,
    base_model: str,
    sample_on: str,
    tokenizer: Any,
    adapter_dir: Path | None = None,
    stop: Sequence[str] = STOP_STRINGS,
) -> ServedGeneration | None:
    """The llama.cpp generation of a stage's samples where its `sample_on` (in config section
    `section`) allows it and the policy's base is an embedded model; None: the torch copy generates.
    "served" on a base without a GGUF is refused in one line."""
    name = served_name(base_model)
    if sample_on == "learner" or (sample_on == "auto" and name is None):
        return None
    if name is None:
        raise ValueError(
            f"{section}.sample_on=served needs an embedded base model (local:<name> or llamacpp:<name>), "
            f"not {base_model!r}: use sample_on: learner"
        )
    return ServedGeneration(name, tokenizer, adapter_dir, stop=stop)
