"""The executor stage's turns generated on llama.cpp (training/served_react.py): the stop string a
turn stopped at comes back as the torch loop keeps it, a base without a GGUF is not served, and on
the real SmolLM2 an episode played through llama.cpp has the bookkeeping of one played in torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from mia.training.served_react import served_name, stopped_at, with_stop_tag


class Tokenizer:
    eos_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [100 + len(text)]}


@pytest.mark.parametrize(
    ("text", "stop"),
    [
        ('<think>x</think>\n<tool_call>{"name": "search"}', "</tool_call>"),
        ("<think>x</think>\n<answer>Paris", "</answer>"),
        ("<answer>Paris</answer> and <tool_call>{}", "</tool_call>"),  # the last tag left open
        ("<answer>Paris</answer>", None),  # closed: it ended with the end token, not a stop string
        ("no tags at all", None),
    ],
)
def test_the_stop_string_is_the_open_tags_closing_tag(text: str, stop: str | None) -> None:
    assert stopped_at(text) == stop


def test_a_reply_keeps_its_tokens_as_the_torch_loop_does() -> None:
    tok = Tokenizer()
    # stopped at </answer>: llama.cpp left it out, the torch loop keeps the tokens that wrote it
    assert with_stop_tag("<answer>Paris", [5, 6], "stop", tok) == [5, 6, 100 + len("</answer>")]
    assert with_stop_tag("<answer>Paris</answer>", [5, 6, 0], "stop", tok) == [5, 6, 0]  # the end token
    assert with_stop_tag("<answer>Par", [5, 6], "length", tok) == [5, 6]  # cut at the budget


def test_the_ids_are_those_that_wrote_the_text() -> None:
    """llama.cpp cuts a stop string from the text but may leave some of its ids in (it drops as
    many as the string has tokens alone): the ids are cut back to the text's."""
    from mia.training.served_react import aligned

    class Words:
        def decode(self, ids, skip_special_tokens=False):
            return "".join({1: "<answer>", 2: "Paris", 3: "</", 4: "answer", 0: ""}[i] for i in ids)

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [9] * len(text)}

    assert aligned([1, 2, 3, 4], "<answer>Paris", Words()) == [1, 2]  # "</answer>" spelled in pieces
    assert aligned([1, 2, 0], "<answer>Paris", Words()) == [1, 2, 0]  # the end token: decodes to nothing
    assert aligned([1], "<answer>Pa", Words()) == [1, 9, 9]  # text beyond the ids: tokenised


def test_a_grammar_complete_turn_drops_the_end_token_llamacpp_added() -> None:
    from mia.training.served_react import closed_turn

    class Special(Tokenizer):
        all_special_ids = [0, 1]  # e.g. Qwen's <|im_end|> and <|endoftext|>

    assert closed_turn([5, 6, 1], Special()) == [5, 6]  # not the chat turn's end token: dropped
    assert closed_turn([5, 6, 0], Special()) == [5, 6]  # kept by no torch turn that closed its tag
    assert closed_turn([5, 6], Special()) == [5, 6]  # cut at the budget


def test_only_an_embedded_base_is_served(tmp_path: Path) -> None:
    assert served_name("local:smollm2") == "smollm2"
    assert served_name("llamacpp:qwen-coder-1.5b+results/training/executor-sft-qwen/adapter") == "qwen-coder-1.5b"
    assert served_name(str(tmp_path)) is None  # an HF folder: no GGUF of the same weights


def test_served_on_a_base_without_a_gguf_is_refused_in_one_line(tmp_path: Path) -> None:
    from mia.training.config import TrainConfig
    from mia.training.served_react import served_generation

    with pytest.raises(ValueError, match="executor.sample_on=served needs an embedded base model"):
        served_generation("executor", str(tmp_path), "served", None)
    assert served_generation("planner", str(tmp_path), "auto", None) is None
    assert served_generation("planner", "local:smollm2", "learner", None) is None
    for section in ("executor", "planner"):
        with pytest.raises(ValueError, match="sample_on"):
            TrainConfig.from_dict({section: {"sample_on": "gpu"}})


class ScriptedGenerate:
    """A generate that replays turns and records the grammars it was handed."""

    def __init__(self, tokenizer, turns: list[str], supports_grammar: bool) -> None:
        self.tokenizer, self.turns, self.supports_grammar = tokenizer, list(turns), supports_grammar
        self.grammars: list[str | None] = []

    def __call__(self, turns):
        assert turns.grammars is None or self.supports_grammar  # only a generate that can constrain is handed one
        self.grammars += [grammar for _, grammar in turns.rows()]
        return [self.tokenizer(self.turns.pop(0), add_special_tokens=False)["input_ids"] for _ in turns.prompts]


