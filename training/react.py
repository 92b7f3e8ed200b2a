"""A token-level ReAct loop over the sandbox search, for training.

Why not the graph's executor node: GRPO needs the exact token ids the policy produced, with the
tool responses masked out (env_mask 0) so that only the model's own tokens are trained. This loop
speaks the graph's text protocol (`<tool_call>{json}</tool_call>`, `<tool_response>`,
`<answer>`) with the graph's executor prompts, so a policy trained here behaves the same in the
graph. It also serves as the frozen executor of the planner stage when the graph is not used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mia.graph.nodes.search_policy import accepts_grammar, required_searches
from mia.graph.protocol import parse
from mia.graph.protocol.grammar import turn_grammar
from mia.training.config import BudgetConfig
from mia.training.prompts import force_answer_message, observation_message, replan_message
from mia.training.rewards import tool_call_ok

_PLACEHOLDER = "\u2063PLACEHOLDER\u2063"
Replanner = Callable[[int, "Episode"], "str | None"]  # (episode index, episode after its answer) -> revised plan
STOP_STRINGS = ("</tool_call>", "</answer>")
TOOL = "search"  # the one tool of the sandbox


@dataclass(frozen=True)
class TurnBatch:
    """One generation step of several rows (episodes' next turns, or plans): what a `Generate` is
    asked for. `grammars` (one GBNF or None a row) is set only for a generate whose
    `supports_grammar` is true, as serving constrains only the backends that can be."""

    prompts: Sequence[list[int]]
    max_new_tokens: int
    sample: bool = True
    temperature: float = 1.0
    top_p: float = 1.0
    grammars: Sequence[str | None] | None = None

    def rows(self) -> list[tuple[list[int], str | None]]:
        """(prompt ids, grammar or None) of each row."""
        grammars = list(self.grammars) if self.grammars is not None else [None] * len(self.prompts)
        return list(zip(self.prompts, grammars, strict=True))


#: each row's new token ids for a batch: who generates the turns (the torch model by default;
#: llama.cpp in training/served_react.py)
Generate = Callable[[TurnBatch], list[list[int]]]


@dataclass
class Episode:
    """One executor episode: token ids for GRPO, the assistant turns and what happened."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1 = the policy's own token, 0 = tool output
    turns: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    tool_calls: int = 0
    answer: str | None = None
    forced: bool = False
    first_answer: str | None = None  # the answer before a replan (None: no replan happened)
    replan_turn: int | None = None  # index of the first turn after the replan

    @property
    def replanned(self) -> bool:
        return self.replan_turn is not None

    def segments(self) -> list[list[str]]:
        """The turns before and after the replan (the paper scores tool use per segment)."""
        if self.replan_turn is None:
            return [list(self.turns)]
        return [list(self.turns[: self.replan_turn]), list(self.turns[self.replan_turn :])]

    def trace(self) -> str:
        """Readable trace (assistant turns interleaved with tool responses)."""
        parts = []
        for i, turn in enumerate(self.turns):
            parts.append(turn.strip())
            if i < len(self.observations):
                parts.append(f"<tool_response>{self.observations[i]}</tool_response>")
        return "\n".join(parts)


@dataclass
class _Live:
    """An episode in progress inside `ReactRunner.run_many`."""

    history: list[dict[str, str]]
    ids: list[int]
    paragraphs: Sequence[dict[str, str]]
    episode: Episode
    done: bool = False
    index: int = 0


class SandboxSearch:
    """The graph's search tool over one question's own paragraphs (the distractor setting), so
    observations read exactly as at inference; `corpus_from_paragraphs` memoises each index."""

    def __init__(self, top_k: int = 2, max_words: int = 512) -> None:
        self.top_k, self.max_words = top_k, max_words

    def __call__(self, queries: Sequence[str], paragraphs: Sequence[dict[str, str]]) -> str:
        if not paragraphs:
            return "No documents are available for this question."
        from mia.graph.nodes.tools import run_tool
        from mia.graph.tools import SearchTool, corpus_from_paragraphs

        tool = SearchTool(corpus_from_paragraphs(list(paragraphs)), top_k=self.top_k)
        text = run_tool([tool], "search", {"query_list": list(queries)}).text
        words = text.split(" ")
        return text if len(words) <= self.max_words else " ".join(words[: self.max_words]) + " ..."


@dataclass
class ReactBudget:
    """Budgets of one episode (tight on CPU so that an episode takes seconds): a training
    config's `BudgetConfig` (its defaults too) plus the sampling of the executor's turns."""

    max_tool_calls: int = BudgetConfig.max_tool_calls
    max_turn_tokens: int = BudgetConfig.max_turn_tokens
    max_answer_tokens: int = BudgetConfig.max_answer_tokens
    min_tool_calls: int = BudgetConfig.min_tool_calls
    turn_grammar: bool = BudgetConfig.turn_grammar
    temperature: float = 1.0
    top_p: float = 1.0

    @classmethod
    def of(cls, budget: BudgetConfig, **sampling: float) -> ReactBudget:
        """The episode budget a config's `budget:` section sets."""
        return cls(
            max_tool_calls=budget.max_tool_calls,
            max_turn_tokens=budget.max_turn_tokens,
            max_answer_tokens=budget.max_answer_tokens,
            min_tool_calls=budget.min_tool_calls,
            turn_grammar=budget.turn_grammar,
            **sampling,
        )

    def grammar(self, tool_calls: int, forced: bool) -> str:
        """The served executor's grammar for a turn after `tool_calls` calls: a forced last turn is
        an answer alone (serving prefills `<answer>`); otherwise a call, or an answer once the
        required searches are made."""
        if forced:
            return turn_grammar((TOOL,), call=False, answer=True, think=False)
        needed = required_searches(self.min_tool_calls, self.max_tool_calls, 1)
        return turn_grammar((TOOL,), call=True, answer=tool_calls >= needed)


class ReactRunner:
    """Runs the text ReAct protocol with a transformers model, keeping token-level bookkeeping."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        search: SandboxSearch | None = None,
        budget: ReactBudget | None = None,
        generate: Generate | None = None,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.search = search or SandboxSearch()
        self.budget = budget or ReactBudget()
        self.generate: Generate = generate or self._generate  # default: the torch model's batched generate
        self._suffix_cache: dict[str, tuple[str, str]] = {}

    # ------------------------------------------------------------------ chat-template glue
    def _render(self, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)

    def _env_text(self, messages: list[dict[str, str]], user_message: dict[str, str], ended_with_eos: bool) -> str:
        """The template text between the end of the assistant's turn and the next generation:
        found by rendering with a placeholder turn, so it works for any chat template."""
        probe = messages + [{"role": "assistant", "content": _PLACEHOLDER}]
        before = self._render(probe, add_generation_prompt=False)
        after = self._render(probe + [user_message], add_generation_prompt=True)
        closing = before.split(_PLACEHOLDER, 1)[1]
        suffix = after[len(before) :] if after.startswith(before) else after.split(_PLACEHOLDER, 1)[1][len(closing) :]
        eos = self.tokenizer.eos_token or ""
        if ended_with_eos and eos and closing.startswith(eos):
            closing = closing[len(eos) :]
        return closing + suffix

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    # ------------------------------------------------------------------ generation
    def _generate(self, turns: TurnBatch) -> list[list[int]]:
        """New token ids for each prompt of the batch, in one `generate` call (left-padded).

        Why a batch: GRPO's n rollouts of a question share one call per turn instead of n, which
        saves generate's per-step overhead (4 rollouts of SmolLM2-135M on one CPU thread: 1.4x
        faster than one by one). A finished row is filled with the pad token (which may be the
        end token): each row is cut at its first pad/end token, keeping an end token only when
        the model produced it (not after a stop string, where generation stopped by itself)."""
        import torch

        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        batch = turns.prompts
        width = max(len(ids) for ids in batch)
        input_ids = torch.tensor([[pad] * (width - len(ids)) + list(ids) for ids in batch], device=device)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": turns.max_new_tokens,
            "stop_strings": list(STOP_STRINGS),
            "tokenizer": self.tokenizer,
            "pad_token_id": pad,
            "do_sample": turns.sample,
        }
        if turns.sample:
            kwargs.update(temperature=turns.temperature, top_p=turns.top_p)
        with torch.no_grad():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
        return [self._cut(row, pad) for row in out[:, width:].tolist()]

    def _cut(self, row: list[int], pad: int) -> list[int]:
        eos = self.tokenizer.eos_token_id
        for i, tok in enumerate(row):
            if tok == eos and tok != pad:
                return row[: i + 1]
            if tok == pad:
                text = self.tokenizer.decode(row[:i], skip_special_tokens=True).rstrip()
                ended_by_model = tok == eos and not text.endswith(STOP_STRINGS)
                return row[: i + 1] if ended_by_model else row[:i]
        return row

    def run(self, messages: list[dict[str, str]], paragraphs: Sequence[dict[str, str]], sample: bool = True) -> Episode:
        """Play one episode (see `run_many`)."""
        return self.run_many([messages], [paragraphs], sample=sample)[0]

    def run_many(
        self,
        messages: Sequence[list[dict[str, str]]],
        paragraphs: Sequence[Sequence[dict[str, str]]],
        sample: bool = True,
        replan: Replanner | None = None,
    ) -> list[Episode]:
        """Play several episodes in lockstep, one batched generation per turn: generate, call
        search on each valid tool call, stop at an answer or when the budget is spent (then one
        forced answer turn). Episodes that need the same token budget share a batch.

        `replan(i, episode)` is asked once per episode when it first answers; a text it returns
        is given to the executor as a revised plan (a user turn, masked out) and the episode goes
        on, as the paper's executor training does after a wrong first answer."""
        live = []
        for index, (msgs, paras) in enumerate(zip(messages, paragraphs, strict=True)):
            history = list(msgs)
            ids = self._encode(self._render(history, add_generation_prompt=True))
            live.append(_Live(history, list(ids), paras, Episode(prompt_ids=list(ids)), index=index))
        active = list(range(len(live)))
        budget = self.budget
        while active:
            for forced in (False, True):
                group = [i for i in active if (live[i].episode.tool_calls >= budget.max_tool_calls) == forced]
                if not group:
                    continue
                tokens = budget.max_answer_tokens if forced else budget.max_turn_tokens
                grammars = (
                    [budget.grammar(live[i].episode.tool_calls, forced) for i in group]
                    if budget.turn_grammar and accepts_grammar(self.generate)
                    else None
                )
                turns = TurnBatch(
                    [live[i].ids for i in group], tokens, sample, budget.temperature, budget.top_p, grammars
                )
                made = self.generate(turns)
                for i, new in zip(group, made, strict=True):
                    live[i].done = self._advance(live[i], new, forced, replan)
            active = [i for i in active if not live[i].done]
        return [item.episode for item in live]

    def _advance(self, item: _Live, new: list[int], forced: bool, replan: Replanner | None = None) -> bool:
        """Record one generated turn; answer (True) or append the tool response for the next turn."""
        ep, budget = item.episode, self.budget
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        ep.completion_ids += new
        ep.env_mask += [1] * len(new)
        item.ids += new
        ep.turns.append(text)
        item.history.append({"role": "assistant", "content": text})
        turn = parse(text, strict=True)  # the graph's protocol, read as the format reward reads it
        answer = turn.answer if turn.kind == "answer" else None
        call = turn.call
        ended = bool(new) and new[-1] == self.tokenizer.eos_token_id
        if answer is not None or forced:
            ep.answer = answer if answer is not None else (text.strip() or None)
            ep.forced = forced and answer is None
            revised = replan(item.index, ep) if replan is not None and not ep.replanned else None
            if not revised:
                return True
            ep.first_answer, ep.answer, ep.forced, ep.replan_turn = ep.answer, None, False, len(ep.turns)
            self._append_env(item, replan_message(revised), ended)
            return False
        if call is not None:
            ep.tool_calls += 1
            if call.arguments is not None and tool_call_ok(call):
                observation = self.search(call.arguments["query_list"], item.paragraphs)
            else:
                observation = f"Error: malformed tool call ({call.error or 'expected search with query_list'})."
            ep.observations.append(observation)
            user = observation_message(observation)
        else:
            # Neither a tool call nor an answer: the turn breaks the protocol; ask for an answer.
            ep.tool_calls = budget.max_tool_calls
            user = force_answer_message()
        if ep.tool_calls >= budget.max_tool_calls and call is not None:
            user = {"role": "user", "content": user["content"] + "\n\n" + force_answer_message()["content"]}
        self._append_env(item, user, ended)
        return False

    def _append_env(self, item: _Live, user: dict[str, str], ended: bool) -> None:
        """Append a user turn (tool response, revised plan) as masked-out tokens."""
        env = self._encode(self._env_text(item.history[:-1], user, ended))
        item.episode.completion_ids += env
        item.episode.env_mask += [0] * len(env)
        item.ids += env
        item.history.append(user)