@pytest.mark.parametrize(("supports_grammar", "turn_grammar"), [(True, True), (False, True), (True, False)])
def test_each_turn_gets_the_served_executors_grammar(supports_grammar: bool, turn_grammar: bool) -> None:
    """A call only before the required search, a call or an answer after it, an answer alone (no
    thought: serving prefills it) once the budget is spent; nothing for a generate that cannot
    constrain (the torch loop), as serving constrains only backends that can, or with the config's
    `turn_grammar` off."""
    from transformers import AutoTokenizer

    from mia.graph.protocol.grammar import turn_grammar
    from mia.training.policy import resolve_weights
    from mia.training.prompts import executor_messages
    from mia.training.react import ReactBudget, ReactRunner, SandboxSearch

    tokenizer = AutoTokenizer.from_pretrained(resolve_weights("local:smollm2")[0])
    call = '<tool_call>{"name": "search", "arguments": {"query_list": ["capital of France"]}}</tool_call>'
    generate = ScriptedGenerate(tokenizer, [call, call, "<answer>Paris</answer>"], supports_grammar)
    budget = ReactBudget(max_tool_calls=2, min_tool_calls=1, turn_grammar=turn_grammar)
    runner = ReactRunner(None, tokenizer, SandboxSearch(top_k=1), budget, generate=generate)
    paragraphs = [{"title": "France", "text": "Paris is the capital of France."}]
    episode = runner.run(executor_messages("What is the capital of France?", ""), paragraphs)
    assert episode.tool_calls == 2 and episode.answer == "Paris" and not episode.forced
    if not (supports_grammar and turn_grammar):
        assert generate.grammars == [None, None, None]
        return
    assert generate.grammars == [
        turn_grammar(["search"], answer=False),
        turn_grammar(["search"]),
        turn_grammar(["search"], call=False, think=False),
    ]


@pytest.mark.real_model
def test_an_episode_played_on_llamacpp_is_bookkept_as_in_torch(data_dir: Path, tmp_path: Path) -> None:
    """Greedy, the same prompt: llama.cpp's turns come back in the policy's token ids, each turn's
    ids decode to its text, the tool responses are masked out; under the served grammar the first
    turn is a search and the forced one an answer; and a saved LoRA is served once synced."""
    from mia.training.policy import load_model, load_tokenizer, resolve_weights
    from mia.training.prompts import executor_messages
    from mia.training.react import ReactBudget, ReactRunner, SandboxSearch
    from mia.training.served_react import ServedGeneration

    base, _ = resolve_weights("local:smollm2")
    tokenizer = load_tokenizer(base)
    served = ServedGeneration("smollm2", tokenizer, slots=2)
    budget = ReactBudget(max_tool_calls=1, max_turn_tokens=24, max_answer_tokens=8)
    paragraphs = [{"title": "France", "text": "Paris is the capital of France."}]
    messages = executor_messages("What is the capital of France?", '1. Search "capital of France"')
    runner = ReactRunner(None, tokenizer, SandboxSearch(top_k=1), budget, generate=served)
    episodes = runner.run_many([messages, messages], [paragraphs, paragraphs], sample=False)
    for episode in episodes:
        assert episode.turns and episode.answer is not None  # the budget forces an answer at the latest
        assert len(episode.completion_ids) == len(episode.env_mask)
        own = [t for t, keep in zip(episode.completion_ids, episode.env_mask, strict=True) if keep]
        text = tokenizer.decode(own, skip_special_tokens=True)
        assert all(turn.strip() in text for turn in episode.turns)
        assert 0 in episode.env_mask or episode.tool_calls == 0  # a tool response is never the policy's
    # (Not compared slot to slot: two parallel slots are evaluated in one batch, which changes the
    # last bits of the logits, and a greedy reply may differ; seen on an AVX-512 CPU.)
    grammar = ReactBudget(max_tool_calls=1, max_turn_tokens=96, max_answer_tokens=24)
    constrained = ReactRunner(None, tokenizer, SandboxSearch(top_k=1), grammar, generate=served)
    episode = constrained.run(messages, paragraphs, sample=False)
    from mia.graph.protocol import parse

    kinds = [parse(turn, strict=True).kind for turn in episode.turns]
    assert kinds[0] == "tool_call" and episode.tool_calls == 1, episode.turns  # only a call is allowed first
    assert kinds[-1] == "answer" and episode.answer, episode.turns  # the forced answer, an answer by grammar
    own = [t for t, keep in zip(episode.completion_ids, episode.env_mask, strict=True) if keep]
    assert not set(own) & set(tokenizer.all_special_ids)  # no end token llama.cpp added is trained

    model = load_model(base, None)
    from peft import LoraConfig, get_peft_model

    peft = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    peft.save_pretrained(str(tmp_path / "lora"))
    served.sync(tmp_path / "lora")
    assert Path(served.chat.adapter_path or "").parent == (tmp_path / "lora").resolve()
    again = ReactRunner(None, tokenizer, SandboxSearch(top_k=1), budget, generate=served)
    assert again.run(messages, paragraphs, sample=False).turns  # a fresh LoRA (B = 0): still the base's reply


@pytest.mark.real_model
@pytest.mark.parametrize("spec", ["llamacpp:smollm2", "local:smollm2"])
def test_the_frozen_planner_plans_on_either_backend(data_dir: Path, spec: str) -> None:
    """A `llamacpp:` frozen planner runs as the graph serves it; `local:` in torch. (Not compared
    call to call: llama.cpp's prompt cache changes the batch a prompt is evaluated in, and with it
    the last bits of the logits, so a greedy reply may differ once cached.)"""
    from mia.training.config import TrainConfig
    from mia.training.executor_stage import FrozenPlanner
    from mia.training.prompts import planner_messages

    planner = FrozenPlanner(spec, TrainConfig.from_dict({"dtype": "float32"}))
    messages = planner_messages("Where was the director of film The Duel born?", "", 20)
    first = planner.reply(messages, 16)
    assert first.strip() and "</think>" not in first
    assert planner("Where was the director of film The Duel born?", first, "<answer>Paris</answer>")
